/**
 * The side panel's script: wires the DOM to the host (postMessage) and to the pure reducer
 * in state.ts, and renders the view state. Rendering is keyed: a turn or item whose object
 * did not change is left alone, so open cards, selections and scroll survive streaming.
 */

import type { HostMessage, WebviewMessage } from "../messages";
import type { Session } from "../protocol";
import { renderMarkdown } from "./markdown";
import { filterSessions, relativeTime } from "./sessionList";
import { completeMention, mentionAt } from "./mentions";
import { diffForPerson, diffIn, isHiddenTool, resultForPerson, toolRowText } from "./toolView";
import { completeSlash, type SlashCommand, slashCompletions, slashLabel } from "./slash";
import {
  type Action,
  type Item,
  type ToolItem,
  type Turn,
  type ViewState,
  errorButtons,
  fileLink,
  initialState,
  isBufferOnly,
  isDenied,
  mcpSummary,
  isRunning,
  pendingApprovals,
  plural,
  reduce,
  sessionUsage,
  toolFilePath,
} from "./state";
import type { ApprovalDecision } from "../protocol";
import { IMAGE_TYPES, MAX_IMAGE_BYTES, parseUriList } from "../context";
import { hunkSummaries } from "../diff";

declare function acquireVsCodeApi(): {
  postMessage(message: WebviewMessage): void;
  getState(): unknown;
  setState(state: unknown): void;
};

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
const modeSelect = $<HTMLSelectElement>("mode");
const slashList = $<HTMLUListElement>("slash");

// ------------------------------------------------------------------ `/` completion

let slashCommands: SlashCommand[] = [];
let slashShown: SlashCommand[] = [];
let slashIndex = 0;

function renderSlash(): void {
  slashShown = slashCompletions(promptBox.value, slashCommands);
  slashIndex = Math.min(slashIndex, Math.max(slashShown.length - 1, 0));
  slashList.replaceChildren(
    ...slashShown.map((command, i) => {
      const item = el("li", i === slashIndex ? "slash-item selected" : "slash-item", slashLabel(command));
      item.setAttribute("role", "option");
      item.setAttribute("aria-selected", String(i === slashIndex));
      item.addEventListener("mousedown", (e) => {
        e.preventDefault();
        acceptSlash(i);
      });
      return item;
    }),
  );
  slashList.hidden = slashShown.length === 0;
}

function acceptSlash(index: number): void {
  const command = slashShown[index];
  if (!command) return;
  promptBox.value = completeSlash(command);
  const end = promptBox.value.length;
  promptBox.setSelectionRange(end, end);
  slashIndex = 0;
  renderSlash();
  promptBox.focus();
}

promptBox.addEventListener("input", () => {
  slashIndex = 0;
  renderSlash();
  askMentions();
});

// ------------------------------------------------------------------ `@` file completion

const mentionList = $<HTMLUListElement>("mentions");
let mentionShown: string[] = [];
let mentionIndex = 0;

/** Asks the host for the files matching the `@partial` at the cursor (or closes the list). */
function askMentions(): void {
  const at = mentionAt(promptBox.value, promptBox.selectionStart);
  if (!at) return showMentions([]);
  post({ type: "complete_files", query: at.query });
}

function showMentions(paths: string[]): void {
  mentionShown = paths;
  mentionIndex = Math.min(mentionIndex, Math.max(paths.length - 1, 0));
  mentionList.replaceChildren(
    ...paths.map((p, i) => {
      const item = el("li", i === mentionIndex ? "slash-item selected" : "slash-item", p);
      item.setAttribute("role", "option");
      item.setAttribute("aria-selected", String(i === mentionIndex));
      item.addEventListener("mousedown", (e) => {
        e.preventDefault();
        acceptMention(i);
      });
      return item;
    }),
  );
  mentionList.hidden = paths.length === 0;
}

function acceptMention(index: number): void {
  const path = mentionShown[index];
  const at = mentionAt(promptBox.value, promptBox.selectionStart);
  if (!path || !at) return showMentions([]);
  const done = completeMention(promptBox.value, at.start, promptBox.selectionStart, path);
  promptBox.value = done.text;
  promptBox.setSelectionRange(done.cursor, done.cursor);
  mentionIndex = 0;
  showMentions([]);
  promptBox.focus();
}

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

/** Prompts sent, oldest first, kept across reloads (webview state); Up/Down walk them. */
const saved = (vscode.getState() ?? {}) as { history?: string[] };
const history: string[] = Array.isArray(saved.history) ? saved.history.filter((h) => typeof h === "string") : [];
let historyIndex = history.length;
let draft = "";

/**
 * Sends the prompt. While a request runs (v3) the composer stays usable: Enter steers the
 * running request (`how: "steer"`; the host queues it when the server cannot take it), and
 * Alt+Enter or Queue queues it to run next (`how: "queue"`).
 */
function send(how: "steer" | "queue" = "steer"): void {
  const prompt = promptBox.value.trim();
  if (!prompt || state.server !== "running" || state.keyMissing) return;
  const running = isRunning(state) || state.queued.length > 0;
  promptBox.value = "";
  if (history[history.length - 1] !== prompt) history.push(prompt);
  if (history.length > 100) history.splice(0, history.length - 100);
  historyIndex = history.length;
  draft = "";
  vscode.setState({ history });
  const context = state.attachments.map((a) => a.item);
  const mode = modeSelect.value === "plan" ? { mode: "plan" as const } : {};
  const busy = running ? { how } : {};
  post(context.length > 0 ? { type: "send", prompt, context, ...mode, ...busy } : { type: "send", prompt, ...mode, ...busy });
  // The new turn is shown even when the person had scrolled up to read.
  scrollOnNewTurn = state.turns.length;
  renderSlash();
  showMentions([]);
}

/** The number of turns when a prompt was sent: the next render with more scrolls to it. */
let scrollOnNewTurn: number | undefined;
const jumpButton = $<HTMLButtonElement>("jump-bottom");

function atBottom(): boolean {
  return conversation.scrollHeight - conversation.scrollTop - conversation.clientHeight < 40;
}

function scrollToBottom(): void {
  conversation.scrollTop = conversation.scrollHeight;
  jumpButton.hidden = true;
}

function updateJumpButton(): void {
  jumpButton.hidden = atBottom();
}

function walkHistory(step: -1 | 1): boolean {
  const next = historyIndex + step;
  if (next < 0 || next > history.length) return false;
  if (historyIndex === history.length) draft = promptBox.value;
  historyIndex = next;
  promptBox.value = next === history.length ? draft : history[next];
  const end = promptBox.value.length;
  promptBox.setSelectionRange(end, end);
  return true;
}

function stop(): void {
  if (!isRunning(state)) return;
  post({ type: "stop" });
}

promptBox.addEventListener("keydown", (e) => {
  if (mentionShown.length > 0 && !e.isComposing) {  // the `@` list is open: Tab/Enter take, Up/Down choose, Esc closes
    // A path typed out in full is taken as it is: Enter then sends.
    const typed = mentionAt(promptBox.value, promptBox.selectionStart)?.query;
    if (e.key === "Enter" && typed === mentionShown[mentionIndex]) showMentions([]);
    else if (e.key === "Tab" || (e.key === "Enter" && !e.shiftKey && !e.altKey)) {
      e.preventDefault();
      acceptMention(mentionIndex);
      return;
    }
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      mentionIndex = (mentionIndex + (e.key === "ArrowDown" ? 1 : mentionShown.length - 1)) % mentionShown.length;
      showMentions(mentionShown);
      return;
    }
    if (e.key === "Escape") {
      e.preventDefault();
      showMentions([]);
      return;
    }
  }
  if (slashShown.length > 0 && !e.isComposing) {  // the `/` list is open: Tab takes, Up/Down choose
    if (e.key === "Tab") {
      e.preventDefault();
      acceptSlash(slashIndex);
      return;
    }
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      slashIndex = (slashIndex + (e.key === "ArrowDown" ? 1 : slashShown.length - 1)) % slashShown.length;
      renderSlash();
      return;
    }
  }
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send(e.altKey ? "queue" : "steer");
    return;
  }
  if (e.isComposing || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
  // Up on the first line / Down on the last line walk the prompt history.
  const before = promptBox.value.slice(0, promptBox.selectionStart);
  const after = promptBox.value.slice(promptBox.selectionEnd);
  if (e.key === "ArrowUp" && !before.includes("\n") && walkHistory(-1)) e.preventDefault();
  else if (e.key === "ArrowDown" && !after.includes("\n") && walkHistory(1)) e.preventDefault();
});

// Links in answers and tool cards: files open in the editor at the line; never a browser
// tab for a relative path.
conversation.addEventListener("click", (e) => {
  const target = e.target as HTMLElement | null;
  const anchor = target?.closest("a[href]") as HTMLAnchorElement | null;
  if (!anchor) return;
  const href = anchor.getAttribute("href") ?? "";
  const file = fileLink(href);
  if (file) {
    e.preventDefault();
    e.stopPropagation();
    post({ type: "open_file", path: file.path, line: file.line });
  } else if (!/^(https?|mailto):/i.test(href)) {
    e.preventDefault();
  }
});
conversation.addEventListener("scroll", () => updateJumpButton(), { passive: true });
jumpButton.addEventListener("click", () => scrollToBottom());
// Esc never stops the request (Stop and Ctrl+Alt+S do): a stray Esc must not lose a long run.
$<HTMLFormElement>("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  send();
});
stopButton.addEventListener("click", stop);
$<HTMLButtonElement>("queue-send").addEventListener("click", () => {
  send("queue");
  promptBox.focus();
});
$<HTMLButtonElement>("model").addEventListener("click", () => post({ type: "pick_model" }));
$<HTMLButtonElement>("mcp").addEventListener("click", () => post({ type: "mcp_details" }));
$<HTMLButtonElement>("add-file").addEventListener("click", () => post({ type: "pick_files" }));

// An image pasted into the prompt goes with it as an `image` context item.
promptBox.addEventListener("paste", (e) => {
  const files = Array.from(e.clipboardData?.items ?? [])
    .filter((i) => i.kind === "file")
    .map((i) => i.getAsFile())
    .filter((f): f is File => f !== null);
  if (files.length === 0) return;
  e.preventDefault();
  for (const file of files) void attachImage(file);
});

// Files dropped on the panel: images become image items, other files (a `text/uri-list`
// from VS Code's explorer or tabs, Shift+drag) file items, checked by the host.
document.addEventListener("dragover", (e) => {
  if (e.dataTransfer && Array.from(e.dataTransfer.types).some((t) => t === "Files" || t === "text/uri-list")) e.preventDefault();
});
document.addEventListener("drop", (e) => {
  const data = e.dataTransfer;
  if (!data) return;
  e.preventDefault();
  const uris = parseUriList(data.getData("text/uri-list") || data.getData("application/vnd.code.uri-list") || "");
  const images = Array.from(data.files).filter((f) => f.type.startsWith("image/"));
  if (uris.length > 0) post({ type: "attach_uris", uris });
  else for (const file of images) void attachImage(file);
  promptBox.focus();
});

async function attachImage(file: File): Promise<void> {
  if (!IMAGE_TYPES.has(file.type)) {
    dispatch({ type: "server_state", state: state.server, message: `Only PNG, JPEG, GIF and WebP images can be added (not ${file.type || "this file"}).` });
    return;
  }
  if (file.size > MAX_IMAGE_BYTES) {
    dispatch({ type: "server_state", state: state.server, message: `The image is too large (${Math.round(file.size / 1024 / 1024)} MB; at most 5 MB).` });
    return;
  }
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  dispatch({ type: "attach", item: { type: "image", mimeType: file.type, data: btoa(binary) } });
}
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
      // A request that never started gives its prompt back to edit or send again.
      if (message.action.type === "request_failed" && !promptBox.value) {
        const turn = state.turns[state.turns.length - 1];
        if (turn && turn.status !== "failed" && !turn.ended) promptBox.value = turn.prompt;
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
    case "focus_approval":
      focusApproval(message.toolCallId);
      break;
    case "restore_prompt":
      if (!promptBox.value.trim()) promptBox.value = message.text;
      promptBox.focus();
      break;
    case "commands":
      slashCommands = Array.isArray(message.commands) ? message.commands : [];
      renderSlash();
      break;
    case "file_completions": {
      // Only the answer for what is typed now (an older one may arrive late).
      const at = mentionAt(promptBox.value, promptBox.selectionStart);
      if (at && at.query === message.query) showMentions(Array.isArray(message.paths) ? message.paths.filter((p) => typeof p === "string") : []);
      break;
    }
  }
});

// ------------------------------------------------------------------ render

function focusApproval(toolCallId?: string): void {
  const id = toolCallId ?? pendingApprovals(state)[0]?.toolCallId;
  const focus = (): void => {
    const card = id
      ? (conversation.querySelector(`.tool-card[data-tool-call-id="${CSS.escape(id)}"]`) as HTMLDetailsElement | null)
      : null;
    if (!card) return;
    card.open = true;
    card.scrollIntoView({ block: "nearest" });
    ((card.querySelector(".approve-allow") ?? card.querySelector("summary")) as HTMLElement | null)?.focus();
  };
  if (renderScheduled) requestAnimationFrame(focus);
  else focus();
}

function render(): void {
  const running = isRunning(state);
  const stickToBottom = conversation.scrollHeight - conversation.scrollTop - conversation.clientHeight < 40;

  document.body.dataset.running = String(running);
  conversation.setAttribute("aria-busy", String(running));
  document.body.dataset.server = state.server;
  $<HTMLElement>("title").textContent = state.title || (state.sessionId ? "Session" : "New session");
  const title = $<HTMLElement>("title");
  title.title = state.title ? `${state.title}${state.sessionId ? ` (session ${state.sessionId})` : ""}` : (state.sessionId ?? "");
  if (state.sessionId) title.dataset.sessionId = state.sessionId;
  else delete title.dataset.sessionId;
  // While a request runs the composer stays usable: Send steers it, Queue queues (v3).
  sendButton.disabled = state.server !== "running" || state.keyMissing !== undefined;
  stopButton.hidden = !running;
  sendButton.textContent = running ? "Steer" : "Send";
  sendButton.title = running ? "Tell the running request now: the model sees it at its next step (Enter)" : "Send (Enter)";
  const queueButton = $<HTMLButtonElement>("queue-send");
  queueButton.hidden = !running;
  queueButton.disabled = sendButton.disabled;
  renderBanner();
  renderQueue();
  renderAttachments();
  renderSessions();
  renderConversation();
  renderPlan();
  announce();
  renderFooter();
  if (scrollOnNewTurn !== undefined && state.turns.length > scrollOnNewTurn) {
    scrollOnNewTurn = undefined;
    scrollToBottom();
  } else if (stickToBottom) {
    scrollToBottom();
  }
  updateJumpButton();
}

function renderBanner(): void {
  // No key for the model in use: the call to action, while nothing more urgent is shown (an
  // empty conversation shows it as its first-run view instead).
  const banner =
    state.banner ??
    (state.keyMissing && state.turns.length > 0
      ? {
          kind: "info" as const,
          message: `No API key for ${state.keyMissing.model}: set ${state.keyMissing.variable} to start (kept in VS Code's secret storage), or choose another model.`,
          action: "setApiKey" as const,
        }
      : undefined);
  bannerBox.hidden = !banner;
  bannerBox.replaceChildren();
  if (!banner) return;
  bannerBox.className = `banner banner-${banner.kind}`;
  bannerBox.append(el("span", "banner-text", banner.message));
  if (banner.action) {
    const labels = { openSettings: "Open Settings", showLogs: "Show Logs", restart: "Restart Server", retry: "Retry", setApiKey: "Set API Key" } as const;
    const action = banner.action;
    const button = el("button", "link-button", labels[action]);
    button.addEventListener("click", () => post({ type: "banner_action", action }));
    bannerBox.append(button);
  }
}

let renderedAttachments: ViewState["attachments"] | undefined;

function renderAttachments(): void {
  if (state.attachments === renderedAttachments) return;
  renderedAttachments = state.attachments;
  const box = $<HTMLUListElement>("attachments");
  box.hidden = state.attachments.length === 0;
  box.replaceChildren(
    ...state.attachments.map((a) => {
      const chip = el("li", "attachment");
      chip.dataset.type = a.item.type;
      chip.title = a.item.type === "image" ? a.label : "uri" in a.item ? a.item.uri : a.label;
      chip.append(el("span", "attachment-label", a.label));
      const remove = el("button", "link-button attachment-remove", "×");
      remove.type = "button";
      remove.setAttribute("aria-label", `Remove ${a.label} from the context`);
      remove.addEventListener("click", () => {
        dispatch({ type: "detach", key: a.key });
        promptBox.focus();
      });
      chip.append(remove);
      return chip;
    }),
  );
}

let renderedQueue: [ViewState["queued"], ViewState["steers"]] | undefined;

/** v3: the steers the model has not seen yet, and the queued prompts (each removable). */
function renderQueue(): void {
  if (renderedQueue && renderedQueue[0] === state.queued && renderedQueue[1] === state.steers) return;
  renderedQueue = [state.queued, state.steers];
  const box = $<HTMLUListElement>("queue");
  box.hidden = state.queued.length === 0 && state.steers.length === 0;
  const rows: HTMLElement[] = state.steers.map((text) => {
    const row = el("li", "queue-row steer-pending");
    row.append(el("span", "queue-label", "Steer, at the next step:"), " ", el("span", "queue-text", text));
    return row;
  });
  state.queued.forEach((q, i) => {
    const row = el("li", "queue-row queued");
    row.dataset.key = q.key;
    if (q.requestId) row.dataset.requestId = q.requestId;
    row.append(el("span", "queue-label", `Queued ${i + 1}:`), " ", el("span", "queue-text", q.prompt));
    const remove = el("button", "link-button queue-remove", "×");
    remove.type = "button";
    remove.title = "Remove this queued prompt (it never runs)";
    remove.setAttribute("aria-label", `Remove the queued prompt ${q.prompt.slice(0, 40)}`);
    remove.addEventListener("click", () => {
      post({ type: "unqueue", key: q.key });
      promptBox.focus();
    });
    row.append(" ", remove);
    rows.push(row);
  });
  box.replaceChildren(...rows);
}

/** The sessions panel's search box: made once, so typing survives re-renders. */
const sessionSearch = el("input", "session-search");
sessionSearch.type = "search";
sessionSearch.placeholder = "Search sessions";
sessionSearch.setAttribute("aria-label", "Search sessions");
sessionSearch.addEventListener("input", () => renderSessionList());
const sessionList = el("ul", "session-list");
sessionList.setAttribute("aria-label", "Sessions");
let renderedSessions: [Session[], boolean, string | undefined, boolean] | undefined;

function renderSessions(): void {
  sessionsButton.setAttribute("aria-expanded", String(sessionsOpen));
  sessionsPanel.hidden = !sessionsOpen;
  if (!sessionsOpen) return;
  if (sessionsPanel.firstChild !== sessionSearch) sessionsPanel.replaceChildren(sessionSearch, sessionList);
  const running = isRunning(state);
  const key: [Session[], boolean, string | undefined, boolean] = [state.sessions, state.sessionsLoaded, state.sessionId, running];
  if (renderedSessions && renderedSessions.every((v, i) => v === key[i])) return;
  renderedSessions = key;
  renderSessionList();
}

function renderSessionList(): void {
  const rows: HTMLElement[] = [];
  const shown = filterSessions(state.sessions, sessionSearch.value);
  if (!state.sessionsLoaded) rows.push(el("li", "session-empty", "Loading sessions…"));
  else if (state.sessions.length === 0) rows.push(el("li", "session-empty", "No sessions yet."));
  else if (shown.length === 0) rows.push(el("li", "session-empty", "No session matches."));
  for (const session of shown) rows.push(sessionRow(session));
  sessionList.replaceChildren(...rows);
}

/** A row: the title (two lines at most) and its age open the session; ⋯ has Resume and Delete. */
function sessionRow(session: Session): HTMLElement {
  const row = el("li", "session-row");
  row.dataset.sessionId = session.sessionId;
  if (session.sessionId === state.sessionId) row.classList.add("current");
  const name = session.title || "(untitled)";
  const open = el("button", "session-resume session-info");
  open.type = "button";
  open.title = `${name}\n${session.modifiedAt ? new Date(session.modifiedAt).toLocaleString() : ""}`;
  open.setAttribute("aria-label", `Resume session ${name}`);
  open.disabled = isRunning(state);
  open.append(el("span", "session-title", name));
  const age = relativeTime(session.modifiedAt);
  open.append(el("span", "session-meta", `${age ? `${age} · ` : ""}${plural(session.messageCount, "message")}`));
  open.addEventListener("click", () => post({ type: "resume", sessionId: session.sessionId }));
  const menu = el("button", "session-menu secondary", "⋯");
  menu.type = "button";
  menu.title = "Resume or delete this session";
  menu.setAttribute("aria-label", `Actions for session ${name}`);
  menu.addEventListener("click", () => post({ type: "session_menu", sessionId: session.sessionId, title: name }));
  row.append(open, menu);
  return row;
}

/** First run without a usable model: what is missing and the two ways out (Send stays disabled). */
function firstRun(missing: { model: string; variable: string }): HTMLElement {
  const box = el("div", "empty first-run");
  box.append(el("p", "first-run-title", "Set up a model to start"));
  box.append(el("p", "first-run-text", `The model ${missing.model} needs ${missing.variable}, and none is set.`));
  const actions = el("div", "first-run-actions");
  const key = el("button", "first-run-key", "Set API Key");
  key.type = "button";
  key.title = `Kept in VS Code's secret storage and given to the TunaCode server as ${missing.variable}`;
  key.addEventListener("click", () => post({ type: "banner_action", action: "setApiKey" }));
  const model = el("button", "first-run-model secondary", "Choose model");
  model.type = "button";
  model.addEventListener("click", () => post({ type: "pick_model" }));
  actions.append(key, " ", model);
  box.append(actions);
  return box;
}

const turnViews = new Map<string, { turn: Turn; el: HTMLElement }>();
const itemViews = new Map<string, { item: Item; el: HTMLElement }>();

function renderConversation(): void {
  if (state.turns.length === 0) {
    turnViews.clear();
    itemViews.clear();
    conversation.replaceChildren(state.keyMissing ? firstRun(state.keyMissing) : el("div", "empty", "Ask TunaCode to read, change or explain code in this workspace."));
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
  max_cost: "Stopped: cost cap reached",
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
  // "Edit and resend": rewinds to before this prompt (files and history) and puts it in the box.
  const userPrompt = article.querySelector(".user-prompt") as HTMLElement;
  userPrompt.querySelector(".turn-edit")?.remove();
  if (turn.requestId && turn.ended && turn.prompt) {
    const edit = el("button", "link-button turn-edit", "Edit");
    edit.type = "button";
    edit.title = "Edit this prompt and send it again: rewinds the files and the conversation to before it";
    edit.setAttribute("aria-label", `Edit and resend: ${turn.prompt.slice(0, 60)}`);
    edit.disabled = isRunning(state);
    const requestId = turn.requestId;
    edit.addEventListener("click", () => post({ type: "rewind", requestId, prompt: turn.prompt, edit: true }));
    userPrompt.append(edit);
  }
  if (turn.context && turn.context.length > 0 && !article.querySelector(".prompt-context")) {
    const list = el("ul", "prompt-context");
    list.setAttribute("aria-label", "Context sent");
    for (const label of turn.context) list.append(el("li", "prompt-context-item", label));
    promptText.after(list);
  }

  const itemsBox = article.querySelector(".turn-items") as HTMLElement;
  // todo_write has no card (the plan box shows the plan), unless it waits for an answer.
  const shown = turn.items.filter((item) => !(item.kind === "tool" && isHiddenTool(item.name) && item.approval?.state !== "asking"));
  const elements = shown.map((item) => itemElement(item, turn));
  const current = Array.from(itemsBox.children);
  if (current.length !== elements.length || current.some((c, i) => c !== elements[i])) {
    itemsBox.replaceChildren(...elements);
  }

  const status = article.querySelector(".turn-status") as HTMLElement;
  status.replaceChildren();
  status.className = `turn-status status-${turn.status}`;
  const text = STATUS_TEXT[turn.status];
  if (text) status.append(el("span", "turn-status-text", text));
  trackElapsed(article, turn.status === "sending" || turn.status === "running" || turn.status === "stopping");
  // a replayed turn knows its request (session.get's `requests`) but not what it changed until asked
  if (turn.requestId && ((turn.changedFiles && turn.changedFiles.length > 0) || (turn.replayed && !turn.changedFiles))) {
    status.append(changesBox(turn, turn.requestId));
  }
  if (turn.missedEvents > 0) status.append(el("span", "turn-gap", ` (${turn.missedEvents} updates missed; the final answer is shown)`));
  if (turn.error) {
    const box = el("div", "turn-error");
    box.setAttribute("role", "alert");
    box.append(el("div", "turn-error-message", turn.error.message));
    if (turn.error.hint) box.append(el("div", "turn-error-hint", turn.error.hint));
    box.append(errorActions(turn));
    status.append(box);
  }
}

/** Approval shortcuts while its buttons have the focus. */
const APPROVAL_KEYS: Record<string, ApprovalDecision> = { a: "allow", s: "allow_session", d: "deny" };
const ALWAYS_KEYS: Record<string, ApprovalDecision> = { u: "allow_always_user", p: "allow_always_project" };
/** Cards this panel opened to ask (closed again once answered). */
const openedForApproval = new Set<string>();
/** Approvals that already took the focus once (a re-render does not take it again). */
const focusedApprovals = new Set<string>();

/** When each running turn started: its status line shows the time waited ("Working… 12 s"). */
const runningSince = new Map<HTMLElement, number>();
let elapsedTimer: ReturnType<typeof setInterval> | undefined;

function trackElapsed(article: HTMLElement, running: boolean): void {
  if (!running) {
    runningSince.delete(article);
  } else if (!runningSince.has(article)) {
    runningSince.set(article, Date.now());
  }
  showElapsed();
  if (runningSince.size > 0 && elapsedTimer === undefined) elapsedTimer = setInterval(showElapsed, 1000);
  if (runningSince.size === 0 && elapsedTimer !== undefined) {
    clearInterval(elapsedTimer);
    elapsedTimer = undefined;
  }
}

function showElapsed(): void {
  for (const [article, since] of runningSince) {
    if (!article.isConnected) {
      runningSince.delete(article);
      continue;
    }
    const seconds = Math.floor((Date.now() - since) / 1000);
    const text = article.querySelector(".turn-status-text");
    if (!text) continue;
    const base = (text.textContent ?? "").replace(/ \d+ s$/, "");
    text.textContent = seconds >= 2 ? `${base} ${seconds} s` : base;
  }
}

/** The failed turn's way out, by the server's error kind: Retry (the same prompt), Choose model, Open Settings, Set API Key, Show Logs. */
function errorActions(turn: Turn): HTMLElement {
  const row = el("div", "turn-error-actions");
  if (turn.error?.kind) row.dataset.kind = turn.error.kind;
  const add = (label: string, onClick: () => void): void => {
    const button = el("button", "link-button", label);
    button.addEventListener("click", onClick);
    row.append(button);
  };
  for (const which of errorButtons(turn.status === "failed" ? undefined : turn.error?.kind)) {
    if (which === "retry" && turn.prompt) {
      add("Retry", () => {
        if (!isRunning(state)) post({ type: "send", prompt: turn.prompt });
      });
    }
    if (which === "chooseModel") add("Choose model", () => post({ type: "pick_model" }));
    if (which === "openSettings") add("Open Settings", () => post({ type: "banner_action", action: "openSettings" }));
    if (which === "setApiKey") add("Set API Key", () => post({ type: "banner_action", action: "setApiKey" }));
    if (which === "showLogs") add("Show Logs", () => post({ type: "banner_action", action: "showLogs" }));
  }
  return row;
}

/** Requests whose Changes list is open (a view choice, not state). */
const openChanges = new Set<string>();

const CHANGE_MARK: Record<string, string> = { added: "A", modified: "M", deleted: "D" };

/** "2 files changed · Compare · Changes · Restore" (Cline's per-turn checkpoint), and the list when open. */
function changesBox(turn: Turn, requestId: string): HTMLElement {
  const box = el("div", "turn-changes");
  const open = openChanges.has(requestId);
  if (turn.changedFiles) {
    const count = el("span", "turn-changes-text", `${plural(turn.changedFiles.length, "file")} changed`);
    count.title = turn.changedFiles.slice(0, 50).join("\n");
    box.append(count, " · ");
  }
  const toggle = el("button", "link-button turn-review", "Changes");
  toggle.type = "button";
  toggle.setAttribute("aria-expanded", String(open));
  toggle.title = "List the files this request changed, with their diffs";
  toggle.addEventListener("click", () => {
    if (openChanges.has(requestId)) openChanges.delete(requestId);
    else {
      openChanges.add(requestId);
      post({ type: "show_changes", requestId });
    }
    rerenderTurn(turn.key);
  });
  const compare = el("button", "link-button turn-compare", "Compare");
  compare.type = "button";
  compare.title = "Open every file this request changed, before it ↔ now, in one diff editor";
  compare.addEventListener("click", () => post({ type: "compare_request", requestId }));
  const rewind = el("button", "link-button turn-rewind", "Restore");
  rewind.type = "button";
  rewind.title = "Rewind to before this prompt: restore the files this request (and later ones) changed, and cut the conversation back to before it";
  rewind.setAttribute("aria-label", "Restore: rewind to before this prompt");
  rewind.disabled = isRunning(state);
  rewind.addEventListener("click", () => post({ type: "rewind", requestId, prompt: turn.prompt }));
  if (turn.changedFiles?.length) box.append(compare, " · ");
  box.append(toggle, " · ", rewind);
  if (!open) return box;

  const list = el("ul", "change-list");
  list.setAttribute("aria-label", "Changed files");
  const changes = turn.changes;
  if (!changes) list.append(el("li", "change-empty", "Loading changes…"));
  else if (changes.error) list.append(el("li", "change-error", changes.error));
  else if (changes.files.length === 0) list.append(el("li", "change-empty", "No changes recorded for this request."));
  for (const file of changes?.files ?? []) {
    const row = el("li", "change-row");
    row.dataset.path = file.path;
    row.dataset.status = file.status;
    if (file.undone) row.dataset.undone = "true";
    const mark = el("span", `change-mark change-${file.status}`, CHANGE_MARK[file.status] ?? "?");
    mark.title = file.status;
    const open = el("button", "link-button change-diff", file.path);
    open.type = "button";
    open.title = `Show the diff of ${file.path} (${file.status})`;
    open.addEventListener("click", () => post({ type: "show_diff", path: file.path, diff: file.diff, status: file.status }));
    const undo = el("button", "link-button change-undo", file.undone ? "Undone" : "Undo");
    undo.type = "button";
    undo.disabled = file.undone === true || isRunning(state);
    undo.title = `Put ${file.path} back as it was before this request (an editor edit, undoable)`;
    undo.setAttribute("aria-label", `Undo the change of ${file.path}`);
    undo.addEventListener("click", () => post({ type: "undo_file", requestId, path: file.path, status: file.status, diff: file.diff }));
    row.append(mark, " ", open, " ", undo);
    if (isBufferOnly(file.diff)) {
      const note = el("span", "change-note change-unsaved", "unsaved");
      note.title = "The agent's edit is in the editor's buffer only (the document had unsaved changes of yours)";
      row.append(" ", note);
    }
    // A change of several hunks: each can be undone by itself.
    const hunks = file.status === "modified" && !file.undone ? hunkSummaries(file.diff) : [];
    if (hunks.length > 1) {
      const parts = el("ul", "hunk-list");
      parts.setAttribute("aria-label", `Changes in ${file.path}`);
      for (const hunk of hunks) {
        const undone = (file.undoneHunks ?? []).includes(hunk.index);
        const item = el("li", "hunk-row");
        item.dataset.index = String(hunk.index);
        if (undone) item.dataset.undone = "true";
        const where = hunk.line;
        const label = el("span", "hunk-label", `line ${where}: −${hunk.removed} +${hunk.added}`);
        label.title = hunk.header;
        const button = el("button", "link-button hunk-undo", undone ? "Undone" : "Undo");
        button.type = "button";
        button.disabled = undone || isRunning(state);
        button.title = "Put this part's old lines back (an editor edit, undoable); the file's other changes stay";
        button.setAttribute("aria-label", `Undo the change at line ${where} of ${file.path}`);
        button.addEventListener("click", () => post({ type: "undo_hunk", requestId, path: file.path, diff: file.diff, index: hunk.index }));
        item.append(label, " ", button);
        parts.append(item);
      }
      row.append(parts);
    }
    list.append(row);
  }
  if (changes?.truncated) list.append(el("li", "change-note", "The list or a diff was cut: the change is larger."));
  box.append(list);
  return box;
}

function rerenderTurn(key: string): void {
  const view = turnViews.get(key);
  if (view) updateTurn(view.el, view.turn);
}

function itemElement(item: Item, turn: Turn): HTMLElement {
  const view = itemViews.get(item.key);
  if (view && view.item === item) return view.el;
  const node = view ? view.el : createItem(item);
  updateItem(node, item, turn);
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
      const body = el("div", "tool-body");
      body.append(el("div", "tool-approval"), el("pre", "tool-result"), el("div", "tool-actions"));
      details.append(summary, body);
      return details;
    }
    case "notice":
      return el("div", "notice");
    case "user":
      return el("div", "user-steer");
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

function updateItem(node: HTMLElement, item: Item, turn: Turn): void {
  switch (item.kind) {
    case "text":
      morphMarkdown(node, renderMarkdown(item.text));
      break;
    case "thinking":
      (node.querySelector(".thinking-text") as HTMLElement).textContent = item.text;
      break;
    case "tool":
      updateToolCard(node as HTMLDetailsElement, item, turn);
      break;
    case "notice":
      node.textContent = item.message;
      break;
    case "user":
      node.textContent = item.text;
      node.title = "Sent while the agent worked (a steer): the model saw it here";
      break;
  }
}

function updateToolCard(node: HTMLDetailsElement, item: ToolItem, turn: Turn): void {
  const denied = isDenied(item);
  const asking = item.approval?.state === "asking";
  node.dataset.status = denied ? "denied" : item.status;
  node.dataset.tool = item.name;
  node.dataset.toolCallId = item.toolCallId;
  node.dataset.approval = item.approval?.state ?? "";
  const set = (cls: string, text: string): void => {
    (node.querySelector(`.${cls}`) as HTMLElement).textContent = text;
  };
  // The row is the server's title ("Edit calc.py (+1 -1)"), never a raw tool name; a click
  // anywhere on it toggles the card (the file opens from the body's Open file).
  set("tool-name", "");
  const path = toolFilePath(item.args);
  const rowText = toolRowText(item);
  const argsBox = node.querySelector(".tool-args") as HTMLElement;
  if (argsBox.textContent !== rowText) argsBox.textContent = rowText;
  argsBox.title = rowText;
  set("tool-state", denied ? "denied" : TOOL_STATE_TEXT[item.status]);
  set("tool-duration", item.durationMs !== undefined && !denied ? formatDuration(item.durationMs) : "");

  const approvalBox = node.querySelector(".tool-approval") as HTMLElement;
  approvalBox.replaceChildren();
  approvalBox.hidden = !asking;
  // A card opened for an approval closes once it is answered (one the person opened stays).
  if (!asking && openedForApproval.delete(item.toolCallId)) node.open = false;
  if (asking && item.approval && turn.requestId) {
    if (!node.open) {
      node.open = true;
      openedForApproval.add(item.toolCallId);
    }
    approvalBox.setAttribute("role", "group");
    approvalBox.setAttribute("aria-label", `Approve: ${rowText}`);
    // The command or the diff is shown right below: the question does not repeat it.
    const question =
      item.approval.detailKind === "command" ? "Allow this command?" : item.approval.detailKind === "diff" ? `Allow this edit${path ? ` of ${path}` : ""}?` : `Allow ${rowText}?`;
    approvalBox.append(el("div", "approval-question", question));
    approvalBox.append(approvalDetail(item.approval.detail, item.approval.detailKind));
    if (item.approval.truncated) approvalBox.append(el("div", "approval-note", "The diff was cut; the full change is larger."));
    const buttons = el("div", "approval-buttons");
    const requestId = turn.requestId;
    const answer = (decision: ApprovalDecision): void => {
      post({ type: "approve", requestId, toolCallId: item.toolCallId, decision });
      // Answered: the keyboard goes back to the prompt (not the page's body).
      promptBox.focus();
    };
    const button = (label: string, key: string, decision: ApprovalDecision, cls: string): HTMLButtonElement => {
      const b = el("button", cls, label);
      b.type = "button";
      b.title = `${label} (${key.toUpperCase()})`;
      b.setAttribute("aria-keyshortcuts", key.toUpperCase());
      b.addEventListener("click", (e) => {
        e.preventDefault();
        answer(decision);
      });
      return b;
    };
    buttons.append(
      button("Allow", "a", "allow", "approve-allow"),
      button("Allow for this session", "s", "allow_session", "approve-session secondary"),
      button("Deny", "d", "deny", "approve-deny secondary"),
    );
    const always = item.approval.alwaysAllow;
    if (always && always.length > 0) {
      // The server saves these allow rules to the chosen settings file (docs/protocol.md).
      const rules = always.join(", ");
      const user = button("Always allow (user)", "u", "allow_always_user", "approve-always-user secondary");
      const project = button("Always allow (project)", "p", "allow_always_project", "approve-always-project secondary");
      user.title = `Save ${rules} to your user settings and allow (U)`;
      project.title = `Save ${rules} to the project's .tunacode/settings.json and allow (P)`;
      buttons.append(user, project);
    }
    if (item.approval.rule) approvalBox.append(el("div", "approval-note", `Asked by the ${item.approval.rule.replace(/`/g, "")}`));
    approvalBox.append(buttons);
    approvalBox.onkeydown = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const key = e.key.toLowerCase();
      const decision = APPROVAL_KEYS[key] ?? (item.approval?.alwaysAllow?.length ? ALWAYS_KEYS[key] : undefined);
      if (!decision) return;
      e.preventDefault();
      answer(decision);
    };
    // A new question takes the keyboard (Allow focused), unless the person is typing a prompt.
    if (!focusedApprovals.has(item.toolCallId)) {
      focusedApprovals.add(item.toolCallId);
      const typing = document.activeElement === promptBox && promptBox.value.trim() !== "";
      if (!typing) requestAnimationFrame(() => (approvalBox.querySelector(".approve-allow") as HTMLElement | null)?.focus());
    }
  }

  const result = node.querySelector(".tool-result") as HTMLElement;
  const open = item.status === "pending" || item.status === "in_progress" || item.status === "awaiting_approval";
  // An applied edit keeps its diff's colours; other results without what was meant for the model.
  const appliedDiff = item.status === "completed" && item.approval?.detailKind === "diff" && item.approval.detail ? item.approval.detail : undefined;
  const diffText = appliedDiff ?? (item.result ? diffIn(item.result) : undefined);
  result.replaceChildren();
  result.classList.toggle("tool-diff", diffText !== undefined);
  if (diffText !== undefined) {
    for (const line of diffForPerson(diffText)) result.append(el("span", `diff-line diff-${line.kind}`, `${line.text}\n`));
  } else {
    result.textContent = item.result !== undefined
      ? resultForPerson(item.result)
      : item.status === "awaiting_approval" ? "Waiting for your approval…" : open ? "Running…" : "(no output)";
  }
  const actions = node.querySelector(".tool-actions") as HTMLElement;
  actions.replaceChildren();
  if (path) {
    const link = el("a", "tool-path link-button", `Open ${path}`);
    link.href = path;
    link.title = `Open ${path} in the editor`;
    actions.append(link);
  }
  if (item.approval?.detailKind === "diff" && path && item.approval.detail) {
    const diff = item.approval.detail;
    const review = el("button", "tool-show-diff link-button", "Show diff");
    review.type = "button";
    review.title = "Open this change in VS Code's diff editor";
    review.addEventListener("click", () => post({ type: "show_diff", path, diff }));
    actions.append(review);
  }
  if (!open && item.result !== undefined) {
    const full = el("button", "tool-full-output link-button", "Show full output");
    full.type = "button";
    full.addEventListener("click", () => post({ type: "show_output", requestId: turn.requestId, toolCallId: item.toolCallId, name: item.name }));
    actions.append(full);
  }
}

function approvalDetail(detail: string, kind: "command" | "diff" | "arguments"): HTMLElement {
  const pre = el("pre", `approval-detail approval-${kind}`);
  if (kind === "diff") {
    for (const line of diffForPerson(detail)) {
      pre.append(el("span", `diff-line diff-${line.kind}`, `${line.text}\n`));
    }
  } else if (kind === "command") {
    // Each word is one unit: a line breaks at blanks, never inside `--maxfail` or `test.py`
    // (a word wider than the panel alone still wraps, see .cmd-word).
    for (const part of detail.split(/(\s+)/)) {
      if (!part) continue;
      if (/^\s+$/.test(part)) pre.append(document.createTextNode(part));
      else pre.append(el("span", "cmd-word", part));
    }
  } else {
    pre.textContent = detail;
  }
  return pre;
}

/**
 * Replaces an answer's rendered markdown block by block: blocks that did not change keep
 * their nodes, so a selection in them survives streaming.
 */
function morphMarkdown(container: HTMLElement, html: string): void {
  const template = document.createElement("template");
  template.innerHTML = html;
  addCopyButtons(template.content);
  const fresh = Array.from(template.content.childNodes);
  const current = Array.from(container.childNodes);
  let i = 0;
  for (; i < fresh.length; i++) {
    const old = current[i];
    const next = fresh[i];
    if (old && sameNode(old, next)) continue;
    if (old) container.replaceChild(next, old);
    else container.append(next);
  }
  for (let j = current.length - 1; j >= i; j--) current[j].remove();
}

function sameNode(a: Node, b: Node): boolean {
  if (a.nodeType !== b.nodeType) return false;
  if (a instanceof Element && b instanceof Element) return a.outerHTML === b.outerHTML;
  return a.textContent === b.textContent;
}

function addCopyButtons(container: ParentNode): void {
  for (const pre of Array.from(container.querySelectorAll("pre"))) {
    const code = pre.querySelector("code");
    const text = (): string => (code ?? pre).textContent ?? "";
    // The buttons sit in a bar above the code, so they never cover its first line.
    const bar = el("div", "code-actions");
    const copy = el("button", "copy-code secondary", "Copy");
    copy.type = "button";
    copy.setAttribute("aria-label", "Copy code");
    copy.addEventListener("click", () => {
      post({ type: "copy", text: text() });
      copy.textContent = "Copied";
      setTimeout(() => (copy.textContent = "Copy"), 1500);
    });
    const insert = el("button", "insert-code secondary", "Insert");
    insert.type = "button";
    insert.title = "Insert at the cursor in the editor";
    insert.setAttribute("aria-label", "Insert code at the cursor");
    insert.addEventListener("click", () => post({ type: "insert", text: text() }));
    bar.append(copy, insert);
    const wrapper = el("div", "code-block");
    pre.replaceWith(wrapper);
    wrapper.append(bar, pre);
  }
}

const announced = new Set<string>();

/** Tells a screen reader, politely and once, that an answer finished (not every delta). */
function announce(): void {
  for (const turn of state.turns) {
    if (turn.replayed || !turn.ended || announced.has(turn.key)) continue;
    announced.add(turn.key);
    const text = turn.items
      .filter((i) => i.kind === "text")
      .map((i) => (i as { text: string }).text)
      .join(" ")
      .replace(/\s+/g, " ")
      .trim();
    const status = STATUS_TEXT[turn.status];
    const message = `${status ? `${status}. ` : ""}${text.length > 300 ? `${text.slice(0, 299)}…` : text}`;
    $<HTMLElement>("announcer").textContent = message || "TunaCode finished.";
  }
}

let renderedPlan: ViewState["plan"];

function renderPlan(): void {
  if (state.plan === renderedPlan) return;
  renderedPlan = state.plan;
  const box = $<HTMLElement>("plan");
  box.replaceChildren();
  box.hidden = !state.plan || state.plan.length === 0;
  if (!state.plan) return;
  const done = state.plan.filter((p) => p.status === "completed").length;
  box.append(el("div", "plan-title", `Plan · ${done}/${state.plan.length}`));
  const list = el("ul", "plan-list");
  for (const item of state.plan) {
    const li = el("li", `plan-item plan-${item.status}`);
    const mark = item.status === "completed" ? "☑" : item.status === "in_progress" ? "▸" : "☐";
    li.append(el("span", "plan-mark", mark));
    li.append(el("span", "plan-text", item.status === "in_progress" && item.activeForm ? item.activeForm : item.content));
    li.setAttribute("aria-label", `${item.content}: ${item.status.replace("_", " ")}`);
    list.append(li);
  }
  box.append(list);
}

const SERVER_STATE_TEXT = { starting: "Starting server…", running: "", stopped: "Server stopped", failed: "Server not running" } as const;

function renderFooter(): void {
  const serverState = $<HTMLElement>("server-state");
  serverState.textContent = SERVER_STATE_TEXT[state.server];
  serverState.hidden = state.server === "running";
  const model = $<HTMLButtonElement>("model");
  model.textContent = state.model ? state.model : "model: server default";
  model.disabled = state.server !== "running";
  const meter = $<HTMLElement>("context");
  meter.hidden = !state.context;
  if (state.context) {
    const pct = Math.min(100, Math.round((state.context.tokens / state.context.window) * 100));
    meter.textContent = `context ${pct}%`;
    meter.title = `${formatTokens(state.context.tokens)} of ${formatTokens(state.context.window)} tokens of the model's context window`;
    meter.dataset.level = pct >= 90 ? "high" : pct >= 70 ? "medium" : "low";
  }
  const mcp = $<HTMLElement>("mcp");
  const summary = mcpSummary(state.mcpServers);
  // Set only on a change: the line is a live region, and this runs on every streamed frame.
  if (mcp.hidden !== !summary) mcp.hidden = !summary;
  if (mcp.textContent !== (summary?.text ?? "")) mcp.textContent = summary?.text ?? "";
  if (mcp.title !== (summary?.detail ?? "")) mcp.title = summary?.detail ?? "";
  if (summary && mcp.dataset.level !== summary.level) mcp.dataset.level = summary.level;
  const reason = $<HTMLElement>("mcp-reason");
  const why = summary?.reason ?? "";
  if (reason.hidden !== !why) reason.hidden = !why;
  if (reason.textContent !== why) reason.textContent = why;
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

// "Focus on Agent View" (and any focus of the view from outside) lands in the prompt.
window.addEventListener("focus", () => {
  const active = document.activeElement;
  if (!active || active === document.body) promptBox.focus();
});
