/**
 * The one reducer that builds the side panel's view state (viewState.ts) from `tunacode/event`s and
 * request results; a reloaded session is the same events (`tunacode.session.get {events: true}`,
 * the server's projection of its history), so nothing here reads stored messages. No DOM and no `vscode` import, so node's
 * test runner exercises it directly.
 *
 * Updates are immutable: a turn or item that did not change keeps its identity, which is
 * what the renderer uses to skip work. The types and the selectors are re-exported from here,
 * so the panel and the tests import one module.
 */

import type {
  ApproveParams,
  ChangedFile,
  ErrorInfo,
  RequestMark,
  RequestResult,
  Session,
  StopReason,
  ToolStatus,
  TunaEvent,
  Usage,
} from "../protocol";
import { contextLabel, mergeContext } from "../context";
import {
  FINAL_TOOL_STATUSES,
  addUsage,
  firstLine,
  hintForError,
  hintForKind,
  isRunning,
  isTurnOpen,
  mcpServersFrom,
  num,
  toUsage,
} from "./selectors";
import {
  type Action,
  type Approval,
  type Attachment,
  type ApprovalState,
  type Banner,
  type Item,
  type NoticeItem,
  type QueuedPrompt,
  type TextItem,
  type ToolItem,
  type Turn,
  type TurnChanges,
  type ViewState,
  MAX_EARLY_EVENTS,
  RETRY_NOTICE,
  ZERO_USAGE,
} from "./viewState";

export * from "./viewState";
export * from "./selectors";

export function reduce(state: ViewState, action: Action): ViewState {
  switch (action.type) {
    case "prompt_sent": {
      let next = pushTurn(state, action.prompt);
      if (action.context && action.context.length > 0) {
        const idx = next.turns.length - 1;
        const items = action.context.filter((i) => i && typeof i === "object" && typeof i.type === "string");
        next = replaceTurn(next, idx, { ...next.turns[idx], context: items.map(contextLabel), contextItems: items });
      }
      if (next.attachments.length > 0) next = { ...next, attachments: [] };
      // A new session is known by its first prompt until the server's title arrives.
      return next.sessionId === undefined && !next.title ? { ...next, title: firstLine(action.prompt) } : next;
    }
    case "event":
      return onEvent(state, action.event);
    case "request_done":
      return onRequestDone(state, action.result);
    case "request_failed":
      return onRequestFailed(state, action.message, action.code);
    case "stop_requested": {
      const idx = indexOfActiveTurn(state);
      if (idx < 0) return state;
      return replaceTurn(state, idx, { ...state.turns[idx], status: "stopping" });
    }
    case "session_loaded":
      return loadSession(state, action.session, action.events, action.requests);
    case "session_cleared":
      return {
        ...state,
        sessionId: undefined,
        title: undefined,
        baseUsage: ZERO_USAGE,
        turns: [],
        banner: undefined,
        plan: undefined,
        context: undefined,
        queued: [],
        steers: [],
      };
    case "sessions":
      return { ...state, sessions: action.sessions, sessionsLoaded: true };
    case "session_deleted": {
      const sessions = state.sessions.filter((s) => s.sessionId !== action.sessionId);
      const next = { ...state, sessions };
      return state.sessionId === action.sessionId ? reduce(next, { type: "session_cleared" }) : next;
    }
    case "server_state": {
      const banner: Banner | undefined =
        action.message !== undefined
          ? { kind: action.state === "failed" || action.state === "stopped" ? "error" : "info", message: action.message, action: action.action }
          : action.state === "running"
            ? undefined
            : state.banner;
      return { ...state, server: action.state, banner };
    }
    case "key_missing":
      return { ...state, keyMissing: action.model && action.variable ? { model: action.model, variable: action.variable } : undefined };
    case "model":
      return { ...state, model: action.model || undefined };
    case "models":
      return { ...state, models: action.models, model: action.model || state.model };
    case "approval_request":
      return onApprovalRequest(state, action.params);
    case "approval_settled":
      return settleApproval(state, action.requestId, action.toolCallId, action.state);
    case "dismiss_banner":
      return { ...state, banner: undefined };
    case "attach": {
      const merged = mergeContext([...state.attachments.map((a) => a.item), action.item]);
      if (merged.length === state.attachments.length) return state; // a duplicate, or full
      const attachment: Attachment = { key: `c${state.nextKey}`, label: contextLabel(action.item), item: action.item };
      return { ...state, attachments: [...state.attachments, attachment], nextKey: state.nextKey + 1 };
    }
    case "detach":
      return { ...state, attachments: state.attachments.filter((a) => a.key !== action.key) };
    case "changes":
      return withChanges(state, action.requestId, () => ({
        files: (Array.isArray(action.files) ? action.files : []).filter(isChangedFile).map((f) => ({ ...f })),
        truncated: action.truncated === true,
      }));
    case "changes_failed":
      return withChanges(state, action.requestId, (old) => ({ files: old?.files ?? [], truncated: old?.truncated ?? false, error: action.message }));
    case "file_undone":
      return withChanges(state, action.requestId, (old) =>
        old ? { ...old, files: old.files.map((f) => (f.path === action.path ? { ...f, undone: true } : f)) } : undefined,
      );
    case "hunk_undone":
      return withChanges(state, action.requestId, (old) =>
        old
          ? {
              ...old,
              files: old.files.map((f) =>
                f.path === action.path && !(f.undoneHunks ?? []).includes(action.index) ? { ...f, undoneHunks: [...(f.undoneHunks ?? []), action.index] } : f,
              ),
            }
          : undefined,
      );
    case "mcp_servers":
      return { ...state, mcpServers: mcpServersFrom(action.servers) };
    case "prompt_queued": {
      const items = (action.context ?? []).filter((i) => i && typeof i === "object" && typeof i.type === "string");
      const entry: QueuedPrompt = { key: action.key, prompt: action.prompt, ...(items.length > 0 ? { context: items.map(contextLabel) } : {}) };
      return { ...state, queued: [...state.queued, entry], attachments: [] };
    }
    case "queue_assigned":
      return { ...state, queued: state.queued.map((q) => (q.key === action.key ? { ...q, requestId: action.requestId } : q)) };
    case "queue_removed": {
      const queued = state.queued.filter((q) => q.key !== action.key);
      const banner: Banner | undefined = action.message ? { kind: "error", message: action.message } : state.banner;
      return { ...state, queued, banner };
    }
    case "steer_sent":
      return { ...state, steers: [...state.steers, action.text] };
  }
}

function isChangedFile(f: unknown): f is ChangedFile {
  if (!f || typeof f !== "object") return false;
  const c = f as Record<string, unknown>;
  return typeof c.path === "string" && typeof c.status === "string" && typeof c.diff === "string";
}

function withChanges(state: ViewState, requestId: string, make: (old: TurnChanges | undefined) => TurnChanges | undefined): ViewState {
  const idx = state.turns.findIndex((t) => t.requestId === requestId);
  if (idx < 0) return state;
  const turn = state.turns[idx];
  const changes = make(turn.changes);
  return changes ? replaceTurn(state, idx, { ...turn, changes }) : state;
}

/** Feeds many actions; handy for tests and for replaying a log. */
export function reduceAll(state: ViewState, actions: Iterable<Action>): ViewState {
  let s = state;
  for (const a of actions) s = reduce(s, a);
  return s;
}

function newTurn(key: string, prompt: string, replayed: boolean): Turn {
  return {
    key,
    prompt,
    items: [],
    status: replayed ? "end_turn" : "sending",
    usage: ZERO_USAGE,
    replayed,
    missedEvents: 0,
    nextSeq: 1,
    early: [],
    ended: replayed,
  };
}

function pushTurn(state: ViewState, prompt: string, requestId?: string): ViewState {
  const turn = { ...newTurn(`t${state.nextKey}`, prompt, false), requestId };
  return { ...state, turns: [...state.turns, turn], nextKey: state.nextKey + 1, banner: undefined };
}

function replaceTurn(state: ViewState, idx: number, turn: Turn): ViewState {
  const turns = state.turns.slice();
  turns[idx] = turn;
  return { ...state, turns };
}

function indexOfActiveTurn(state: ViewState): number {
  for (let i = state.turns.length - 1; i >= 0; i--) {
    if (isTurnOpen(state.turns[i])) return i;
  }
  return -1;
}

/** The turn an event or result of `requestId` belongs to, adopting a `sending` turn. */
function indexForRequest(state: ViewState, requestId: string): number {
  const known = state.turns.findIndex((t) => t.requestId === requestId);
  if (known >= 0) return known;
  return state.turns.findIndex((t) => t.requestId === undefined && t.status === "sending");
}

function onEvent(state: ViewState, event: TunaEvent): ViewState {
  if (state.sessionId !== undefined && event.sessionId !== state.sessionId) return state;
  let s = state;
  // A queued request is a pending row until it starts; then it becomes a turn (v3).
  const q = s.queued.findIndex((e) => e.requestId !== undefined && e.requestId === event.requestId);
  if (event.type === "request_queued") {
    if (q < 0) return s;
    const queued = s.queued.slice();
    queued[q] = { ...queued[q], position: num(event.position) };
    return { ...s, queued };
  }
  if (q >= 0) {
    const entry = s.queued[q];
    s = { ...s, queued: s.queued.filter((_, i) => i !== q) };
    if (event.type === "request_end") return s; // dropped before it started
    s = pushTurn(s, entry.prompt, event.requestId);
    const last = s.turns.length - 1;
    s = replaceTurn(s, last, { ...s.turns[last], nextSeq: event.seq, ...(entry.context ? { context: entry.context } : {}) });
  }
  let idx = indexForRequest(s, event.requestId);
  if (idx < 0) {
    // A request this view did not start (e.g. the Ask command before the panel opened).
    s = pushTurn(s, event.type === "request_start" ? event.prompt : "", event.requestId);
    idx = s.turns.length - 1;
  }
  const turn = s.turns[idx];
  if (turn.ended || event.seq < turn.nextSeq) return s; // late or duplicate
  if (s.sessionId === undefined) s = { ...s, sessionId: event.sessionId };

  let next: Turn = turn.requestId === undefined ? { ...turn, requestId: event.requestId } : turn;
  let sessionModel = s.model;
  if (event.seq === next.nextSeq) {
    next = applyInOrder(next, event);
    next = drainEarly(next);
  } else if (!next.early.some((e) => e.seq === event.seq)) {
    const early = [...next.early, event].sort((a, b) => a.seq - b.seq);
    next = { ...next, early };
    if (early.length > MAX_EARLY_EVENTS) next = flushEarly(next);
  }
  if (event.type === "request_start" && event.model) sessionModel = event.model;
  s = replaceTurn(s, idx, next);
  if (event.type === "plan" && Array.isArray(event.items)) s = { ...s, plan: event.items };
  if (event.type === "user_message" && s.steers.length > 0) {
    const at = s.steers.indexOf(event.text);
    s = { ...s, steers: s.steers.filter((_, i) => i !== (at >= 0 ? at : 0)) };
  }
  // The request ended: a steer it never showed the model is gone (a notice says so).
  if (event.type === "request_end" && s.steers.length > 0 && !isRunning(s)) s = { ...s, steers: [] };
  // A stopped turn reports no tokens: the meter keeps its last value (not 0%).
  if (event.type === "turn_end" && num(event.contextWindow) > 0 && num(event.contextTokens) > 0) {
    s = { ...s, context: { tokens: num(event.contextTokens), window: num(event.contextWindow) } };
  }
  return sessionModel !== s.model ? { ...s, model: sessionModel } : s;
}

function applyInOrder(turn: Turn, event: TunaEvent): Turn {
  return { ...applyEvent(turn, event), nextSeq: event.seq + 1 };
}

function drainEarly(turn: Turn): Turn {
  let t = turn;
  while (t.early.length > 0 && t.early[0].seq <= t.nextSeq && !t.ended) {
    const [first, ...rest] = t.early;
    t = { ...t, early: rest };
    if (first.seq === t.nextSeq) t = applyInOrder(t, first);
  }
  return t.ended && t.early.length > 0 ? { ...t, early: [] } : t;
}

/** Gives up on a gap: applies the early events in order and counts what never came. */
function flushEarly(turn: Turn): Turn {
  let t: Turn = { ...turn, early: [] };
  for (const event of turn.early) {
    if (t.ended) break;
    if (event.seq < t.nextSeq) continue;
    t = { ...t, missedEvents: t.missedEvents + (event.seq - t.nextSeq) };
    t = applyInOrder(t, event);
  }
  return t;
}

function applyEvent(turn: Turn, event: TunaEvent): Turn {
  switch (event.type) {
    case "request_start":
      return {
        ...turn,
        prompt: turn.prompt || event.prompt,
        status: turn.status === "sending" ? "running" : turn.status,
      };
    case "text_delta":
      return appendText(running(turn), "text", event.text);
    case "thinking_delta":
      return appendText(running(turn), "thinking", event.text);
    case "tool_call":
      return upsertTool(running(turn), event.toolCallId, {
        name: event.name,
        args: event.args ?? {},
        status: "pending",
        summary: typeof event.summary === "string" && event.summary ? event.summary : undefined,
        title: typeof event.title === "string" && event.title ? event.title : undefined,
        toolKind: event.kind,
      });
    case "tool_call_update":
      return upsertTool(running(turn), event.toolCallId, {
        name: event.name,
        status: event.status,
        result: event.result === undefined || event.result === null ? undefined : stringifyResult(event.result),
        durationMs: event.durationMs,
        reason: event.reason,
      });
    case "turn_end":
      return { ...running(turn), usage: addUsage(turn.usage, event.usage) };
    case "notice": {
      // A notice repeated back to back (a retry loop) shows once.
      const last = turn.items[turn.items.length - 1];
      if (last && last.kind === "notice" && last.message === event.message) return turn;
      const retry = RETRY_NOTICE.test(event.message);
      // The retries of one model call are one line that says which retry it is now.
      const earlier = retry ? turn.items.findIndex((item) => item.kind === "notice" && item.retry) : -1;
      if (earlier >= 0) {
        const items = turn.items.slice();
        items[earlier] = { ...(items[earlier] as NoticeItem), message: event.message };
        return { ...turn, items };
      }
      return pushItem(turn, { kind: "notice", key: `${turn.key}:${turn.items.length}`, message: event.message, ...(retry ? { retry } : {}) });
    }
    case "plan":
      return running(turn);
    case "user_message":
      return typeof event.text === "string" && event.text
        ? pushItem(running(turn), { kind: "user", key: `${turn.key}:${turn.items.length}`, text: event.text })
        : turn;
    case "compaction":
      return pushItem(turn, {
        kind: "notice",
        key: `${turn.key}:${turn.items.length}`,
        message: `Context compacted: ~${formatCount(num(event.before))} → ~${formatCount(num(event.after))} tokens`,
      });
    case "request_end":
      return endTurn(turn, event.stopReason, event.usage, event.error);
    default:
      return turn; // an event type from a newer server
  }
}

function running(turn: Turn): Turn {
  return turn.status === "sending" ? { ...turn, status: "running" } : turn;
}

function pushItem(turn: Turn, item: Item): Turn {
  return { ...turn, items: [...turn.items, item] };
}

function appendText(turn: Turn, kind: "text" | "thinking", text: string): Turn {
  if (!text) return turn;
  const last = turn.items[turn.items.length - 1];
  if (last && last.kind === kind) {
    const items = turn.items.slice();
    items[items.length - 1] = { ...last, text: last.text + text };
    return { ...turn, items };
  }
  return pushItem(turn, { kind, key: `${turn.key}:${turn.items.length}`, text });
}

const TOOL_STATUS_RANK: Record<ToolStatus, number> = {
  pending: 0,
  awaiting_approval: 1,
  in_progress: 1,
  completed: 2,
  failed: 2,
  cancelled: 2,
};

function upsertTool(
  turn: Turn,
  toolCallId: string,
  patch: Partial<Omit<ToolItem, "kind" | "key" | "toolCallId" | "status">> & { status: ToolStatus },
): Turn {
  const idx = turn.items.findIndex((i) => i.kind === "tool" && i.toolCallId === toolCallId);
  if (idx < 0) {
    const item: ToolItem = {
      kind: "tool",
      key: `${turn.key}:tool:${toolCallId}`,
      toolCallId,
      name: patch.name ?? "tool",
      args: patch.args ?? {},
      status: patch.status,
      result: patch.result,
      durationMs: patch.durationMs,
      summary: patch.summary,
      title: patch.title,
      toolKind: patch.toolKind,
      reason: patch.reason,
      approval: patch.approval,
    };
    return pushItem(turn, item);
  }
  const current = turn.items[idx] as ToolItem;
  // A status never goes back (an update can arrive before its tool_call after a gap).
  const status = TOOL_STATUS_RANK[patch.status] >= TOOL_STATUS_RANK[current.status] && !FINAL_TOOL_STATUSES.has(current.status)
    ? patch.status
    : current.status;
  const updated: ToolItem = {
    ...current,
    name: patch.name || current.name,
    args: patch.args && Object.keys(current.args).length === 0 ? patch.args : current.args,
    status,
    result: patch.result ?? current.result,
    durationMs: patch.durationMs ?? current.durationMs,
    summary: patch.summary ?? current.summary,
    title: patch.title ?? current.title,
    toolKind: patch.toolKind ?? current.toolKind,
    reason: patch.reason ?? current.reason,
    approval: patch.approval ?? settledByStatus(current.approval, status),
  };
  const items = turn.items.slice();
  items[idx] = updated;
  return { ...turn, items };
}

/** An approval still asking when its call finished was answered elsewhere, or cancelled. */
function settledByStatus(approval: Approval | undefined, status: ToolStatus): Approval | undefined {
  if (!approval || approval.state !== "asking") return approval;
  if (status === "in_progress" || status === "completed") return { ...approval, state: "allow" };
  if (FINAL_TOOL_STATUSES.has(status)) return { ...approval, state: "cancelled" };
  return approval;
}

function findTool(state: ViewState, requestId: string, toolCallId: string): { turn: number; item: number } | undefined {
  for (let t = state.turns.length - 1; t >= 0; t--) {
    const turn = state.turns[t];
    if (turn.requestId !== undefined && turn.requestId !== requestId) continue;
    const item = turn.items.findIndex((i) => i.kind === "tool" && i.toolCallId === toolCallId);
    if (item >= 0) return { turn: t, item };
  }
  return undefined;
}

function onApprovalRequest(state: ViewState, params: ApproveParams): ViewState {
  const approval: Approval = {
    state: "asking",
    detail: typeof params.detail === "string" ? params.detail : "",
    detailKind: params.detailKind === "diff" || params.detailKind === "command" ? params.detailKind : "arguments",
    truncated: params.truncated === true,
    summary: params.summary ?? "",
    ...(Array.isArray(params.alwaysAllow) && params.alwaysAllow.length > 0
      ? { alwaysAllow: params.alwaysAllow.filter((r) => typeof r === "string") }
      : {}),
    ...(typeof params.rule === "string" && params.rule ? { rule: params.rule } : {}),
  };
  let s = state;
  let idx = indexForRequest(s, params.requestId);
  if (idx < 0) {
    s = pushTurn(s, "", params.requestId);
    idx = s.turns.length - 1;
  }
  const turn = s.turns[idx];
  const existing = turn.items.find((i) => i.kind === "tool" && i.toolCallId === params.toolCallId) as ToolItem | undefined;
  const status: ToolStatus = existing && TOOL_STATUS_RANK[existing.status] > 1 ? existing.status : "awaiting_approval";
  if (existing && FINAL_TOOL_STATUSES.has(existing.status)) return s; // already over
  const next = upsertTool(turn.requestId ? turn : { ...turn, requestId: params.requestId }, params.toolCallId, {
    name: params.tool,
    status,
    summary: params.summary || undefined,
    approval,
  });
  return replaceTurn(s, idx, running(next));
}

function settleApproval(state: ViewState, requestId: string, toolCallId: string, to: Exclude<ApprovalState, "asking">): ViewState {
  const where = findTool(state, requestId, toolCallId);
  if (!where) return state;
  const turn = state.turns[where.turn];
  const item = turn.items[where.item] as ToolItem;
  if (!item.approval || item.approval.state !== "asking") return state;
  const items = turn.items.slice();
  items[where.item] = { ...item, approval: { ...item.approval, state: to } };
  return replaceTurn(state, where.turn, { ...turn, items });
}

function formatCount(n: number): string {
  return n < 1000 ? String(n) : `${(n / 1000).toFixed(1)}k`;
}

function stringifyResult(result: unknown): string {
  if (typeof result === "string") return result;
  try {
    return JSON.stringify(result, null, 2);
  } catch {
    return String(result);
  }
}

/** Ends a turn; tool calls still open are settled so no card spins forever. */
function endTurn(
  turn: Turn,
  stopReason: StopReason,
  usage: Partial<Usage> | undefined,
  error: ErrorInfo | undefined,
): Turn {
  const settleAs: ToolStatus = stopReason === "error" ? "failed" : "cancelled";
  const items = turn.items.map((item) =>
    item.kind === "tool" && !FINAL_TOOL_STATUSES.has(item.status)
      ? { ...item, status: settleAs, approval: settledByStatus(item.approval, settleAs) }
      : item,
  );
  return {
    ...turn,
    items,
    status: stopReason,
    usage: usage ? toUsage(usage) : turn.usage,
    error: error
      ? { message: error.message, hint: hintForKind(error.kind) ?? hintForStopReason(stopReason), ...(error.kind ? { kind: error.kind } : {}) }
      : turn.error,
    ended: true,
    early: [],
  };
}

function hintForStopReason(stopReason: StopReason): string | undefined {
  switch (stopReason) {
    case "error":
      return "Retry, Choose model, or Open Settings (tunacode.model, tunacode.baseUrl, API key); Show Logs has the details.";
    case "max_turns":
      return "The request used all its turns: raise tunacode.maxTurns or ask it to continue.";
    case "max_cost":
      return "Stopped at the request's cost cap before the next model call: ask it to continue with a higher cap.";
    case "timeout":
      return "Timed out (not stopped by you): the request ran longer than tunacode.requestTimeout. Retry, or raise the setting.";
    default:
      return undefined;
  }
}

function onRequestDone(state: ViewState, result: RequestResult): ViewState {
  let s = state;
  if (s.sessionId !== undefined && result.sessionId !== s.sessionId) return s;
  // A queued request dropped before it started (removed by the person, or a shutdown).
  if (s.queued.some((q) => q.requestId === result.requestId)) {
    return { ...s, queued: s.queued.filter((q) => q.requestId !== result.requestId) };
  }
  let idx = indexForRequest(s, result.requestId);
  if (idx < 0) {
    s = pushTurn(s, "", result.requestId);
    idx = s.turns.length - 1;
  }
  let turn = s.turns[idx];
  if (turn.requestId === undefined) turn = { ...turn, requestId: result.requestId };
  if (turn.early.length > 0) turn = flushEarly(turn);
  if (!turn.ended) {
    turn = endTurn(turn, result.stopReason, result.usage, result.error);
  }
  turn = reconcileWithResult(turn, result);
  if (Array.isArray(result.changedFiles) && result.changedFiles.length > 0) {
    turn = { ...turn, changedFiles: result.changedFiles.filter((f) => typeof f === "string") };
  }
  s = replaceTurn(s, idx, turn);
  return s.sessionId === undefined ? { ...s, sessionId: result.sessionId } : s;
}

/** Fills in what missed events left out, from the request's final result. */
function reconcileWithResult(turn: Turn, result: RequestResult): Turn {
  let t = turn;
  for (const call of result.toolCalls ?? []) {
    const existing = t.items.find((i) => i.kind === "tool" && i.toolCallId === call.toolCallId) as ToolItem | undefined;
    if (!existing) {
      t = upsertTool(t, call.toolCallId, { name: call.name, status: call.status, durationMs: call.durationMs });
    } else if (existing.durationMs === undefined && call.durationMs !== undefined) {
      t = upsertTool(t, call.toolCallId, { status: existing.status, durationMs: call.durationMs });
    }
  }
  const texts = t.items.filter((i): i is TextItem => i.kind === "text");
  if (result.text) {
    if (texts.length === 0) {
      t = pushItem(t, { kind: "text", key: `${t.key}:${t.items.length}`, text: result.text });
    } else if (t.missedEvents > 0) {
      const last = texts[texts.length - 1];
      if (last.text !== result.text) {
        const items = t.items.map((i) => (i === last ? { ...last, text: result.text } : i));
        t = { ...t, items };
      }
    }
  }
  return t;
}

function onRequestFailed(state: ViewState, message: string, code: number | undefined): ViewState {
  const idx = indexOfActiveTurn(state);
  if (idx < 0) return { ...state, banner: { kind: "error", message } };
  const turn = state.turns[idx];
  if (code === -32800) {
    return replaceTurn(state, idx, endTurn(turn, "cancelled", undefined, undefined));
  }
  const failed: Turn = {
    ...turn,
    contextItems: undefined,
    status: "failed",
    error: { message, hint: hintForError(code, message) },
    items: turn.items.map((item) =>
      item.kind === "tool" && !FINAL_TOOL_STATUSES.has(item.status) ? { ...item, status: "failed" as ToolStatus } : item,
    ),
    ended: true,
    early: [],
  };
  const next = replaceTurn(state, idx, failed);
  // The request never started: its context goes back to the chips, to send again.
  if (!turn.contextItems || turn.contextItems.length === 0 || next.attachments.length > 0) return next;
  return turn.contextItems.reduce((s, item) => reduce(s, { type: "attach", item }), next);
}

/**
 * A stored session, from the server's projection of its history: the events of each request,
 * fed through the same reducer as live events. A replayed turn keeps its request id only when
 * the server has checkpoints for it (`requests`), so Changes and Rewind are offered only there.
 */
function loadSession(state: ViewState, session: Session, events: TunaEvent[] = [], requests: RequestMark[] = []): ViewState {
  let s: ViewState = {
    ...state,
    sessionId: session.sessionId,
    title: session.title,
    model: session.model || state.model,
    baseUsage: toUsage(session.usage),
    turns: [],
    plan: undefined,
    context: undefined,
    banner: undefined,
  };
  for (const event of Array.isArray(events) ? events : []) {
    if (event && typeof event === "object" && typeof event.type === "string") s = onEvent(s, event);
  }
  const checkpointed = new Set(requests.map((r) => r.requestId));
  const turns = s.turns.map((turn) => {
    const ended = turn.ended ? turn : endTurn(turn, "cancelled", undefined, undefined);
    return { ...ended, replayed: true, requestId: turn.requestId && checkpointed.has(turn.requestId) ? turn.requestId : undefined };
  });
  return { ...s, turns, title: session.title, model: session.model || s.model };
}
