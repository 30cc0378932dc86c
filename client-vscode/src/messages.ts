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
  | { type: "commands"; commands: SlashCommand[] };

/** Webview -> host. */
export type WebviewMessage =
  | { type: "ready" }
  | { type: "send"; prompt: string; context?: ContextItem[]; mode?: RequestMode }
  | { type: "pick_files" }
  | { type: "attach_uris"; uris: string[] }
  | { type: "stop" }
  | { type: "new_session" }
  | { type: "list_sessions" }
  | { type: "resume"; sessionId: string }
  | { type: "delete"; sessionId: string }
  | { type: "copy"; text: string }
  | { type: "banner_action"; action: BannerAction }
  | { type: "approve"; requestId: string; toolCallId: string; decision: ApprovalDecision }
  | { type: "open_file"; path: string; line?: number }
  | { type: "show_output"; requestId?: string; toolCallId: string; name: string }
  | { type: "insert"; text: string }
  | { type: "pick_model" }
  | { type: "show_changes"; requestId?: string }
  | { type: "rewind"; requestId: string; prompt?: string }
  | { type: "show_diff"; path: string; diff: string; status?: string }
  | { type: "undo_file"; requestId: string; path: string; status: string; diff: string };
