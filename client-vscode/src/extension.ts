/**
 * Entry point: creates the log channel, the server, the conversation, the panel and the
 * status bar, wires them together, and registers the palette commands. The panel's messages
 * are routed in webviewMessages.ts; what acts on editors is editorActions.ts.
 */

import * as vscode from "vscode";
import { ANSWER_COMMAND, Approvals } from "./approvals";
import { ChangesController } from "./changes";
import { Conversation } from "./conversation";
import type { WebviewMessage } from "./messages";
import { ChatPanel, VIEW_ID } from "./panel";
import { EditorActions, toLspDiagnostic } from "./editorActions";
import { webviewMessageHandler } from "./webviewMessages";
import { errorMessage, TunaServer } from "./server";
import { KEY_VARIABLES, keyVariable, missingKey, secretName } from "./apiKeys";
import { modelRows } from "./modelPick";
import { userLevelValue } from "./options";
import { needsRestart } from "./settings";
import type { ApprovalDecision, ContextItem, ModelsListResult, StatusResult } from "./protocol";
import { RequestStatusBar } from "./statusBar";
import { parseCommands } from "./webview/slash";
import type { Session } from "./protocol";
import { Commands } from "./protocol";

let server: TunaServer | undefined;

/** workspaceState key of the session shown last in this workspace (restored after a reload). */
const LAST_SESSION = "tunacode.lastSession";
/** Context key set while a request runs (the Stop keybinding's when-clause). */
const RUNNING_CONTEXT = "tunacode.requestRunning";

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel("TunaCode", { log: true });
  server = new TunaServer(log);
  const tuna = server;
  const statusBar = new RequestStatusBar();

  // The panel, the conversation and the message handler refer to each other through these closures.
  let conversation: Conversation | undefined;
  let handleWebviewMessage: ((message: WebviewMessage) => Promise<void>) | undefined;
  const panel = new ChatPanel(context.extensionUri, {
    onReady: () => {
      panel.dispatch({ type: "server_state", ...tuna.status });
      void refreshModel();
      void refreshStatus();
      void sendCommands();
      void conversation?.reload();
    },
    onMessage: (message) => void handleWebviewMessage?.(message),
  });
  conversation = new Conversation(tuna, panel, log);
  const convo = conversation;
  convo.restore(context.workspaceState.get<string>(LAST_SESSION));
  const approvals = new Approvals(panel, log);
  const editor = new EditorActions(panel);
  const changes = new ChangesController(tuna, { get currentSessionId() { return convo.currentSessionId; }, get isRunning() { return convo.isRunning; }, resume: (id) => convo.resume(id) }, panel, log);
  tuna.setRequestHandlers({
    approve: (params, token) => approvals.ask(params, token),
    saveDocuments: async ({ uris }) => {
      const saved: string[] = [];
      for (const uri of Array.isArray(uris) ? uris : []) {
        const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
        if (!doc) continue;
        if (!doc.isDirty || (await doc.save())) saved.push(uri);
      }
      return { saved };
    },
    diagnostics: async ({ uris }) => ({
      items: (Array.isArray(uris) ? uris : []).map((uri) => ({
        uri,
        diagnostics: vscode.languages.getDiagnostics(vscode.Uri.parse(uri)).map(toLspDiagnostic),
      })),
    }),
  });
  handleWebviewMessage = webviewMessageHandler({
    conversation: convo,
    approvals,
    changes,
    editor,
    log,
    restartServer: () => tuna.restart(),
    setApiKey: () => setApiKey(),
    pickModel: () => pickModel(),
    showMcpServers: () => showMcpServers(),
    showOutput: (toolCallId, name) => showOutput(toolCallId, name),
  });


  /** The prompt commands for the composer's `/` completion (none when the server cannot say). */
  async function sendCommands(): Promise<void> {
    if (tuna.status.state !== "running") return;
    try {
      const raw = await tuna.executeCommand<unknown>(Commands.commandsList, {});
      panel.post({ type: "commands", commands: parseCommands(raw) });
    } catch (err) {
      log.info(`tunacode.commands.list: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  async function showOutput(toolCallId: string, name: string): Promise<void> {
    try {
      const output = await convo.toolOutput(toolCallId);
      if (output === undefined) {
        void vscode.window.showInformationMessage("TunaCode: the full output of this tool call is not stored (yet).");
        return;
      }
      // Read-only (a content provider's document), never an Untitled one that asks to be saved.
      // Not a preview: it does not take the place of the file the person was looking at.
      await changes.showReadOnly(`${name} output ${toolCallId.slice(-8)}.txt`, output, false);
    } catch (err) {
      void vscode.window.showErrorMessage(`TunaCode: could not fetch the tool's output: ${errorMessage(err)}`);
    }
  }

  async function pickModel(): Promise<void> {
    try {
      const result = await tuna.executeCommand<ModelsListResult>(Commands.modelsList, {});
      const config = vscode.workspace.getConfiguration("tunacode");
      const setting = userLevelValue<string>(config.inspect<string>("model")) ?? "";
      const inUse = convo.modelInUse ?? (setting || result.default);
      const picked = await vscode.window.showQuickPick(modelRows(result, inUse, setting), {
        title: "TunaCode model",
        placeHolder: inUse ? `In use: ${inUse}` : "Choose the model",
        matchOnDescription: true,
        matchOnDetail: true,
      });
      if (!picked) return;
      // The next requests send `model` (the session's model changes with them), and the
      // user's settings (never the workspace's .vscode/settings.json) keep it for new sessions.
      convo.chooseModel(picked.value || undefined);
      await config.update("model", picked.value || undefined, vscode.ConfigurationTarget.Global);
      panel.dispatch({ type: "model", model: convo.modelInUse ?? result.default });
      void checkKey();
    } catch (err) {
      void vscode.window.showErrorMessage(`TunaCode: could not list models: ${errorMessage(err)}`);
    }
  }

  /** The footer's MCP line, clicked: each server with its state and reason; a failed one offers its fixes. */
  async function showMcpServers(): Promise<void> {
    let servers: StatusResult["mcpServers"] = [];
    try {
      servers = (await tuna.executeCommand<StatusResult>(Commands.status, {})).mcpServers ?? [];
      panel.dispatch({ type: "mcp_servers", servers });
    } catch (err) {
      void vscode.window.showErrorMessage(`TunaCode: could not read the MCP servers' state: ${errorMessage(err)}`);
      return;
    }
    const picked = await vscode.window.showQuickPick(
      servers.map((s) => ({
        label: s.name,
        description: s.state === "ready" ? `ready · ${s.tools} tool${s.tools === 1 ? "" : "s"}` : s.state.replace("_", " "),
        detail: s.error,
        server: s,
      })),
      { title: "TunaCode: MCP servers", placeHolder: "Choose a server for what to do about it" },
    );
    if (!picked) return;
    const actions = ["Show Logs", "Open Settings", "Restart Server"];
    const action = await vscode.window.showQuickPick(actions, { title: `MCP server ${picked.label}: ${picked.description ?? ""}` });
    if (action === "Show Logs") log.show();
    if (action === "Open Settings") await vscode.commands.executeCommand("workbench.action.openSettings", "tunacode.mcpServers");
    if (action === "Restart Server") await tuna.restart();
  }

  /** MCP servers from `tunacode.status`; polled briefly while one is still starting. */
  let statusTimer: NodeJS.Timeout | undefined;
  let statusPolls = 0;
  async function refreshStatus(poll = false): Promise<void> {
    clearTimeout(statusTimer);
    if (!poll) statusPolls = 0;
    if (tuna.status.state !== "running") return;
    try {
      const result = await tuna.executeCommand<StatusResult>(Commands.status, {});
      panel.dispatch({ type: "mcp_servers", servers: result.mcpServers });
      const starting = (result.mcpServers ?? []).some((s) => s && s.state === "starting");
      if (starting && statusPolls++ < 30) statusTimer = setTimeout(() => void refreshStatus(true), 2000);
    } catch (err) {
      log.debug(`tunacode.status: ${errorMessage(err)}`);
    }
  }

  /** The first-run call to action: the model in use has no key (models.list `configured: false`). */
  async function checkKey(): Promise<void> {
    if (tuna.status.state !== "running") return;
    try {
      const result = await tuna.executeCommand<ModelsListResult>(Commands.modelsList, {});
      const inUse = convo.modelInUse ?? (vscode.workspace.getConfiguration("tunacode").get<string>("model", "") || result.default);
      const missing = missingKey(result.models, inUse);
      panel.dispatch({ type: "key_missing", ...(missing ?? {}) });
    } catch (err) {
      log.debug(`tunacode.models.list: ${errorMessage(err)}`);
    }
  }

  /** Asks for a provider's key, keeps it in SecretStorage and restarts the server with it in its environment. */
  async function setApiKey(): Promise<void> {
    const inUse = convo.modelInUse ?? vscode.workspace.getConfiguration("tunacode").get<string>("model", "");
    const suggested = keyVariable(inUse);
    const variables = [...new Set([...(suggested ? [suggested] : []), ...Object.values(KEY_VARIABLES)])];
    const variable = await vscode.window.showQuickPick(variables, { title: "TunaCode: the provider's key variable", placeHolder: suggested });
    if (!variable) return;
    const key = await vscode.window.showInputBox({ title: `TunaCode: ${variable}`, prompt: "Kept in VS Code's secret storage and given to the TunaCode server only", password: true, ignoreFocusOut: true });
    if (!key || !key.trim()) return;
    await context.secrets.store(secretName(variable), key.trim());
    tuna.storedKeys = await loadStoredKeys(context.secrets);
    await tuna.restart();
  }

  async function refreshModel(): Promise<void> {
    const configured = convo.modelInUse ?? vscode.workspace.getConfiguration("tunacode").get<string>("model", "");
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

  const awaitingV1 = new Set<string>();
  let restartTimer: NodeJS.Timeout | undefined;
  let restartWhenIdle = false;
  const restartForSettings = (): void => {
    if (convo.isRunning) {
      if (!restartWhenIdle) {
        restartWhenIdle = true;
        log.info("A server setting changed: the server restarts when the running request ends");
        void vscode.window.showInformationMessage(
          "TunaCode: the server command changed; the server restarts when the running request ends.",
        );
      }
      return;
    }
    restartWhenIdle = false;
    log.info("A TunaCode server setting changed (command, Python or environment): restarting the server");
    void tuna.restart();
  };
  context.subscriptions.push(
    log,
    tuna,
    statusBar,
    panel,
    convo,
    vscode.window.registerWebviewViewProvider(VIEW_ID, panel, { webviewOptions: { retainContextWhenHidden: true } }),
    tuna.onStatus((status) => {
      panel.dispatch({ type: "server_state", ...status });
      if (status.state === "running") {
        void refreshModel();
        void checkKey();
        void refreshStatus();
        void sendCommands();
      }
    }),
    approvals,
    convo.onRunning(({ running, message }) => {
      statusBar.update(running, message);
      void vscode.commands.executeCommand("setContext", RUNNING_CONTEXT, running);
      if (!running) void refreshStatus();
      if (!running && restartWhenIdle) restartForSettings();
    }),
    approvals.onDidChange(() => statusBar.setWaiting(approvals.waiting.length > 0 || awaitingV1.size > 0)),
    // A v1 server asks with a notification; the card and status bar still say it waits.
    tuna.onEvent((event) => {
      if (event.type === "tool_call_update") {
        if (event.status === "awaiting_approval") awaitingV1.add(event.toolCallId);
        else awaitingV1.delete(event.toolCallId);
      } else if (event.type === "request_end") {
        awaitingV1.clear();
      } else {
        return;
      }
      statusBar.setWaiting(approvals.waiting.length > 0 || awaitingV1.size > 0);
    }),
    convo.onSession((sessionId) => void context.workspaceState.update(LAST_SESSION, sessionId)),
    // The server names an MCP server that failed or stopped in a window/showMessage: live status.
    tuna.onShowMessage((message) => {
      if (/\bMCP server\b/.test(message)) void refreshStatus();
    }),
    tuna.onStatus((status) => {
      if (status.state !== "running") approvals.cancelAll();
    }),
    changes,
    vscode.workspace.onDidChangeConfiguration((event) => {
      // Agent settings apply live (the server re-reads them on didChangeConfiguration);
      // only how the server starts needs a new process.
      if (!needsRestart(event)) {
        if (event.affectsConfiguration("tunacode.model")) {
          void refreshModel();
          void checkKey();
        }
        return;
      }
      // Several settings often change at once (a settings.json save): restart once.
      clearTimeout(restartTimer);
      restartTimer = setTimeout(restartForSettings, 300);
    }),
    vscode.commands.registerCommand(ANSWER_COMMAND, (arg?: { requestId?: string; toolCallId?: string; decision?: ApprovalDecision }) => {
      if (arg?.requestId && arg.toolCallId && arg.decision) approvals.answer(arg.requestId, arg.toolCallId, arg.decision);
    }),
    vscode.commands.registerCommand("tunacode.focusApproval", async () => {
      await panel.reveal(false);
      panel.post({ type: "focus_approval", toolCallId: approvals.waiting[0]?.toolCallId ?? [...awaitingV1][0] });
    }),
    vscode.commands.registerCommand("tunacode.focusPrompt", () => panel.reveal(true)),
    vscode.commands.registerCommand("tunacode.showChanges", () => changes.pickSessionChange()),
    vscode.commands.registerCommand("tunacode.rewind", (requestId?: unknown) =>
      typeof requestId === "string" ? changes.rewind(requestId) : undefined,
    ),
    vscode.commands.registerCommand("tunacode.pickModel", () => pickModel()),
    vscode.commands.registerCommand("tunacode.setApiKey", () => setApiKey()),
    vscode.commands.registerCommand("tunacode.askAboutSelection", () => editor.askAboutSelection()),
    // The server's code actions (lightbulb "TunaCode: Fix" / "TunaCode: Explain") run
    // `tunacode.request {prompt, context}`: the panel gets the context as chips and the
    // prompt to edit, instead of a request started unseen (docs/protocol.md, Code actions).
    vscode.commands.registerCommand(Commands.request, async (arg?: unknown) => {
      const { prompt, context } = (arg && typeof arg === "object" ? arg : {}) as { prompt?: unknown; context?: unknown };
      for (const item of Array.isArray(context) ? context : []) {
        if (item && typeof item === "object" && typeof (item as { type?: unknown }).type === "string") {
          panel.dispatch({ type: "attach", item: item as ContextItem });
        }
      }
      await panel.reveal(false);
      panel.post({ type: "focus_prompt", text: typeof prompt === "string" ? prompt : undefined });
    }),
    vscode.commands.registerCommand("tunacode.addFiles", () => editor.pickFiles()),
    { dispose: () => clearTimeout(restartTimer) },
    { dispose: () => clearTimeout(statusTimer) },
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

  tuna.storedKeys = await loadStoredKeys(context.secrets);
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
    detail: `${session.messageCount} message${session.messageCount === 1 ? "" : "s"}${session.model ? ` · ${session.model}` : ""}`,
    session,
  };
}

/** The provider keys kept in SecretStorage, by variable. */
async function loadStoredKeys(secrets: vscode.SecretStorage): Promise<Record<string, string>> {
  const keys: Record<string, string> = {};
  for (const variable of Object.values(KEY_VARIABLES)) {
    const value = await secrets.get(secretName(variable));
    if (value) keys[variable] = value;
  }
  return keys;
}
