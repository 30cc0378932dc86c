/**
 * What the side panel asks for (its postMessage traffic, messages.ts): each message routed to
 * the conversation, the approvals, the Changes view, the editor actions or the host's own
 * commands. No state of its own.
 */

import * as vscode from "vscode";
import type { Approvals } from "./approvals";
import type { ChangesController } from "./changes";
import type { Conversation } from "./conversation";
import type { EditorActions } from "./editorActions";
import type { WebviewMessage } from "./messages";

export interface WebviewMessageDeps {
  conversation: Conversation;
  approvals: Approvals;
  changes: ChangesController;
  editor: EditorActions;
  log: vscode.LogOutputChannel;
  restartServer(): Promise<void>;
  setApiKey(): Promise<void>;
  pickModel(): Promise<void>;
  showMcpServers(): Promise<void>;
  showOutput(toolCallId: string, name: string): Promise<void>;
}

/** The panel's message handler. */
export function webviewMessageHandler(deps: WebviewMessageDeps): (message: WebviewMessage) => Promise<void> {
  const editor = deps.editor;
  return async (message) => {
    switch (message.type) {
      case "send":
        return deps.conversation.ask(
          message.prompt,
          await editor.withMentions(message.prompt, Array.isArray(message.context) ? message.context : []),
          message.mode === "plan" ? "plan" : undefined,
          message.how === "queue" ? "queue" : "steer",
        );
      case "unqueue":
        return deps.conversation.unqueue(message.key);
      case "pick_files":
        return editor.pickFiles();
      case "complete_files":
        return editor.completeFiles(String(message.query ?? ""));
      case "attach_uris":
        return editor.attachUris(Array.isArray(message.uris) ? message.uris : []);
      case "stop":
        return deps.conversation.stop();
      case "new_session":
        return deps.conversation.newSession();
      case "list_sessions":
        await deps.conversation.listSessions();
        return;
      case "resume":
        return deps.conversation.resume(message.sessionId);
      case "delete":
        return deps.conversation.delete(message.sessionId, message.title);
      case "session_menu": {
        const choice = await vscode.window.showQuickPick(["Resume", "Delete"], { title: `Session: ${message.title}` });
        if (choice === "Resume") return deps.conversation.resume(message.sessionId);
        if (choice === "Delete") return deps.conversation.delete(message.sessionId, message.title);
        return;
      }
      case "copy":
        await vscode.env.clipboard.writeText(message.text);
        return;
      case "banner_action":
        if (message.action === "openSettings") await vscode.commands.executeCommand("workbench.action.openSettings", "tunacode");
        if (message.action === "showLogs") deps.log.show();
        if (message.action === "restart" || message.action === "retry") await deps.restartServer();
        if (message.action === "setApiKey") await deps.setApiKey();
        return;
      case "approve":
        deps.approvals.answer(message.requestId, message.toolCallId, message.decision);
        return;
      case "open_file":
        return editor.openFile(message.path, message.line);
      case "show_output":
        return deps.showOutput(message.toolCallId, message.name);
      case "insert":
        return editor.insertAtCursor(message.text);
      case "pick_model":
        return deps.pickModel();
      case "mcp_details":
        return deps.showMcpServers();
      case "show_changes":
        return message.requestId ? deps.changes.listRequest(message.requestId) : deps.changes.pickSessionChange();
      case "compare_request":
        return deps.changes.compareRequest(message.requestId);
      case "rewind":
        return deps.changes.rewind(message.requestId, message.prompt, message.edit === true);
      case "show_diff":
        return deps.changes.showDiff(message.path, message.diff, message.status);
      case "undo_file":
        return deps.changes.undoFile(message.requestId, message.path, message.status, message.diff);
      case "undo_hunk":
        return deps.changes.undoHunk(message.requestId, message.path, message.diff, message.index);
      case "ready":
        return;
    }
  };
}
