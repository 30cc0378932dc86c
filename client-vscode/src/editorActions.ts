/**
 * What the panel and the palette do in VS Code's editors and workspace: context from the
 * editor (the selection, picked, dropped or `@`-mentioned files), `@` completion's file list,
 * opening a file at a line, inserting code at the cursor. Each result goes to the panel.
 */

import * as path from "node:path";
import * as vscode from "vscode";
import { MAX_CONTEXT_ITEMS, isInsidePath, mentionedPaths, mergeContext, selectionItem } from "./context";
import type { ChatPanel } from "./panel";
import type { ContextItem, LspRange } from "./protocol";
import { rankFiles } from "./webview/mentions";

export class EditorActions {
  constructor(private readonly panel: ChatPanel) {}

  /** `@path` mentions of files that exist in the workspace become `file` context items. */
  async withMentions(prompt: string, context: ContextItem[]): Promise<ContextItem[]> {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    if (!folder) return context;
    const mentioned: ContextItem[] = [];
    for (const p of mentionedPaths(prompt).slice(0, MAX_CONTEXT_ITEMS)) {
      if (!isInsidePath(p)) continue;
      const uri = vscode.Uri.joinPath(folder, p);
      try {
        if ((await vscode.workspace.fs.stat(uri)).type & vscode.FileType.File) mentioned.push({ type: "file", uri: uri.toString() });
      } catch {
        // not a file of this workspace: left as text
      }
    }
    return mergeContext([...context, ...mentioned]);
  }

  /** The workspace's files for `@` completion: listed at most every 10 s, at most 5,000. */
  private fileList: { at: number; paths: string[] } | undefined;

  async completeFiles(query: string): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder) return this.panel.post({ type: "file_completions", query, paths: [] });
    if (!this.fileList || Date.now() - this.fileList.at > 10_000) {
      const found = await vscode.workspace.findFiles(new vscode.RelativePattern(folder, "**/*"), "{**/node_modules/**,**/.git/**}", 5000);
      this.fileList = { at: Date.now(), paths: found.map((uri) => vscode.workspace.asRelativePath(uri, false)) };
    }
    this.panel.post({ type: "file_completions", query, paths: rankFiles(this.fileList.paths, query.slice(0, 200)) });
  }

  /** Files dropped on the panel (Shift+drag from the explorer or an editor tab). */
  async attachUris(uris: unknown[]): Promise<void> {
    let refused = 0;
    for (const raw of uris.slice(0, MAX_CONTEXT_ITEMS)) {
      let uri: vscode.Uri;
      try {
        uri = vscode.Uri.parse(String(raw), true);
      } catch {
        refused++;
        continue;
      }
      const inside = uri.scheme === "file" && vscode.workspace.getWorkspaceFolder(uri) !== undefined;
      const isFile = inside && (await vscode.workspace.fs.stat(uri).then((s) => (s.type & vscode.FileType.File) !== 0, () => false));
      if (isFile) this.panel.dispatch({ type: "attach", item: { type: "file", uri: uri.toString() } });
      else refused++;
    }
    if (refused > 0) void vscode.window.showInformationMessage(`TunaCode: only files of this workspace can be added (${refused} left out).`);
  }

  /** "Add file": a pick of workspace files (the open ones first) to send as context. */
  async pickFiles(): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    if (!folder) {
      void vscode.window.showInformationMessage("TunaCode: open a folder to add its files as context.");
      return;
    }
    const found = await vscode.workspace.findFiles("**/*", "{**/node_modules/**,**/.git/**}", 5000);
    const open = new Set(vscode.workspace.textDocuments.filter((d) => d.uri.scheme === "file").map((d) => d.uri.toString()));
    const items = found
      .map((uri) => ({ label: vscode.workspace.asRelativePath(uri, false), uri, open: open.has(uri.toString()) }))
      .sort((a, b) => Number(b.open) - Number(a.open) || a.label.localeCompare(b.label))
      .map((f) => ({ label: f.label, description: f.open ? "open" : undefined, uri: f.uri }));
    const picked = await vscode.window.showQuickPick(items, { title: "Add files as context", canPickMany: true, matchOnDescription: true });
    for (const p of picked ?? []) this.panel.dispatch({ type: "attach", item: { type: "file", uri: p.uri.toString() } });
    await this.panel.reveal(true);
  }

  /** "Ask about Selection": the selection (or the whole file) as context, then the prompt. */
  async askAboutSelection(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      void vscode.window.showInformationMessage("TunaCode: select some code in an editor first.");
      return;
    }
    const doc = editor.document;
    if (doc.uri.scheme !== "file" || !vscode.workspace.getWorkspaceFolder(doc.uri)) {
      void vscode.window.showInformationMessage("TunaCode: only files of this workspace can be sent as context.");
      return;
    }
    const selections = editor.selections.filter((s) => !s.isEmpty);
    if (selections.length === 0) this.panel.dispatch({ type: "attach", item: { type: "file", uri: doc.uri.toString() } });
    for (const sel of selections.slice(0, MAX_CONTEXT_ITEMS)) {
      const range = {
        start: { line: sel.start.line, character: sel.start.character },
        end: { line: sel.end.line, character: sel.end.character },
      };
      this.panel.dispatch({ type: "attach", item: selectionItem(doc.uri.toString(), range, doc.getText(sel)) });
    }
    // The errors the editor shows in the selection go along (at most 20).
    const diagnostics = vscode.languages
      .getDiagnostics(doc.uri)
      .filter((d) => selections.some((sel) => sel.intersection(d.range) !== undefined))
      .slice(0, 20);
    for (const d of diagnostics) {
      const lsp = toLspDiagnostic(d);
      this.panel.dispatch({
        type: "attach",
        item: {
          type: "diagnostic",
          uri: doc.uri.toString(),
          range: lsp.range,
          message: d.message.slice(0, 4000),
          severity: lsp.severity,
          ...(lsp.source ? { source: lsp.source } : {}),
          ...(lsp.code !== undefined ? { code: lsp.code } : {}),
        },
      });
    }
    await this.panel.reveal(true);
  }

  async openFile(file: string, line?: number): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    const uri = path.isAbsolute(file) || !folder ? vscode.Uri.file(file) : vscode.Uri.joinPath(folder, file);
    try {
      await vscode.workspace.fs.stat(uri);
    } catch {
      void vscode.window.showWarningMessage(`TunaCode: ${file} does not exist in this workspace.`);
      return;
    }
    const position = line ? new vscode.Position(Math.max(0, line - 1), 0) : undefined;
    await vscode.window.showTextDocument(uri, {
      preview: true,
      selection: position ? new vscode.Range(position, position) : undefined,
    });
  }

  async insertAtCursor(text: string): Promise<void> {
    const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
    if (!editor) {
      void vscode.window.showInformationMessage("TunaCode: open an editor to insert the code into.");
      return;
    }
    await editor.edit((edit) => {
      for (const selection of editor.selections) edit.replace(selection, text);
    });
    await vscode.window.showTextDocument(editor.document, editor.viewColumn);
  }

}

export function toLspDiagnostic(d: vscode.Diagnostic): { range: LspRange; severity: number; code?: string | number; source?: string; message: string } {
  const severity = { 0: 1, 1: 2, 2: 3, 3: 4 }[d.severity] ?? 1;
  const code = typeof d.code === "object" && d.code !== null ? d.code.value : d.code;
  return {
    range: {
      start: { line: d.range.start.line, character: d.range.start.character },
      end: { line: d.range.end.line, character: d.range.end.character },
    },
    severity,
    ...(code !== undefined ? { code } : {}),
    ...(d.source ? { source: d.source } : {}),
    message: d.message,
  };
}
