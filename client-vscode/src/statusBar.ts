/**
 * A status-bar item shown while a request runs; clicking it stops the request, except
 * while an approval waits: then it says so and clicking it shows the card to answer.
 */

import * as vscode from "vscode";

export class RequestStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("tunacode.request", vscode.StatusBarAlignment.Left, 50);

  constructor() {
    this.item.name = "TunaCode request";
    this.item.command = "tunacode.stop";
    this.item.tooltip = "TunaCode is working. Click to stop.";
  }

  private running = false;
  private waiting = false;
  private message: string | undefined;

  update(running: boolean, message?: string): void {
    this.running = running;
    this.message = message;
    if (!running) this.waiting = false;
    this.render();
  }

  setWaiting(waiting: boolean): void {
    this.waiting = waiting;
    this.render();
  }

  private render(): void {
    if (!this.running && !this.waiting) {
      this.item.hide();
      return;
    }
    if (this.waiting) {
      this.item.text = "$(bell-dot) TunaCode: waiting for approval";
      this.item.tooltip = "TunaCode waits for your approval. Click to show it.";
      this.item.command = "tunacode.focusApproval";
    } else {
      this.item.text = `$(sync~spin) TunaCode${this.message ? `: ${this.message}` : ""}`;
      this.item.tooltip = "TunaCode is working. Click to stop.";
      this.item.command = "tunacode.stop";
    }
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}
