/**
 * The TunaCode wire contract (docs/protocol.md) as TypeScript types: command params and
 * results, and the `tunacode/event` notification. Shared by the extension host and the
 * webview; no runtime code besides the names.
 */

export const EVENT_NOTIFICATION = "tunacode/event";

export const Commands = {
  request: "tunacode.request",
  commandsList: "tunacode.commands.list",
  abort: "tunacode.abort",
  sessionNew: "tunacode.session.new",
  sessionList: "tunacode.session.list",
  sessionGet: "tunacode.session.get",
  sessionDelete: "tunacode.session.delete",
  modelsList: "tunacode.models.list",
  status: "tunacode.status",
  changes: "tunacode.changes",
  sessionRewind: "tunacode.session.rewind",
  sessionCompact: "tunacode.session.compact",
  steer: "tunacode.steer",
} as const;

/** Server -> client requests of protocol v2 (docs: /notes/v2-client-contract.md). */
export const ClientRequests = {
  approve: "tunacode/approve",
  saveDocuments: "tunacode/saveDocuments",
  diagnostics: "tunacode/diagnostics",
} as const;

/** What this client advertises in `capabilities.experimental.tunacode`. */
export const CLIENT_CAPABILITIES = { approve: true, saveDocuments: true, diagnostics: true } as const;

export type ApprovalDetailKind = "command" | "diff" | "arguments";

export interface ApproveParams {
  sessionId: string;
  requestId: string;
  toolCallId: string;
  tool: string;
  summary: string;
  detail: string;
  detailKind: ApprovalDetailKind;
  truncated?: boolean;
  /** v3: the file changed is one a tool runs outside the sandbox (`.vscode/tasks.json`); never auto-approved */
  runsCodeOutside?: boolean;
  /** v3: the permission rule that made it ask */
  rule?: string;
  /** v3: the allow rules "Always allow" would save (absent: not offered) */
  alwaysAllow?: string[];
}

/** The panel's answers; the two "always" ones go on the wire as `allow_always` with a scope. */
export type ApprovalDecision = "allow" | "allow_session" | "deny" | "allow_always_user" | "allow_always_project";

export interface ApproveResult {
  decision: "allow" | "allow_session" | "deny" | "allow_always";
  /** v3, with `allow_always`: the settings file the `alwaysAllow` rules are saved to */
  scope?: "user" | "project";
}

export interface SaveDocumentsParams {
  uris: string[];
}
export interface SaveDocumentsResult {
  saved: string[];
}
export interface DiagnosticsParams {
  uris: string[];
}

export interface ChangedFile {
  path: string;
  status: string;
  diff: string;
}
export type ChangeStatus = "added" | "modified" | "deleted";

/** `tunacode.status`'s MCP servers (docs/mcp.md). */
export interface McpServerInfo {
  name: string;
  state: "starting" | "ready" | "failed" | "not_allowed";
  tools: number;
  error?: string;
}

export interface ActiveRequest {
  requestId: string;
  sessionId: string;
  startedAt: string;
  /** v3: waiting for its turn (`queue: true`) */
  queued?: boolean;
}

/** `tunacode.status`'s shell sandbox. */
export interface SandboxInfo {
  mode: "auto" | "required" | "off";
  active: boolean;
  reason?: string;
}

/** v3: a command started with `bash {background: true}`. */
export interface BackgroundProcessInfo {
  processId: string;
  sessionId: string;
  command: string;
  pid: number;
  running: boolean;
  exitCode?: number;
}

export interface StatusResult {
  version?: string;
  protocolVersion?: number;
  activeRequests?: ActiveRequest[];
  sessionStore?: string;
  mcpServers?: McpServerInfo[];
  sandbox?: SandboxInfo;
  backgroundProcesses?: BackgroundProcessInfo[];
  /** v3: each setting's effective value and where it came from; the settings files */
  settings?: SettingsInfo;
}

/** v3: one setting's effective value and its source (editor, environment, project, user, default, joined) */
export interface SettingValue {
  value: unknown;
  source: string;
}

export interface SettingsFileInfo {
  source: string;
  path: string;
  exists: boolean;
  fingerprint?: string;
  consented?: boolean;
  heldBack?: string[];
  problems?: string[];
}

export interface SettingsInfo {
  values: Record<string, SettingValue>;
  files: SettingsFileInfo[];
}

/** USD per million tokens, from the model catalog. */
export interface ModelCostInfo {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
}

export interface ModelInfo {
  id: string;
  provider: string;
  configured: boolean;
  /** v3, from the model catalog (absent for a model it does not know) */
  contextWindow?: number;
  maxOutput?: number;
  input?: ("text" | "image")[];
  reasoning?: boolean;
  cost?: ModelCostInfo;
}
export interface ModelsListResult {
  models: ModelInfo[];
  default: string;
}

/** v3: what failed (the server classifies it, agent/error_kinds.py). */
export type ErrorKind = "auth" | "rate_limit" | "overloaded" | "context_length" | "network" | "timeout" | "bad_request" | "server" | "unknown";

/** A request's error; `kind` (v3) when a model call failed. */
export interface ErrorInfo {
  message: string;
  kind?: ErrorKind;
}

/** v3: `tunacode.steer`'s result. */
export interface SteerResult {
  accepted: boolean;
}

/** v3: `tunacode.request {detach: true}`'s answer. */
export interface DetachedRequest {
  requestId: string;
  sessionId: string;
}

export interface AbortResult {
  aborted: number;
}
export interface DeleteResult {
  deleted: boolean;
}

export interface RewindResult {
  session: Session;
  restored: string[];
}

export interface ChangesResult {
  files: ChangedFile[];
  truncated: boolean;
}

export type PlanStatus = "pending" | "in_progress" | "completed";
export interface PlanItem {
  content: string;
  status: PlanStatus;
  activeForm?: string;
}

/** JSON-RPC error codes the server uses for requests that never start. */
export const ErrorCodes = {
  invalidParams: -32602,
  unknownSession: -32001,
  sessionBusy: -32002,
  modelNotUsable: -32003,
  /** `tunacode.session.rewind`: files changed since the agent wrote them (`data.files`). */
  rewindConflict: -32004,
  requestCancelled: -32800,
} as const;

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  totalTokens: number;
  cost: number;
}

export type StopReason = "end_turn" | "cancelled" | "max_turns" | "max_cost" | "timeout" | "error";

export type ToolStatus = "pending" | "awaiting_approval" | "in_progress" | "completed" | "failed" | "cancelled";

/** v3: what a tool is (ACP's ToolKind). */
export type ToolKind = "read" | "edit" | "delete" | "move" | "search" | "execute" | "fetch" | "think" | "other";

/** v3: why a call ended failed or cancelled. */
export type ToolEndReason = "denied" | "policy" | "error" | "timeout" | "aborted";

export interface Session {
  sessionId: string;
  title: string;
  cwd: string;
  projectId?: string;
  model?: string;
  createdAt: string;
  modifiedAt: string;
  messageCount: number;
  usage?: Partial<Usage>;
  busy?: boolean;
}

/** LSP's range: 0-based lines, characters in UTF-16 code units. */
export interface LspRange {
  start: { line: number; character: number };
  end: { line: number; character: number };
}

/** `tunacode.request`'s context items (docs/protocol.md, "Context from the editor"). */
export type ContextItem =
  | { type: "file"; uri: string }
  | { type: "selection"; uri: string; range: LspRange; text?: string }
  | { type: "diagnostic"; uri: string; range: LspRange; message: string; severity?: number; source?: string; code?: string | number }
  | { type: "image"; mimeType: string; data: string };

export interface RequestParams {
  prompt: string;
  sessionId?: string;
  model?: string;
  maxTurns?: number;
  context?: ContextItem[];
}

export interface ToolCallSummary {
  toolCallId: string;
  name: string;
  status: ToolStatus;
  durationMs?: number;
}

export interface RequestResult {
  sessionId: string;
  requestId: string;
  stopReason: StopReason;
  text: string;
  usage?: Partial<Usage>;
  turns?: number;
  toolCalls?: ToolCallSummary[];
  error?: ErrorInfo;
  /** v2: files the request changed. */
  changedFiles?: string[];
}

export interface SessionListResult {
  sessions: Session[];
}

export interface SessionGetResult {
  session: Session;
  messages: StoredMessage[];
  plan?: PlanItem[];
  /** v2: where each request with checkpoints starts (its prompt's index in `messages`). */
  requests?: RequestMark[];
  /** v3, with `events: true`: every stored request as the events a client received live. */
  events?: TunaEvent[];
}

export interface RequestMark {
  requestId: string;
  firstMessage: number;
}

/** A message in tinyagent's own dump, as `tunacode.session.get` returns it. */
export type StoredMessage =
  | { role: "user"; content: StoredBlock[]; timestamp?: number }
  | {
      role: "assistant";
      content: (StoredBlock | null)[];
      stop_reason?: string;
      error_message?: string;
      usage?: Record<string, unknown>;
      timestamp?: number;
    }
  | {
      role: "tool_result";
      tool_call_id?: string;
      tool_name?: string;
      content: StoredBlock[];
      is_error?: boolean;
      timestamp?: number;
    };

export type StoredBlock =
  | { type: "text"; text?: string }
  | { type: "thinking"; thinking?: string }
  | { type: "tool_call"; id?: string; name?: string; arguments?: Record<string, unknown> }
  | { type: "image"; url?: string; mime_type?: string };

interface EventBase {
  sessionId: string;
  requestId: string;
  seq: number;
}

export type TunaEvent = EventBase &
  (
    | { type: "request_start"; prompt: string; model?: string }
    | { type: "text_delta"; text: string }
    | { type: "thinking_delta"; text: string }
    | {
        type: "tool_call";
        toolCallId: string;
        name: string;
        args?: Record<string, unknown>;
        status: "pending";
        /** v2: the server's one-line summary without the tool name, e.g. `npm test`. */
        summary?: string;
        /** v3: what the tool is */
        kind?: ToolKind;
        /** v3: plain words for a person, e.g. `Edit calc.py (+1 -1)` */
        title?: string;
      }
    | {
        type: "tool_call_update";
        toolCallId: string;
        name: string;
        status: ToolStatus;
        result?: unknown;
        durationMs?: number;
        /** the user (or read-only mode) declined the call */
        denied?: boolean;
        /** bash's exit code */
        exitCode?: number;
        /** v3: failed/cancelled: why */
        reason?: ToolEndReason;
      }
    | { type: "turn_end"; turn: number; usage?: Partial<Usage>; contextTokens?: number; contextWindow?: number }
    | { type: "plan"; items: PlanItem[] }
    | { type: "compaction"; before: number; after: number }
    | { type: "notice"; message: string }
    | { type: "request_end"; stopReason: StopReason; usage?: Partial<Usage>; error?: ErrorInfo }
    /** v3: a queued request's first event (`queue: true`); 1 is the next to start */
    | { type: "request_queued"; position: number }
    /** v3: a steer (tunacode.steer) as the model saw it, stored as a user message there */
    | { type: "user_message"; text: string }
  );

export type TunaEventType = TunaEvent["type"];
