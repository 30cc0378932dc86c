/**
 * Messages between the extension host and the side panel's webview (postMessage both ways).
 * The host forwards server traffic as reducer actions; the webview sends what the person did.
 */

import type { ApprovalDecision, ContextItem } from "./protocol";
import type { SlashCommand } from "./webview/slash";
import type { Action, BannerAction } from "./webview/state";

/** v3: `tunacode.request` mode; `plan`: read-only tools, the answer is a plan. */
export type RequestMode = "agent" | "plan";

/** Host -> webview. */
export type HostMessage =
  | { type: "action"; action: Action }
  | { type: "focus_prompt"; text?: string }
  | { type: "show_sessions" }
  | { type: "focus_approval"; toolCallId?: string }
  /** After a rewind: the prompt back in the box, unless the person is typing another. */
  | { type: "restore_prompt"; text: string }
  /** v3: the prompt commands (`tunacode.commands.list`), for `/` completion. */
  | { type: "commands"; commands: SlashCommand[] }
  /** The workspace files matching an `@query` (bounded), for `@` completion. */
  | { type: "file_completions"; query: string; paths: string[] };

/** Webview -> host. */
export type WebviewMessage =
  | { type: "ready" }
  /** `how`: what a prompt sent while a request runs does (v3): steer it (Enter), or queue (Alt+Enter). */
  | { type: "send"; prompt: string; context?: ContextItem[]; mode?: RequestMode; how?: "steer" | "queue" }
  /** v3: remove a queued prompt before it starts. */
  | { type: "unqueue"; key: string }
  | { type: "pick_files" }
  /** `@query` typed in the prompt: the host answers with file_completions. */
  | { type: "complete_files"; query: string }
  | { type: "attach_uris"; uris: string[] }
  | { type: "stop" }
  | { type: "new_session" }
  | { type: "list_sessions" }
  | { type: "resume"; sessionId: string }
  | { type: "delete"; sessionId: string; title?: string }
  /** A session row's ⋯: Resume or Delete, asked by the host. */
  | { type: "session_menu"; sessionId: string; title: string }
  | { type: "copy"; text: string }
  | { type: "banner_action"; action: BannerAction }
  | { type: "approve"; requestId: string; toolCallId: string; decision: ApprovalDecision }
  | { type: "open_file"; path: string; line?: number }
  | { type: "show_output"; requestId?: string; toolCallId: string; name: string }
  | { type: "insert"; text: string }
  | { type: "pick_model" }
  /** The footer's MCP line was clicked: the servers, their state and what to do. */
  | { type: "mcp_details" }
  | { type: "show_changes"; requestId?: string }
  | { type: "compare_request"; requestId: string }
  /** `edit`: "Edit and resend": after the rewind the prompt replaces the composer's text. */
  | { type: "rewind"; requestId: string; prompt?: string; edit?: boolean }
  | { type: "show_diff"; path: string; diff: string; status?: string }
  | { type: "undo_file"; requestId: string; path: string; status: string; diff: string }
  | { type: "undo_hunk"; requestId: string; path: string; diff: string; index: number };
