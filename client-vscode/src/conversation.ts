/**
 * The conversation as the extension host sees it: the current session, the one running
 * request, and the commands that act on them (ask, stop, new, resume, delete). It talks to
 * the server and tells the panel what happened as reducer actions.
 */

import { randomUUID } from "node:crypto";
import * as vscode from "vscode";
import { ResponseError } from "vscode-languageclient/node";
import {
  Commands,
  type ContextItem,
  type RequestResult,
  type Session,
  type SteerResult,
  type SessionGetResult,
  type TunaEvent,
} from "./protocol";
import { type TunaServer, errorMessage } from "./server";
import type { Action } from "./webview/state";

interface ActiveRequest {
  sessionId?: string;
  requestId?: string;
  cancel: vscode.CancellationTokenSource;
  progress?: vscode.Disposable;
  /** v3: sent with `queue: true` behind a running request; its pending row's key. */
  queueKey?: string;
  /** Its `request_start` came (a queued request that started runs as any). */
  started?: boolean;
}

/** How a prompt typed while a request runs goes: `steer` (the default), or `queue`. */
export type SendHow = "steer" | "queue";

export interface ConversationView {
  dispatch(action: Action): void;
}

export class Conversation implements vscode.Disposable {
  private sessionId: string | undefined;
  /** The requests in flight, in the order sent: the running one first, then the queued. */
  private requests: ActiveRequest[] = [];
  /** The model the composer's menu chose: sent as `model` with each request until changed. */
  private chosenModel: string | undefined;
  /** The current session's model as the server last said (request_start, session.get). */
  private sessionModel: string | undefined;
  private readonly runningEmitter = new vscode.EventEmitter<{ running: boolean; message?: string }>();
  private readonly sessionEmitter = new vscode.EventEmitter<string | undefined>();
  /** Fires when the current session changes (kept in workspaceState for a reload). */
  readonly onSession = this.sessionEmitter.event;
  private readonly subscriptions: vscode.Disposable[] = [];

  /** Fires when a request starts or ends, and with progress messages while it runs. */
  readonly onRunning = this.runningEmitter.event;

  constructor(
    private readonly server: TunaServer,
    private readonly view: ConversationView,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.subscriptions.push(server.onEvent((event) => this.onEvent(event)));
  }

  get currentSessionId(): string | undefined {
    return this.sessionId;
  }

  private setSession(sessionId: string | undefined): void {
    if (sessionId === this.sessionId) return;
    this.sessionId = sessionId;
    this.sessionEmitter.fire(sessionId);
  }

  /** The session to show once the panel is ready (the last one of this workspace). */
  restore(sessionId: string | undefined): void {
    if (!this.isRunning && !this.sessionId) this.sessionId = sessionId;
  }

  /** The model the next request runs with, when known: the chosen one, else the session's. */
  get modelInUse(): string | undefined {
    return this.chosenModel ?? this.sessionModel;
  }

  /** The composer's model menu: the next requests send `model` (undefined: the server chooses). */
  chooseModel(model: string | undefined): void {
    this.chosenModel = model || undefined;
  }

  get isRunning(): boolean {
    return this.requests.length > 0;
  }

  /** The running request (or, between two, the next to run). */
  private get active(): ActiveRequest | undefined {
    return this.requests.find((r) => r.queueKey === undefined || r.started) ?? this.requests[0];
  }

  /**
   * A prompt. While a request runs (v3, docs/protocol.md "Conversation control"): `steer`
   * (`tunacode.steer`; answered `accepted: false`, or with context that a steer cannot
   * carry, it is queued instead), or `queue` (`tunacode.request {queue: true}`).
   */
  async ask(prompt: string, context: ContextItem[] = [], mode?: "plan", how: SendHow = "steer"): Promise<void> {
    const text = prompt.trim();
    if (!text) return;
    const running = this.active;
    if (running) {
      const sessionId = running.sessionId ?? this.sessionId;
      if (!sessionId) {
        // The first request of a new session has no session id yet: keep the text.
        this.view.dispatch({ type: "server_state", state: this.server.status.state, message: "The session is still starting: send again in a moment." });
        return;
      }
      if (how === "steer" && context.length === 0 && (await this.steer(sessionId, text))) return;
      return this.run(text, context, mode, sessionId);
    }
    return this.run(text, context, mode);
  }

  /** `tunacode.steer`: true when the running request took the text. */
  private async steer(sessionId: string, text: string): Promise<boolean> {
    try {
      const result = await this.server.executeCommand<SteerResult>(Commands.steer, { sessionId, text });
      if (result.accepted !== true) return false;
      this.view.dispatch({ type: "steer_sent", text });
      return true;
    } catch (err) {
      this.log.warn(`tunacode.steer failed (${errorMessage(err)}); queuing the prompt instead`);
      return false;
    }
  }

  /** Removes a queued prompt before it starts (`tunacode.abort {requestId}`, else a cancel). */
  async unqueue(key: string): Promise<void> {
    const entry = this.requests.find((r) => r.queueKey === key && !r.started);
    if (!entry) return;
    if (entry.requestId) {
      try {
        await this.server.executeCommand<{ aborted: number }>(Commands.abort, { requestId: entry.requestId });
        return;
      } catch (err) {
        this.log.warn(`tunacode.abort ${entry.requestId} failed (${errorMessage(err)}); cancelling it instead`);
      }
    }
    entry.cancel.cancel();
  }

  /** Sends one request; `queueBehind`: the busy session it waits on (`queue: true`). */
  private async run(text: string, context: ContextItem[], mode: "plan" | undefined, queueBehind?: string): Promise<void> {
    const active: ActiveRequest = { sessionId: queueBehind ?? this.sessionId, cancel: new vscode.CancellationTokenSource() };
    if (queueBehind) active.queueKey = `q-${randomUUID()}`;
    this.requests.push(active);
    if (active.queueKey) {
      this.view.dispatch({ type: "prompt_queued", key: active.queueKey, prompt: text, ...(context.length > 0 ? { context } : {}) });
    } else {
      this.view.dispatch({ type: "prompt_sent", prompt: text, ...(context.length > 0 ? { context } : {}) });
      this.runningEmitter.fire({ running: true, message: firstLine(text) });
    }
    const workDoneToken = `tunacode-${randomUUID()}`;
    try {
      active.progress = await this.server.onProgress(workDoneToken, (value) => {
        if (value.kind !== "end" && value.message) this.runningEmitter.fire({ running: true, message: value.message });
      });
      const params = {
        prompt: text,
        ...(this.sessionId ? { sessionId: this.sessionId } : {}),
        ...(context.length > 0 ? { context } : {}),
        ...(mode ? { mode } : {}),
        ...(this.chosenModel ? { model: this.chosenModel } : {}),
        ...(queueBehind ? { queue: true } : {}),
      };
      const result = await this.server.executeCommand<RequestResult>(Commands.request, params, {
        token: active.cancel.token,
        workDoneToken,
      });
      if (active.queueKey && !active.started) {
        // Dropped before it started (removed, or the server shut down): no turn.
        this.view.dispatch({ type: "queue_removed", key: active.queueKey });
        return;
      }
      this.setSession(result.sessionId);
      this.view.dispatch({ type: "request_done", result });
      if (result.stopReason === "error" && result.error) this.log.warn(`Request ended with an error: ${result.error.message}`);
    } catch (err) {
      const code = err instanceof ResponseError ? err.code : undefined;
      this.log.error(`tunacode.request failed: ${errorMessage(err)}${code !== undefined ? ` (code ${code})` : ""}`);
      if (active.queueKey && !active.started) {
        // Never started: the pending row goes; a refusal (not a removal) says why.
        this.view.dispatch({ type: "queue_removed", key: active.queueKey, ...(code === -32800 ? {} : { message: `Could not queue the prompt: ${errorMessage(err)}` }) });
      } else {
        this.view.dispatch({ type: "request_failed", message: errorMessage(err), code });
      }
    } finally {
      active.progress?.dispose();
      active.cancel.dispose();
      this.requests = this.requests.filter((r) => r !== active);
      if (this.requests.length === 0) this.runningEmitter.fire({ running: false });
    }
  }

  /** Stops the running request: `tunacode.abort` by request id, else `$/cancelRequest`. */
  async stop(): Promise<void> {
    const active = this.active;
    if (!active) return;
    this.view.dispatch({ type: "stop_requested" });
    const target = active.requestId
      ? { requestId: active.requestId }
      : active.sessionId
        ? { sessionId: active.sessionId }
        : undefined;
    if (!target) {
      active.cancel.cancel();
      return;
    }
    try {
      const result = await this.server.executeCommand<{ aborted: number }>(Commands.abort, target);
      this.log.info(`tunacode.abort ${JSON.stringify(target)}: aborted ${result.aborted}`);
      if (result.aborted === 0 && this.active === active) active.cancel.cancel();
    } catch (err) {
      this.log.warn(`tunacode.abort failed (${errorMessage(err)}); cancelling the request instead`);
      active.cancel.cancel();
    }
  }

  newSession(): void {
    if (this.isRunning) {
      void vscode.window.showInformationMessage("Stop the running request before starting a new session.");
      return;
    }
    this.setSession(undefined);
    this.sessionModel = undefined;
    this.view.dispatch({ type: "session_cleared" });
  }

  async listSessions(): Promise<Session[]> {
    try {
      const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
      const result = await this.server.executeCommand<{ sessions: Session[] }>(Commands.sessionList, cwd ? { cwd } : {});
      this.view.dispatch({ type: "sessions", sessions: result.sessions });
      return result.sessions;
    } catch (err) {
      this.log.error(`tunacode.session.list failed: ${errorMessage(err)}`);
      this.view.dispatch({ type: "sessions", sessions: [] });
      this.view.dispatch({
        type: "server_state",
        state: this.server.status.state,
        message: `Could not list sessions: ${errorMessage(err)}`,
        action: "showLogs",
      });
      return [];
    }
  }

  async resume(sessionId: string, quiet = false): Promise<void> {
    if (this.isRunning) {
      void vscode.window.showInformationMessage("Stop the running request before switching sessions.");
      return;
    }
    try {
      const result = await this.server.executeCommand<SessionGetResult>(Commands.sessionGet, { sessionId, events: true });
      if (this.isRunning) return;
      this.setSession(result.session.sessionId);
      // The session's own model is the truth now; a model chosen for another one is dropped.
      this.chosenModel = undefined;
      this.sessionModel = result.session.model || undefined;
      this.view.dispatch({ type: "session_loaded", session: result.session, events: result.events ?? [], requests: result.requests });
    } catch (err) {
      this.log.error(`tunacode.session.get failed: ${errorMessage(err)}`);
      if (quiet) {
        // The remembered session is gone (deleted, another store): start fresh.
        if (this.sessionId === sessionId) this.setSession(undefined);
        return;
      }
      void vscode.window.showErrorMessage(`TunaCode: could not open the session: ${errorMessage(err)}`);
    }
  }

  /** Reloads the current session's history (after the panel was rebuilt or a reload). */
  async reload(): Promise<void> {
    if (this.sessionId && !this.isRunning) await this.resume(this.sessionId, true);
  }

  /** The full stored result of a tool call (the card shows a cut one). */
  async toolOutput(toolCallId: string): Promise<string | undefined> {
    if (!this.sessionId) return undefined;
    const result = await this.server.executeCommand<SessionGetResult>(Commands.sessionGet, { sessionId: this.sessionId });
    for (const message of result.messages) {
      if (message && message.role === "tool_result" && message.tool_call_id === toolCallId) {
        return (message.content ?? [])
          .map((b) => (b && b.type === "text" ? (b.text ?? "") : ""))
          .join("");
      }
    }
    return undefined;
  }

  async delete(sessionId: string, title?: string): Promise<void> {
    const name = title ? `"${title.length > 80 ? `${title.slice(0, 79)}…` : title}"` : "this TunaCode session";
    const choice = await vscode.window.showWarningMessage(
      `Delete the session ${name} and its history?`,
      { modal: true, detail: `Session ${sessionId}. Its messages and checkpoints are removed; the files stay as they are.` },
      "Delete",
    );
    if (choice !== "Delete") return;
    try {
      await this.server.executeCommand<{ deleted: boolean }>(Commands.sessionDelete, { sessionId });
      if (this.sessionId === sessionId) this.setSession(undefined);
      this.view.dispatch({ type: "session_deleted", sessionId });
      await this.listSessions();
    } catch (err) {
      this.log.error(`tunacode.session.delete failed: ${errorMessage(err)}`);
      void vscode.window.showErrorMessage(`TunaCode: could not delete the session: ${errorMessage(err)}`);
    }
  }

  dispose(): void {
    for (const r of this.requests) r.cancel.cancel();
    for (const s of this.subscriptions) s.dispose();
    this.runningEmitter.dispose();
    this.sessionEmitter.dispose();
  }

  private onEvent(event: TunaEvent): void {
    // An event of a request not named yet belongs to the first one sent without a name
    // (a request's first event is request_start, or request_queued when it waits).
    let mine = this.requests.find((r) => r.requestId === event.requestId);
    if (!mine) {
      mine = this.requests.find((r) => r.requestId === undefined && (r.sessionId === undefined || r.sessionId === event.sessionId));
      if (mine) {
        mine.requestId = event.requestId;
        mine.sessionId = event.sessionId;
        if (mine.queueKey) this.view.dispatch({ type: "queue_assigned", key: mine.queueKey, requestId: event.requestId });
        else this.setSession(event.sessionId);
      }
    }
    if (mine && event.type === "request_start" && mine.queueKey && !mine.started) {
      mine.started = true;
      this.runningEmitter.fire({ running: true, message: firstLine(event.prompt) });
    }
    if (event.type === "request_start" && event.model && event.sessionId === this.sessionId) this.sessionModel = event.model;
    this.view.dispatch({ type: "event", event });
  }
}

function firstLine(text: string): string {
  const line = text.split("\n", 1)[0];
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}
