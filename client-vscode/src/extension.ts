/**
 * Entry point: creates the log channel, the server, the conversation, the panel and the
 * status bar, wires them together, and registers the palette commands.
 */

import * as vscode from "vscode";
import { Conversation } from "./conversation";
import type { WebviewMessage } from "./messages";
import { ChatPanel, VIEW_ID } from "./panel";
import { errorMessage, TunaServer } from "./server";
import { needsRestart } from "./settings";
import { RequestStatusBar } from "./statusBar";
import type { Session } from "./protocol";
import { Commands } from "./protocol";

let server: TunaServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel("TunaCode", { log: true });
  server = new TunaServer(log);
  const tuna = server;
  const statusBar = new RequestStatusBar();

  // The panel and the conversation refer to each other through these two closures.
  let conversation: Conversation | undefined;
  const panel = new ChatPanel(context.extensionUri, {
    onReady: () => {
      panel.dispatch({ type: "server_state", ...tuna.status });
      void refreshModel();
      void conversation?.reload();
    },
    onMessage: (message) => void handleWebviewMessage(message),
  });
  conversation = new Conversation(tuna, panel, log);
  const convo = conversation;

  async function handleWebviewMessage(message: WebviewMessage): Promise<void> {
    switch (message.type) {
      case "send":
        return convo.ask(message.prompt);
      case "stop":
        return convo.stop();
      case "new_session":
        return convo.newSession();
      case "list_sessions":
        await convo.listSessions();
        return;
      case "resume":
        return convo.resume(message.sessionId);
      case "delete":
        return convo.delete(message.sessionId);
      case "copy":
        await vscode.env.clipboard.writeText(message.text);
        return;
      case "banner_action":
        if (message.action === "openSettings") await vscode.commands.executeCommand("workbench.action.openSettings", "tunacode");
        if (message.action === "showLogs") log.show();
        if (message.action === "restart") await tuna.restart();
        return;
      case "ready":
        return;
    }
  }

  async function refreshModel(): Promise<void> {
    const configured = vscode.workspace.getConfiguration("tunacode").get<string>("model", "");
    if (configured) {
      panel.dispatch({ type: "model", model: configured });
      return;
    }
    if (tuna.status.state !== "running") return;
    try {
      const result = await tuna.executeCommand<{ default?: string }>(Commands.modelsList, {});
      panel.dispatch({ type: "model", model: result.default });
    } catch (err) {
      log.debug(`tunacode.models.list: ${errorMessage(err)}`);
    }
  }

  let restartTimer: NodeJS.Timeout | undefined;
  context.subscriptions.push(
    log,
    tuna,
    statusBar,
    panel,
    convo,
    vscode.window.registerWebviewViewProvider(VIEW_ID, panel, { webviewOptions: { retainContextWhenHidden: true } }),
    tuna.onStatus((status) => {
      panel.dispatch({ type: "server_state", ...status });
      if (status.state === "running") void refreshModel();
    }),
    convo.onRunning(({ running, message }) => statusBar.update(running, message)),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!needsRestart(event)) return;
      // Several settings often change at once (a settings.json save): restart once.
      clearTimeout(restartTimer);
      restartTimer = setTimeout(() => {
        log.info("A TunaCode server setting changed");
        void tuna.restart();
      }, 300);
    }),
    { dispose: () => clearTimeout(restartTimer) },
    vscode.commands.registerCommand("tunacode.newSession", async () => {
      convo.newSession();
      await panel.reveal();
    }),
    vscode.commands.registerCommand("tunacode.ask", async (prompt?: unknown) => {
      const text =
        typeof prompt === "string"
          ? prompt
          : await vscode.window.showInputBox({ title: "Ask TunaCode", prompt: "What should TunaCode do?", ignoreFocusOut: true });
      if (!text) return;
      await panel.reveal(false);
      await convo.ask(text);
    }),
    vscode.commands.registerCommand("tunacode.stop", () => convo.stop()),
    vscode.commands.registerCommand("tunacode.resumeSession", async (sessionId?: unknown) => {
      if (typeof sessionId === "string") {
        await panel.reveal(false);
        return convo.resume(sessionId);
      }
      const sessions = await convo.listSessions();
      if (sessions.length === 0) {
        void vscode.window.showInformationMessage("TunaCode: no sessions in this workspace yet.");
        return;
      }
      const picked = await vscode.window.showQuickPick(sessions.map(sessionPickItem), {
        title: "Resume a TunaCode session",
        matchOnDescription: true,
      });
      if (!picked) return;
      await panel.reveal(false);
      await convo.resume(picked.session.sessionId);
    }),
    vscode.commands.registerCommand("tunacode.restart", () => tuna.restart()),
    vscode.commands.registerCommand("tunacode.showLogs", () => log.show()),
  );

  void tuna.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}

function sessionPickItem(session: Session): vscode.QuickPickItem & { session: Session } {
  return {
    label: session.title || "(untitled)",
    description: session.modifiedAt ? new Date(session.modifiedAt).toLocaleString() : undefined,
    detail: `${session.messageCount} messages${session.model ? ` · ${session.model}` : ""}`,
    session,
  };
}
