/**
 * Messages between the extension host and the side panel's webview (postMessage both ways).
 * The host forwards server traffic as reducer actions; the webview sends what the person did.
 */

import type { Action } from "./webview/state";

/** Host -> webview. */
export type HostMessage =
  | { type: "action"; action: Action }
  | { type: "focus_prompt"; text?: string }
  | { type: "show_sessions" };

/** Webview -> host. */
export type WebviewMessage =
  | { type: "ready" }
  | { type: "send"; prompt: string }
  | { type: "stop" }
  | { type: "new_session" }
  | { type: "list_sessions" }
  | { type: "resume"; sessionId: string }
  | { type: "delete"; sessionId: string }
  | { type: "copy"; text: string }
  | { type: "banner_action"; action: "openSettings" | "showLogs" | "restart" };
