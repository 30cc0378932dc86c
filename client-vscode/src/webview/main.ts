/**
 * The side panel's script: wires the DOM to the host (postMessage) and to the pure reducer
 * in state.ts, and renders the view state. Rendering is keyed: a turn or item whose object
 * did not change is left alone, so open cards, selections and scroll survive streaming.
 */

import type { HostMessage, WebviewMessage } from "../messages";
import type { Session } from "../protocol";
import { renderMarkdown } from "./markdown";
import { completeSlash, type SlashCommand, slashCompletions, slashLabel } from "./slash";
import {
  type Action,
  type Item,
  type ToolItem,
  type Turn,
  type ViewState,
  diffLines,
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
});

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

function send(): void {
  const prompt = promptBox.value.trim();
  if (!prompt || isRunning(state) || state.server !== "running" || state.keyMissing) return;
  promptBox.value = "";
  if (history[history.length - 1] !== prompt) history.push(prompt);
  if (history.length > 100) history.splice(0, history.length - 100);
  historyIndex = history.length;
  draft = "";
  vscode.setState({ history });
  const context = state.attachments.map((a) => a.item);
  const mode = modeSelect.value === "plan" ? { mode: "plan" as const } : {};
  post(context.length > 0 ? { type: "send", prompt, context, ...mode } : { type: "send", prompt, ...mode });
  // The new turn is shown even when the person had scrolled up to read.
  scrollOnNewTurn = state.turns.length;
  renderSlash();
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
    send();
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
$<HTMLButtonElement>("model").addEventListener("click", () => post({ type: "pick_model" }));
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
  sendButton.disabled = running || state.server !== "running" || state.keyMissing !== undefined;
  stopButton.hidden = !running;
  sendButton.hidden = running;
  renderBanner();
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
  // First run without a key: the call to action, while nothing more urgent is shown.
  const banner =
    state.banner ??
    (state.keyMissing
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
  info.append(el("span", "session-meta", `${when} · ${plural(session.messageCount, "message")}`));
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
  if (turn.context && turn.context.length > 0 && !article.querySelector(".prompt-context")) {
    const list = el("ul", "prompt-context");
    list.setAttribute("aria-label", "Context sent");
    for (const label of turn.context) list.append(el("li", "prompt-context-item", label));
    promptText.after(list);
  }

  const itemsBox = article.querySelector(".turn-items") as HTMLElement;
  const elements = turn.items.map((item) => itemElement(item, turn));
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

/** The failed turn's way out: Retry (the same prompt), Choose model, Open Settings, Show Logs. */
function errorActions(turn: Turn): HTMLElement {
  const row = el("div", "turn-error-actions");
  const add = (label: string, onClick: () => void): void => {
    const button = el("button", "link-button", label);
    button.addEventListener("click", onClick);
    row.append(button);
  };
  if (turn.prompt) {
    add("Retry", () => {
      if (!isRunning(state)) post({ type: "send", prompt: turn.prompt });
    });
  }
  add("Choose model", () => post({ type: "pick_model" }));
  add("Open Settings", () => post({ type: "banner_action", action: "openSettings" }));
  add("Show Logs", () => post({ type: "banner_action", action: "showLogs" }));
  return row;
}

/** Requests whose Changes list is open (a view choice, not state). */
const openChanges = new Set<string>();

const CHANGE_MARK: Record<string, string> = { added: "A", modified: "M", deleted: "D" };

/** "2 files changed · Changes · Rewind to before this prompt", and the list when open. */
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
  const rewind = el("button", "link-button turn-rewind", "Rewind to before this prompt");
  rewind.type = "button";
  rewind.title = "Restore the files this request (and later ones) changed, and cut the conversation back to before it";
  rewind.disabled = isRunning(state);
  rewind.addEventListener("click", () => post({ type: "rewind", requestId, prompt: turn.prompt }));
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
  // The row is the server's title ("Edit calc.py (+1 -1)"); a server before v3 sent the name and summary.
  set("tool-name", item.title ? "" : item.name);
  const path = toolFilePath(item.args);
  const argsBox = node.querySelector(".tool-args") as HTMLElement;
  const summaryText = item.title ?? (item.summary ? stripToolPrefix(item.summary, item.name) : "");
  argsBox.replaceChildren();
  if (path) {
    const link = el("a", "tool-path", summaryText);
    link.href = path;
    link.title = `Open ${path}`;
    argsBox.append(link);
  } else {
    argsBox.textContent = summaryText;
  }
  argsBox.title = JSON.stringify(item.args, null, 2);
  set("tool-state", denied ? "denied" : TOOL_STATE_TEXT[item.status]);
  set("tool-duration", item.durationMs !== undefined && !denied ? formatDuration(item.durationMs) : "");

  const approvalBox = node.querySelector(".tool-approval") as HTMLElement;
  approvalBox.replaceChildren();
  approvalBox.hidden = !asking;
  if (asking && item.approval && turn.requestId) {
    node.open = true;
    approvalBox.setAttribute("role", "group");
    approvalBox.setAttribute("aria-label", `Approve ${item.name}`);
    approvalBox.append(el("div", "approval-question", `Allow ${[item.name, item.approval.summary].filter(Boolean).join(" ")}?`));
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
    if (item.approval.rule) approvalBox.append(el("div", "approval-note", `Asked by the ${item.approval.rule}`));
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
  result.textContent = item.result ?? (item.status === "awaiting_approval" ? "Waiting for your approval…" : open ? "Running…" : "(no output)");
  const actions = node.querySelector(".tool-actions") as HTMLElement;
  actions.replaceChildren();
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
    for (const line of diffLines(detail)) {
      pre.append(el("span", `diff-line diff-${line.kind}`, `${line.text}\n`));
    }
  } else {
    pre.textContent = detail;
  }
  return pre;
}

/** `bash: npm test` -> `npm test` next to the tool's name. */
function stripToolPrefix(summary: string, name: string): string {
  return summary.startsWith(`${name}: `) ? summary.slice(name.length + 2) : summary;
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
