/**
 * Questions about the view state (is a request running, which approvals wait, the session's
 * usage, what to do about an error) and the pure helpers the panel renders with (MCP status
 * line, file links, diff lines). No DOM and no `vscode` import.
 */

import type { ErrorKind, McpServerInfo, ToolStatus, Usage } from "../protocol";
import {
  type ErrorButton,
  type ToolItem,
  type Turn,
  type TurnStatus,
  type ViewState,
  ZERO_USAGE,
} from "./viewState";

export const FINAL_TOOL_STATUSES: ReadonlySet<ToolStatus> = new Set(["completed", "failed", "cancelled"]);

/** A tool call that did not run because it was refused (the user, or the mode): shown as "denied". */
export function isDenied(item: ToolItem): boolean {
  if (item.approval?.state === "deny") return item.status !== "completed";
  return item.status === "failed" && (item.reason === "denied" || item.reason === "policy");
}

/** Tool cards waiting for an answer, oldest first. */
export function pendingApprovals(state: ViewState): ToolItem[] {
  const out: ToolItem[] = [];
  for (const turn of state.turns) {
    for (const item of turn.items) if (item.kind === "tool" && item.approval?.state === "asking") out.push(item);
  }
  return out;
}

/** "1 message", "2 messages". */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

const OPEN_TURN_STATUSES: ReadonlySet<TurnStatus> = new Set(["sending", "running", "stopping"]);

export function isTurnOpen(turn: Turn): boolean {
  return OPEN_TURN_STATUSES.has(turn.status);
}

export function activeTurn(state: ViewState): Turn | undefined {
  for (let i = state.turns.length - 1; i >= 0; i--) {
    if (isTurnOpen(state.turns[i])) return state.turns[i];
  }
  return undefined;
}

export function isRunning(state: ViewState): boolean {
  return activeTurn(state) !== undefined;
}

/** The session's usage: what the server had recorded, plus the requests made since. */
export function sessionUsage(state: ViewState): Usage {
  return state.turns
    .filter((turn) => !turn.replayed)
    .reduce((sum, turn) => addUsage(sum, turn.usage), state.baseUsage);
}

export function addUsage(a: Usage, b: Partial<Usage> | undefined): Usage {
  if (!b) return a;
  return {
    inputTokens: a.inputTokens + num(b.inputTokens),
    outputTokens: a.outputTokens + num(b.outputTokens),
    cacheReadTokens: a.cacheReadTokens + num(b.cacheReadTokens),
    cacheWriteTokens: a.cacheWriteTokens + num(b.cacheWriteTokens),
    totalTokens: a.totalTokens + num(b.totalTokens),
    cost: a.cost + num(b.cost),
  };
}

export function toUsage(u: Partial<Usage> | undefined): Usage {
  return addUsage(ZERO_USAGE, u);
}

export function firstLine(text: string, max = 60): string {
  const line = text.trim().split("\n", 1)[0];
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export function num(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

/** What a person can do about a request that failed to start, by JSON-RPC error code. */
export function hintForError(code: number | undefined, message: string): string | undefined {
  switch (code) {
    case -32003:
      return "Set a usable model: Choose model, or Open Settings for tunacode.model (e.g. openai:gpt-4.1), tunacode.baseUrl for openai-compatible, and the provider's API key in the server's environment.";
    case -32002:
      return "This session is busy with another request: wait for it, or press Stop.";
    case -32001:
      return "The session no longer exists: start a new session.";
    case -32602:
      return "The server refused the request's parameters; see Show Logs.";
    default:
      if (/not running|connection|disposed|stopped/i.test(message)) {
        return "The TunaCode server is not running: use Restart Server, or Show Logs to see why.";
      }
      return undefined;
  }
}

/** Which ways out a failed turn offers, by the server's error kind (all of them when unknown). */
export function errorButtons(kind: ErrorKind | undefined): ErrorButton[] {
  switch (kind) {
    case "auth":
      return ["openSettings", "setApiKey", "chooseModel", "showLogs"];
    case "bad_request":
      return ["chooseModel", "openSettings", "showLogs"];
    case "context_length":
      return ["chooseModel", "retry", "showLogs"];
    case "rate_limit":
    case "overloaded":
    case "network":
    case "timeout":
    case "server":
      return ["retry", "chooseModel", "showLogs"];
    default:
      return ["retry", "chooseModel", "openSettings", "showLogs"];
  }
}

/** What to do about a failed model call, by its kind. */
export function hintForKind(kind: ErrorKind | undefined): string | undefined {
  switch (kind) {
    case "auth":
      return "The provider refused the API key: set the key (Set API Key, or the provider's variable in tunacode.server.env), or Open Settings.";
    case "rate_limit":
      return "The provider's rate limit: wait a moment and Retry, or choose another model.";
    case "overloaded":
      return "The provider is overloaded right now: Retry in a moment, or choose another model.";
    case "context_length":
      return "The conversation no longer fits the model's context window: start a new session, or choose a model with a larger window.";
    case "network":
      return "The model's endpoint could not be reached: check tunacode.baseUrl and the network, then Retry.";
    case "timeout":
      return "The model did not answer in time: Retry, or raise tunacode.streamReadTimeout.";
    case "bad_request":
      return "The provider refused the request: check the model name and settings (Show Logs has the details).";
    case "server":
      return "The provider had an internal error: Retry, or choose another model.";
    default:
      return undefined;
  }
}

/** The server's mark on a change that lives only in an editor buffer (not on disk). */
export const BUFFER_ONLY_MARK = "(in the editor's buffer, not saved)";

export function isBufferOnly(diff: string): boolean {
  return diff.trimEnd().endsWith(BUFFER_ONLY_MARK);
}

const MCP_STATES: ReadonlySet<string> = new Set(["starting", "ready", "failed", "not_allowed"]);

/** `tunacode.status`'s `mcpServers`, checked: unknown states and malformed rows are dropped. */
export function mcpServersFrom(raw: unknown): McpServerInfo[] | undefined {
  if (!Array.isArray(raw)) return undefined;
  const out: McpServerInfo[] = [];
  for (const s of raw) {
    if (!s || typeof s !== "object") continue;
    const r = s as Record<string, unknown>;
    if (typeof r.name !== "string" || typeof r.state !== "string" || !MCP_STATES.has(r.state)) continue;
    out.push({
      name: r.name,
      state: r.state as McpServerInfo["state"],
      tools: typeof r.tools === "number" && Number.isFinite(r.tools) ? r.tools : 0,
      ...(typeof r.error === "string" && r.error ? { error: r.error } : {}),
    });
  }
  return out;
}

/** One line for the panel: `MCP: 2 ready · 1 failed`; undefined without servers. */
export function mcpSummary(
  servers: McpServerInfo[] | undefined,
): { text: string; level: "ok" | "busy" | "error"; detail: string; reason: string } | undefined {
  if (!servers || servers.length === 0) return undefined;
  const count = (state: McpServerInfo["state"]): number => servers.filter((s) => s.state === state).length;
  const parts: string[] = [];
  const labels: [McpServerInfo["state"], string][] = [
    ["ready", "ready"],
    ["starting", "starting"],
    ["failed", "failed"],
    ["not_allowed", "not allowed"],
  ];
  for (const [state, label] of labels) if (count(state) > 0) parts.push(`${count(state)} ${label}`);
  const level = count("failed") > 0 ? "error" : count("starting") > 0 ? "busy" : "ok";
  const detail = servers
    .map((s) => {
      const what = s.state === "ready" ? `ready, ${plural(s.tools, "tool")}` : s.state.replace("_", " ");
      return `${s.name}: ${what}${s.error ? ` (${s.error})` : ""}`;
    })
    .join("\n");
  // Why a server is not working, in the footer itself (not only the tooltip).
  const reason = servers
    .filter((s) => s.state === "failed" || s.state === "not_allowed")
    .map((s) => `${s.name}: ${s.error ? clip(s.error, 120) : s.state.replace("_", " ")}`)
    .join(" · ");
  return { text: `MCP: ${parts.join(" · ")}`, level, detail, reason };
}

function clip(text: string, max: number): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * The file a link in an answer or a tool card points at: `calc.py#L6`, `src/a.ts:12`,
 * `./b.py#L3-L5`, `file:///abs/c.py`. Web links (`http:`, `mailto:`, …) are not files.
 */
export function fileLink(href: string): { path: string; line?: number } | undefined {
  let ref = href.trim();
  if (!ref || ref.startsWith("#")) return undefined;
  if (/^file:\/\//i.test(ref)) {
    ref = ref.replace(/^file:\/\//i, "");
    try {
      ref = decodeURIComponent(ref);
    } catch {
      /* keep it as written */
    }
  } else if (/^[a-z][a-z0-9+.-]*:/i.test(ref) && !/^[a-z]:[\\/]/i.test(ref)) {
    return undefined; // a scheme: http, https, mailto, vscode, command…
  }
  let line: number | undefined;
  const hash = /#L(\d+)(?:C\d+)?(?:-L?\d+(?:C\d+)?)?$/i.exec(ref);
  if (hash) {
    line = Number(hash[1]);
    ref = ref.slice(0, hash.index);
  } else {
    const colon = /:(\d+)(?::\d+)?$/.exec(ref);
    if (colon) {
      line = Number(colon[1]);
      ref = ref.slice(0, colon.index);
    }
    const fragment = ref.indexOf("#");
    if (fragment >= 0) ref = ref.slice(0, fragment);
  }
  try {
    if (!/^file:/i.test(href)) ref = decodeURI(ref);
  } catch {
    /* keep it as written */
  }
  if (!ref) return undefined;
  return line !== undefined && line > 0 ? { path: ref, line } : { path: ref };
}

/** The file a tool call works on, if its arguments name one. */
export function toolFilePath(args: Record<string, unknown>): string | undefined {
  for (const key of ["filepath", "file_path", "path"]) {
    const value = args[key];
    if (typeof value === "string" && value && value !== ".") return value;
  }
  return undefined;
}

/** The lines of a unified diff, classed for rendering. */
export function diffLines(diff: string): { kind: "add" | "del" | "hunk" | "meta" | "ctx"; text: string }[] {
  return diff.split("\n").map((text) => {
    if (text.startsWith("+++") || text.startsWith("---") || text.startsWith("diff ") || text.startsWith("index ")) {
      return { kind: "meta" as const, text };
    }
    if (text.startsWith("@@")) return { kind: "hunk" as const, text };
    if (text.startsWith("+")) return { kind: "add" as const, text };
    if (text.startsWith("-")) return { kind: "del" as const, text };
    return { kind: "ctx" as const, text };
  });
}
