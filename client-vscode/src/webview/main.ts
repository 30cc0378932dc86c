/**
 * The side panel's script: wires the DOM to the host (postMessage) and to the pure reducer
 * in state.ts, and renders the view state. Rendering is keyed: a turn or item whose object
 * did not change is left alone, so open cards, selections and scroll survive streaming.
 */

import type { HostMessage, WebviewMessage } from "../messages";
import type { Session } from "../protocol";
import { renderMarkdown } from "./markdown";
import {
  type Action,
  type Item,
  type Turn,
  type ViewState,
  initialState,
  isRunning,
  reduce,
  sessionUsage,
  summarizeArgs,
} from "./state";

declare function acquireVsCodeApi(): { postMessage(message: WebviewMessage): void };

const vscode = acquireVsCodeApi();
const post = (message: WebviewMessage): void => vscode.postMessage(message);

let state: ViewState = initialState();
let renderScheduled = false;
let sessionsOpen = false;

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const conversation = $<HTMLElement>("conversation");
const promptBox = $<HTMLTextAreaElement>("prompt");
const sendButton = $<HTMLButtonElement>("send");
const stopButton = $<HTMLButtonElement>("stop");
const sessionsPanel = $<HTMLElement>("sessions");
const sessionsButton = $<HTMLButtonElement>("toggle-sessions");
const bannerBox = $<HTMLElement>("banner");

function dispatch(action: Action): void {
  state = reduce(state, action);
  scheduleRender();
}

function scheduleRender(): void {
  if (renderScheduled) return;
  renderScheduled = true;
  requestAnimationFrame(() => {
    renderScheduled = false;
    render();
  });
}

// ------------------------------------------------------------------ input

function send(): void {
  const prompt = promptBox.value.trim();
  if (!prompt || isRunning(state)) return;
  promptBox.value = "";
  post({ type: "send", prompt });
}

function stop(): void {
  if (!isRunning(state)) return;
  post({ type: "stop" });
}

promptBox.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  }
});
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && isRunning(state)) {
    e.preventDefault();
    stop();
  }
});
$<HTMLFormElement>("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  send();
});
stopButton.addEventListener("click", stop);
$<HTMLButtonElement>("new-session").addEventListener("click", () => post({ type: "new_session" }));
sessionsButton.addEventListener("click", () => setSessionsOpen(!sessionsOpen));

function setSessionsOpen(open: boolean): void {
  sessionsOpen = open;
  if (open) post({ type: "list_sessions" });
  scheduleRender();
}

window.addEventListener("message", (e: MessageEvent<HostMessage>) => {
  const message = e.data;
  switch (message.type) {
    case "action":
      if (message.action.type === "session_loaded" || message.action.type === "session_cleared") {
        sessionsOpen = false;
      }
      dispatch(message.action);
      break;
    case "focus_prompt":
      if (message.text !== undefined) promptBox.value = message.text;
      promptBox.focus();
      break;
    case "show_sessions":
      setSessionsOpen(true);
      break;
  }
});

// ------------------------------------------------------------------ render

function render(): void {
  const running = isRunning(state);
  const stickToBottom = conversation.scrollHeight - conversation.scrollTop - conversation.clientHeight < 40;

  document.body.dataset.running = String(running);
  document.body.dataset.server = state.server;
  $<HTMLElement>("title").textContent = state.title || (state.sessionId ? "Session" : "New session");
  $<HTMLElement>("title").title = state.sessionId ?? "";
  sendButton.disabled = running || state.server !== "running";
  stopButton.hidden = !running;
  sendButton.hidden = running;
  renderBanner();
  renderSessions();
  renderConversation();
  renderFooter();
  if (stickToBottom) conversation.scrollTop = conversation.scrollHeight;
}

function renderBanner(): void {
  const banner = state.banner;
  bannerBox.hidden = !banner;
  bannerBox.replaceChildren();
  if (!banner) return;
  bannerBox.className = `banner banner-${banner.kind}`;
  bannerBox.append(el("span", "banner-text", banner.message));
  if (banner.action) {
    const labels = { openSettings: "Open Settings", showLogs: "Show Logs", restart: "Restart Server" } as const;
    const action = banner.action;
    const button = el("button", "link-button", labels[action]);
    button.addEventListener("click", () => post({ type: "banner_action", action }));
    bannerBox.append(button);
  }
}

function renderSessions(): void {
  sessionsButton.setAttribute("aria-expanded", String(sessionsOpen));
  sessionsPanel.hidden = !sessionsOpen;
  if (!sessionsOpen) return;
  const list = el("ul", "session-list");
  list.setAttribute("aria-label", "Sessions");
  if (!state.sessionsLoaded) {
    list.append(el("li", "session-empty", "Loading sessions…"));
  } else if (state.sessions.length === 0) {
    list.append(el("li", "session-empty", "No sessions yet."));
  }
  for (const session of state.sessions) list.append(sessionRow(session));
  sessionsPanel.replaceChildren(list);
}

function sessionRow(session: Session): HTMLElement {
  const row = el("li", "session-row");
  row.dataset.sessionId = session.sessionId;
  if (session.sessionId === state.sessionId) row.classList.add("current");
  const info = el("div", "session-info");
  info.append(el("span", "session-title", session.title || "(untitled)"));
  const when = session.modifiedAt ? new Date(session.modifiedAt).toLocaleString() : "";
  info.append(el("span", "session-meta", `${when} · ${session.messageCount} messages`));
  const resume = el("button", "session-resume", "Resume");
  resume.setAttribute("aria-label", `Resume session ${session.title || session.sessionId}`);
  resume.disabled = isRunning(state);
  resume.addEventListener("click", () => post({ type: "resume", sessionId: session.sessionId }));
  const del = el("button", "session-delete secondary", "Delete");
  del.setAttribute("aria-label", `Delete session ${session.title || session.sessionId}`);
  del.disabled = isRunning(state) && session.sessionId === state.sessionId;
  del.addEventListener("click", () => post({ type: "delete", sessionId: session.sessionId }));
  row.append(info, resume, del);
  return row;
}

const turnViews = new Map<string, { turn: Turn; el: HTMLElement }>();
const itemViews = new Map<string, { item: Item; el: HTMLElement }>();

function renderConversation(): void {
  if (state.turns.length === 0) {
    turnViews.clear();
    itemViews.clear();
    const empty = el("div", "empty", "Ask TunaCode to read, change or explain code in this workspace.");
    conversation.replaceChildren(empty);
    return;
  }
  const keep = new Set<string>();
  const elements: HTMLElement[] = [];
  for (const turn of state.turns) {
    keep.add(turn.key);
    let view = turnViews.get(turn.key);
    if (!view) {
      view = { turn, el: createTurn(turn) };
      updateTurn(view.el, turn);
      turnViews.set(turn.key, view);
    } else if (view.turn !== turn) {
      view.turn = turn;
      updateTurn(view.el, turn);
    }
    elements.push(view.el);
  }
  for (const key of [...turnViews.keys()]) if (!keep.has(key)) turnViews.delete(key);
  const current = Array.from(conversation.children);
  if (current.length !== elements.length || current.some((c, i) => c !== elements[i])) {
    conversation.replaceChildren(...elements);
  }
}

function createTurn(turn: Turn): HTMLElement {
  const article = el("article", "turn");
  article.dataset.turnKey = turn.key;
  const prompt = el("div", "user-prompt");
  prompt.append(el("div", "user-prompt-text", turn.prompt));
  article.append(prompt, el("div", "turn-items"), el("div", "turn-status"));
  return article;
}

const STATUS_TEXT: Record<Turn["status"], string> = {
  sending: "Sending…",
  running: "Working…",
  stopping: "Stopping…",
  end_turn: "",
  cancelled: "Stopped: cancelled",
  max_turns: "Stopped: turn limit reached",
  timeout: "Stopped: timed out",
  error: "Failed",
  failed: "Could not start",
};

function updateTurn(article: HTMLElement, turn: Turn): void {
  article.dataset.status = turn.status;
  if (turn.requestId) article.dataset.requestId = turn.requestId;
  if (turn.replayed) article.dataset.replayed = "true";
  const promptText = article.querySelector(".user-prompt-text") as HTMLElement;
  if (promptText.textContent !== turn.prompt) promptText.textContent = turn.prompt;

  const itemsBox = article.querySelector(".turn-items") as HTMLElement;
  const elements = turn.items.map((item) => itemElement(item));
  const current = Array.from(itemsBox.children);
  if (current.length !== elements.length || current.some((c, i) => c !== elements[i])) {
    itemsBox.replaceChildren(...elements);
  }

  const status = article.querySelector(".turn-status") as HTMLElement;
  status.replaceChildren();
  status.className = `turn-status status-${turn.status}`;
  const text = STATUS_TEXT[turn.status];
  if (text) status.append(el("span", "turn-status-text", text));
  if (turn.missedEvents > 0) status.append(el("span", "turn-gap", ` (${turn.missedEvents} updates missed; the final answer is shown)`));
  if (turn.error) {
    const box = el("div", "turn-error");
    box.setAttribute("role", "alert");
    box.append(el("div", "turn-error-message", turn.error.message));
    if (turn.error.hint) box.append(el("div", "turn-error-hint", turn.error.hint));
    status.append(box);
  }
}

function itemElement(item: Item): HTMLElement {
  const view = itemViews.get(item.key);
  if (view && view.item === item) return view.el;
  const node = view ? view.el : createItem(item);
  updateItem(node, item);
  itemViews.set(item.key, { item, el: node });
  return node;
}

function createItem(item: Item): HTMLElement {
  switch (item.kind) {
    case "text":
      return el("div", "answer markdown");
    case "thinking": {
      const details = el("details", "thinking");
      details.append(el("summary", "thinking-summary", "Thinking"), el("div", "thinking-text"));
      return details;
    }
    case "tool": {
      const details = el("details", "tool-card");
      const summary = el("summary", "tool-summary");
      summary.append(
        el("span", "tool-icon"),
        el("span", "tool-name"),
        el("span", "tool-args"),
        el("span", "tool-state"),
        el("span", "tool-duration"),
      );
      details.append(summary, el("pre", "tool-result"));
      return details;
    }
    case "notice":
      return el("div", "notice");
  }
}

const TOOL_STATE_TEXT = {
  pending: "pending",
  awaiting_approval: "waiting for approval",
  in_progress: "running",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
} as const;

function updateItem(node: HTMLElement, item: Item): void {
  switch (item.kind) {
    case "text":
      node.innerHTML = renderMarkdown(item.text);
      addCopyButtons(node);
      break;
    case "thinking":
      (node.querySelector(".thinking-text") as HTMLElement).textContent = item.text;
      break;
    case "tool": {
      node.dataset.status = item.status;
      node.dataset.tool = item.name;
      node.dataset.toolCallId = item.toolCallId;
      const set = (cls: string, text: string): void => {
        (node.querySelector(`.${cls}`) as HTMLElement).textContent = text;
      };
      set("tool-name", item.name);
      set("tool-args", summarizeArgs(item.name, item.args));
      set("tool-state", TOOL_STATE_TEXT[item.status]);
      set("tool-duration", item.durationMs !== undefined ? formatDuration(item.durationMs) : "");
      (node.querySelector(".tool-args") as HTMLElement).title = JSON.stringify(item.args, null, 2);
      const result = node.querySelector(".tool-result") as HTMLElement;
      result.textContent = item.result ?? (item.status === "pending" || item.status === "in_progress" ? "Running…" : "(no output)");
      break;
    }
    case "notice":
      node.textContent = item.message;
      break;
  }
}

function addCopyButtons(container: HTMLElement): void {
  for (const pre of Array.from(container.querySelectorAll("pre"))) {
    const code = pre.querySelector("code");
    const button = el("button", "copy-code secondary", "Copy");
    button.type = "button";
    button.setAttribute("aria-label", "Copy code");
    button.addEventListener("click", () => {
      post({ type: "copy", text: (code ?? pre).textContent ?? "" });
      button.textContent = "Copied";
      setTimeout(() => (button.textContent = "Copy"), 1500);
    });
    const wrapper = el("div", "code-block");
    pre.replaceWith(wrapper);
    wrapper.append(button, pre);
  }
}

const SERVER_STATE_TEXT = { starting: "Starting server…", running: "", stopped: "Server stopped", failed: "Server not running" } as const;

function renderFooter(): void {
  const serverState = $<HTMLElement>("server-state");
  serverState.textContent = SERVER_STATE_TEXT[state.server];
  serverState.hidden = state.server === "running";
  $<HTMLElement>("model").textContent = state.model ? state.model : "model: server default";
  const usage = sessionUsage(state);
  const parts = [`${formatTokens(usage.totalTokens || usage.inputTokens + usage.outputTokens)} tokens`];
  parts.push(`$${usage.cost.toFixed(usage.cost > 0 && usage.cost < 0.01 ? 4 : 2)}`);
  $<HTMLElement>("usage").textContent = parts.join(" · ");
}

// ------------------------------------------------------------------ helpers

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} m ${Math.round((ms % 60_000) / 1000)} s`;
}

function formatTokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)}k`;
  return `${(n / 1_000_000).toFixed(2)}M`;
}

render();
post({ type: "ready" });
