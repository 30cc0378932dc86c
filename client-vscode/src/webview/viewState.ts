/**
 * The side panel's view state: what the reducer (state.ts) builds from `tunacode/event`s and
 * request results, the actions it takes, and the empty state. Types and constants only.
 */

import type {
  ApprovalDecision,
  ApproveParams,
  ChangedFile,
  ContextItem,
  ErrorKind,
  McpServerInfo,
  PlanItem,
  RequestMark,
  RequestResult,
  Session,
  StopReason,
  ToolEndReason,
  ToolKind,
  ToolStatus,
  TunaEvent,
  Usage,
} from "../protocol";

export interface TextItem {
  kind: "text";
  key: string;
  text: string;
}

export interface ThinkingItem {
  kind: "thinking";
  key: string;
  text: string;
}

export interface ToolItem {
  kind: "tool";
  key: string;
  toolCallId: string;
  name: string;
  args: Record<string, unknown>;
  status: ToolStatus;
  result?: string;
  durationMs?: number;
  /** v2: the server's one-line summary of the call. */
  summary?: string;
  /** v3: the call in plain words (`Edit calc.py (+1 -1)`), and what the tool is. */
  title?: string;
  toolKind?: ToolKind;
  /** v3: why a failed or cancelled call ended (`denied`, `policy`, `error`, `timeout`, `aborted`). */
  reason?: ToolEndReason;
  /** The approval asked for this call (`tunacode/approve`), and how it was settled. */
  approval?: Approval;
}

/** `asking`: buttons shown; `cancelled`: the request ended before an answer. */
export type ApprovalState = "asking" | ApprovalDecision | "cancelled";

export interface Approval {
  state: ApprovalState;
  detail: string;
  detailKind: ApproveParams["detailKind"];
  truncated: boolean;
  summary: string;
  /** v3: the allow rules "Always allow" would save (absent: not offered) */
  alwaysAllow?: string[];
  /** v3: the permission rule that made it ask */
  rule?: string;
}

export interface NoticeItem {
  kind: "notice";
  key: string;
  message: string;
  /** A model-call retry ("retrying in 2.0 s (retry 1 of 3)"): one line, updated in place. */
  retry?: boolean;
}

/** The server's retry notice (agent/provider/stream.py). */
export const RETRY_NOTICE = /retrying in [\d.]+ s \(retry \d+ of \d+\)/;

/** v3: a steer (`tunacode.steer`) as the model saw it (the server's `user_message` event). */
export interface UserItem {
  kind: "user";
  key: string;
  text: string;
}

export type Item = TextItem | ThinkingItem | ToolItem | NoticeItem | UserItem;

/** v3: a prompt sent with `queue: true`, waiting for its turn (a pending row, not a turn yet). */
export interface QueuedPrompt {
  /** The host's key for it (known before the server names the request). */
  key: string;
  prompt: string;
  /** The request's id, once its `request_queued` event came. */
  requestId?: string;
  /** `request_queued`'s position (1: the next to start). */
  position?: number;
  context?: string[];
}

/** `sending`: asked, no event yet; `failed`: the request never started (JSON-RPC error). */
export type TurnStatus = "sending" | "running" | "stopping" | StopReason | "failed";

export interface TurnError {
  message: string;
  hint?: string;
  /** v3: the server's classification of a failed model call. */
  kind?: ErrorKind;
}

/** The failed turn's buttons: Retry resends its prompt; the rest as the banner's actions. */
export type ErrorButton = "retry" | "chooseModel" | "openSettings" | "setApiKey" | "showLogs";

export interface Turn {
  key: string;
  requestId?: string;
  prompt: string;
  items: Item[];
  status: TurnStatus;
  error?: TurnError;
  /** Usage of this request: the sum of its turns so far, then request_end's total. */
  usage: Usage;
  replayed: boolean;
  /** Events lost for good (a seq gap that never filled). */
  missedEvents: number;
  /** The seq expected next, and events that came early, waiting for the gap to fill. */
  nextSeq: number;
  early: TunaEvent[];
  ended: boolean;
  /** v2: the files the request changed (RequestResult.changedFiles). */
  changedFiles?: string[];
  /** The request's changes with their diffs (`tunacode.changes`), once asked for. */
  changes?: TurnChanges;
  /** Labels of the context items sent with the prompt (selection, files, images). */
  context?: string[];
  /** The items themselves: back to the chips if the request never starts. */
  contextItems?: ContextItem[];
}

/** A context item waiting to go with the next prompt (a chip above the prompt box). */
export interface Attachment {
  key: string;
  label: string;
  item: ContextItem;
}

/** A request's changed files for the Changes list; `undone` after a per-file Undo. */
export interface ChangeEntry extends ChangedFile {
  undone?: boolean;
  /** The hunks (indexes in its diff) undone one by one in the Changes list. */
  undoneHunks?: number[];
}

export interface TurnChanges {
  files: ChangeEntry[];
  truncated: boolean;
  error?: string;
}

export type ServerState = "starting" | "running" | "stopped" | "failed";

export interface Banner {
  kind: "error" | "info";
  message: string;
  action?: BannerAction;
}

export type BannerAction = "openSettings" | "showLogs" | "restart" | "retry" | "setApiKey";

export interface ViewState {
  sessionId?: string;
  title?: string;
  model?: string;
  /** Usage the server had recorded for the session when it was loaded. */
  baseUsage: Usage;
  turns: Turn[];
  sessions: Session[];
  sessionsLoaded: boolean;
  server: ServerState;
  banner?: Banner;
  nextKey: number;
  /** The agent's latest plan (`plan` events), for the checklist. */
  plan?: PlanItem[];
  /** The context meter, from the last `turn_end` that carried it. */
  context?: { tokens: number; window: number };
  /** First run: the model in use has no key; Send waits for one. */
  keyMissing?: { model: string; variable: string };
  /** Models from `tunacode.models.list`, for the picker. */
  models?: string[];
  /** MCP servers from `tunacode.status` (undefined: not known yet, or none configured). */
  mcpServers?: McpServerInfo[];
  /** Context for the next prompt. */
  attachments: Attachment[];
  /** v3: prompts queued behind the running request, in the order they start. */
  queued: QueuedPrompt[];
  /** v3: steers accepted by the server that the model has not seen yet. */
  steers: string[];
}

export type Action =
  | { type: "prompt_sent"; prompt: string; context?: ContextItem[] }
  | { type: "attach"; item: ContextItem }
  | { type: "detach"; key: string }
  | { type: "event"; event: TunaEvent }
  | { type: "request_done"; result: RequestResult }
  | { type: "request_failed"; message: string; code?: number }
  | { type: "stop_requested" }
  | { type: "session_loaded"; session: Session; events: TunaEvent[]; requests?: RequestMark[] }
  | { type: "session_cleared" }
  | { type: "sessions"; sessions: Session[] }
  | { type: "session_deleted"; sessionId: string }
  | { type: "server_state"; state: ServerState; message?: string; action?: BannerAction }
  | { type: "model"; model?: string }
  /** The model in use has no key (absent fields: it has one). */
  | { type: "key_missing"; model?: string; variable?: string }
  | { type: "models"; models: string[]; model?: string }
  | { type: "approval_request"; params: ApproveParams }
  | { type: "approval_settled"; requestId: string; toolCallId: string; state: Exclude<ApprovalState, "asking"> }
  | { type: "dismiss_banner" }
  | { type: "changes"; requestId: string; files: ChangedFile[]; truncated: boolean }
  | { type: "changes_failed"; requestId: string; message: string }
  | { type: "file_undone"; requestId: string; path: string }
  | { type: "hunk_undone"; requestId: string; path: string; index: number }
  | { type: "mcp_servers"; servers: unknown }
  /** v3: a prompt sent with `queue: true` (the host's key); its request id once known. */
  | { type: "prompt_queued"; key: string; prompt: string; context?: ContextItem[] }
  | { type: "queue_assigned"; key: string; requestId: string }
  /** The queued prompt is gone before it started (removed, refused); `message` when refused. */
  | { type: "queue_removed"; key: string; message?: string }
  /** v3: `tunacode.steer` answered `accepted: true`: pending until its `user_message`. */
  | { type: "steer_sent"; text: string };

/** Early events kept while waiting for a gap to fill; past this the gap counts as lost. */
export const MAX_EARLY_EVENTS = 64;

export const ZERO_USAGE: Usage = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  totalTokens: 0,
  cost: 0,
});

export function initialState(): ViewState {
  return {
    baseUsage: ZERO_USAGE,
    turns: [],
    sessions: [],
    sessionsLoaded: false,
    server: "starting",
    nextKey: 1,
    attachments: [],
    queued: [],
    steers: [],
  };
}
