/** A status-bar item shown while a request runs; clicking it stops the request. */

import * as vscode from "vscode";

export class RequestStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("tunacode.request", vscode.StatusBarAlignment.Left, 50);

  constructor() {
    this.item.name = "TunaCode request";
    this.item.command = "tunacode.stop";
    this.item.tooltip = "TunaCode is working. Click to stop.";
  }

  update(running: boolean, message?: string): void {
    if (!running) {
      this.item.hide();
      return;
    }
    this.item.text = `$(sync~spin) TunaCode${message ? `: ${message}` : ""}`;
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}
