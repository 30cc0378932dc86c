/**
 * Approvals asked by the server through `tunacode/approve` (protocol v2): shown in the tool
 * card (buttons in the webview) and as a notification (a second route). Whichever answers
 * first wins and the other goes away; a `$/cancelRequest` from the server (the request
 * ended) removes both, and a late answer is ignored.
 */

import * as vscode from "vscode";
import type { ApprovalDecision, ApproveParams, ApproveResult } from "./protocol";
import type { Action, ApprovalState } from "./webview/state";

export const ANSWER_COMMAND = "tunacode.approval.answer";

interface Pending {
  params: ApproveParams;
  done: boolean;
  resolve(decision: ApprovalDecision | "cancelled"): void;
  closeToast?: () => void;
}

export interface ApprovalView {
  dispatch(action: Action): void;
}

export class Approvals implements vscode.Disposable {
  private readonly pending = new Map<string, Pending>();
  private readonly changeEmitter = new vscode.EventEmitter<number>();

  /** Fires with the number of approvals waiting. */
  readonly onDidChange = this.changeEmitter.event;

  constructor(
    private readonly view: ApprovalView,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  get waiting(): ApproveParams[] {
    return [...this.pending.values()].map((p) => p.params);
  }

  /** The handler of `tunacode/approve`. */
  async ask(params: ApproveParams, token: vscode.CancellationToken): Promise<ApproveResult> {
    const key = keyOf(params.requestId, params.toolCallId);
    this.pending.get(key)?.resolve("cancelled");
    const decision = await new Promise<ApprovalDecision | "cancelled">((resolve) => {
      const entry: Pending = {
        params,
        done: false,
        resolve: (d) => {
          if (entry.done) return;
          entry.done = true;
          entry.closeToast?.();
          if (this.pending.get(key) === entry) this.pending.delete(key);
          cancelSub.dispose();
          this.changeEmitter.fire(this.pending.size);
          resolve(d);
        },
      };
      const cancelSub = token.onCancellationRequested(() => entry.resolve("cancelled"));
      this.pending.set(key, entry);
      this.changeEmitter.fire(this.pending.size);
      this.view.dispatch({ type: "approval_request", params });
      this.toast(params, entry);
      if (token.isCancellationRequested) entry.resolve("cancelled");
    });
    const settled: Exclude<ApprovalState, "asking"> = decision;
    this.view.dispatch({ type: "approval_settled", requestId: params.requestId, toolCallId: params.toolCallId, state: settled });
    this.log.info(`Approval of ${params.summary || params.tool}: ${decision}`);
    // A cancelled request gets no meaningful answer; "deny" is the safe one if it is read.
    return approveResult(decision);
  }

  /** An answer from the card or the notification; a late or unknown one is ignored. */
  answer(requestId: string, toolCallId: string, decision: ApprovalDecision): boolean {
    const entry = this.pending.get(keyOf(requestId, toolCallId));
    if (!entry) return false;
    entry.resolve(decision);
    return true;
  }

  /** Ends every approval still waiting (the server went away). */
  cancelAll(): void {
    for (const entry of [...this.pending.values()]) entry.resolve("cancelled");
  }

  dispose(): void {
    this.cancelAll();
    this.changeEmitter.dispose();
  }

  /**
   * A progress notification stays up until the approval settles (a plain warning hides by
   * itself after a while) and can be closed from code when the card answers first. Its
   * buttons are command links; Cancel denies.
   */
  private toast(params: ApproveParams, entry: Pending): void {
    const link = (label: string, decision: ApprovalDecision): string => {
      const args = encodeURIComponent(JSON.stringify([{ requestId: params.requestId, toolCallId: params.toolCallId, decision }]));
      return `[${label}](command:${ANSWER_COMMAND}?${args})`;
    };
    const what = [params.tool, params.summary].filter(Boolean).join(" ").replace(/[[\]`]/g, "");
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `TunaCode wants to use ${what}`, cancellable: true },
      (progress, closeToken) =>
        new Promise<void>((resolve) => {
          progress.report({
            message: `${link("Allow", "allow")} · ${link("Allow for this session", "allow_session")} · ${link("Deny", "deny")} (details in the panel)`,
          });
          if (entry.done) return resolve();
          entry.closeToast = resolve;
          closeToken.onCancellationRequested(() => entry.resolve("deny"));
        }),
    );
  }
}

function keyOf(requestId: string, toolCallId: string): string {
  return `${requestId}\u0000${toolCallId}`;
}

/** The wire answer of a panel decision ("cancelled" is read as a deny, the safe one). */
export function approveResult(decision: ApprovalDecision | "cancelled"): ApproveResult {
  if (decision === "allow_always_user") return { decision: "allow_always", scope: "user" };
  if (decision === "allow_always_project") return { decision: "allow_always", scope: "project" };
  return { decision: decision === "cancelled" ? "deny" : decision };
}
