/**
 * The side panel's webview view: its HTML (strict CSP with a per-load nonce), and the
 * message bridge. Actions sent before the webview is ready are queued, not lost.
 */

import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import type { HostMessage, WebviewMessage } from "./messages";
import type { Action } from "./webview/state";

export const VIEW_ID = "tunacode.chat";

export interface PanelHandlers {
  onReady(): void;
  onMessage(message: WebviewMessage): void;
}

export class ChatPanel implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private ready = false;
  private queue: HostMessage[] = [];
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly handlers: PanelHandlers,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const webview = view.webview;
    webview.options = {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, "dist"), vscode.Uri.joinPath(this.extensionUri, "media")],
    };
    webview.html = this.html(webview);
    this.disposables.push(
      webview.onDidReceiveMessage((message: WebviewMessage) => {
        if (message.type === "ready") {
          this.ready = true;
          this.handlers.onReady();
          this.flush();
          return;
        }
        this.handlers.onMessage(message);
      }),
      view.onDidDispose(() => {
        this.view = undefined;
        this.ready = false;
      }),
    );
  }

  dispatch(action: Action): void {
    this.post({ type: "action", action });
  }

  post(message: HostMessage): void {
    if (this.view && this.ready) {
      void this.view.webview.postMessage(message);
      return;
    }
    // Streaming deltas are useless to a view that will reload the session anyway.
    if (message.type === "action" && message.action.type === "event") return;
    this.queue.push(message);
    if (this.queue.length > 200) this.queue.shift();
  }

  /** Shows the panel (opening its container), optionally focusing the prompt box. */
  async reveal(focusPrompt = true): Promise<void> {
    if (this.view) {
      this.view.show(false);
    } else {
      await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
    }
    if (focusPrompt) this.post({ type: "focus_prompt" });
  }

  get isReady(): boolean {
    return this.ready;
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }

  private flush(): void {
    const pending = this.queue;
    this.queue = [];
    for (const message of pending) this.post(message);
  }

  private html(webview: vscode.Webview): string {
    const nonce = randomBytes(16).toString("base64");
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "dist", "webview.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "media", "panel.css"));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `font-src ${webview.cspSource}`,
      `img-src ${webview.cspSource} data:`,
      `script-src 'nonce-${nonce}'`,
    ].join("; ");
    return `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="UTF-8">
  <meta http-equiv="Content-Security-Policy" content="${csp}">
  <meta name="viewport" content="width=device-width, initial-scale=1.0">
  <link rel="stylesheet" href="${style}">
  <title>TunaCode</title>
</head>
<body data-running="false">
  <div id="app">
    <header class="toolbar">
      <span id="title" class="title">New session</span>
      <button id="new-session" type="button" class="secondary" title="Start a new session">New</button>
      <button id="toggle-sessions" type="button" class="secondary" aria-expanded="false" aria-controls="sessions" title="Show sessions">Sessions</button>
    </header>
    <form id="composer" aria-label="Ask TunaCode">
      <label for="prompt" class="composer-hint">Enter sends (while working: steers) · Alt+Enter queues · Shift+Enter new line · Ctrl+Alt+S stops · @file adds a file</label>
      <ul id="queue" class="queue" aria-label="Waiting to be sent" hidden></ul>
      <ul id="attachments" class="attachments" aria-label="Context sent with the prompt" hidden></ul>
      <ul id="slash" class="slash" role="listbox" aria-label="Commands" hidden></ul>
      <ul id="mentions" class="slash" role="listbox" aria-label="Files" hidden></ul>
      <textarea id="prompt" rows="3" placeholder="Ask TunaCode… (/ for commands)" aria-label="Prompt"></textarea>
      <div class="composer-actions">
        <button id="add-file" type="button" class="secondary" title="Add files of the workspace as context (paste an image into the prompt to add it)">Add file</button>
        <select id="mode" title="Agent: the agent works. Plan: read-only tools, the answer is a plan" aria-label="Mode">
          <option value="agent">Agent</option>
          <option value="plan">Plan</option>
        </select>
        <span class="composer-spacer"></span>
        <button id="queue-send" type="button" class="secondary" hidden title="Queue this prompt: it runs after the current request (Alt+Enter)">Queue</button>
        <button id="send" type="submit">Send</button>
        <button id="stop" type="button" hidden title="Stop the running request (Ctrl+Alt+S)">Stop</button>
      </div>
    </form>
    <section id="sessions" aria-label="Sessions" hidden></section>
    <div id="banner" class="banner" role="alert" hidden></div>
    <main id="conversation" aria-label="Conversation" aria-busy="false" tabindex="-1"></main>
    <button id="jump-bottom" type="button" class="secondary jump-bottom" title="Scroll to the latest message" hidden>↓ Latest</button>
    <div id="announcer" class="sr-only" role="status" aria-live="polite"></div>
    <section id="plan" class="plan" aria-label="Plan" hidden></section>
    <footer id="footer"><span id="server-state" role="status"></span><button id="model" type="button" class="link-button" title="Choose the model"></button><span id="context" hidden></span><button id="mcp" type="button" class="link-button" title="" hidden></button><span id="mcp-reason" role="status" hidden></span><span id="usage"></span></footer>
  </div>
  <script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }
}
