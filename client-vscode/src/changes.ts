/**
 * The Changes view's host side: a request's changed files (`tunacode.changes`), each file's
 * diff in VS Code's diff editor, Undo of one file (the reverse of its diff, applied as an
 * editor edit), a turn's Compare (all its files in one multi-file diff editor), and Restore
 * (`tunacode.session.rewind`, asking before it overwrites files that changed since).
 *
 * The "before" side of a diff is rebuilt from the file's current text and the server's
 * unified diff (src/diff.ts); when the diff no longer fits the file, nothing is guessed.
 */

import * as path from "node:path";
import * as vscode from "vscode";
import { ResponseError } from "vscode-languageclient/node";
import { isInsidePath } from "./context";
import { applyUnifiedDiff, parseHunks, reverseHunk, reverseRecorded, reverseUnifiedDiff, withoutBufferMark } from "./diff";
import { type ChangesResult, Commands, ErrorCodes, type RewindResult } from "./protocol";
import { type TunaServer, errorMessage } from "./server";
import type { HostMessage } from "./messages";
import type { Action } from "./webview/state";

/** Read-only documents for the sides of a diff that exist nowhere on disk. */
export const CHANGE_SCHEME = "tunacode-change";
const MAX_KEPT_CONTENTS = 200;

export interface ChangesHost {
  readonly currentSessionId: string | undefined;
  readonly isRunning: boolean;
  /** Reloads the session's history into the panel (after a rewind cut it). */
  resume(sessionId: string): Promise<void>;
}

export class ChangesController implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly contents = new Map<string, string>();
  private nextKey = 1;
  private readonly registration: vscode.Disposable;

  constructor(
    private readonly server: TunaServer,
    private readonly host: ChangesHost,
    private readonly view: { dispatch(action: Action): void; post(message: HostMessage): void },
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(CHANGE_SCHEME, this);
  }

  dispose(): void {
    this.registration.dispose();
    this.contents.clear();
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.query) ?? "";
  }

  /** The panel's Changes list of one request. */
  async listRequest(requestId: string): Promise<void> {
    const sessionId = this.host.currentSessionId;
    if (!sessionId) return;
    try {
      const result = await this.server.executeCommand<ChangesResult>(Commands.changes, { sessionId, requestId });
      this.view.dispatch({ type: "changes", requestId, files: result.files, truncated: result.truncated });
    } catch (err) {
      this.log.warn(`tunacode.changes ${requestId}: ${errorMessage(err)}`);
      this.view.dispatch({ type: "changes_failed", requestId, message: `Could not list the changes: ${errorMessage(err)}` });
    }
  }

  /**
   * The turn's Compare: every file the request changed, before it ↔ now, in one multi-file
   * diff editor (`vscode.changes`). A file whose diff no longer fits (changed since, binary,
   * cut) is left out and named; without that editor (VS Code before 1.85) the Changes list.
   */
  async compareRequest(requestId: string): Promise<void> {
    const sessionId = this.host.currentSessionId;
    if (!sessionId) return;
    let result: ChangesResult;
    try {
      result = await this.server.executeCommand<ChangesResult>(Commands.changes, { sessionId, requestId });
    } catch (err) {
      void vscode.window.showErrorMessage(`TunaCode: could not list the changes: ${errorMessage(err)}`);
      return;
    }
    const sides: [vscode.Uri, vscode.Uri, vscode.Uri][] = [];
    const left: string[] = [];
    for (const file of result.files) {
      const uri = this.resolve(file.path);
      if (!uri) continue;
      const current = await readText(uri);
      if (current === undefined) {
        const before = reverseUnifiedDiff("", withoutBufferMark(file.diff));
        if (before !== undefined) sides.push([uri, this.virtual(uri.path, before), this.virtual(uri.path, "")]);
        else left.push(file.path);
        continue;
      }
      const before = reverseRecorded(current, file.diff);
      // The before side under the file's own path, so the editor does not show a rename.
      if (before !== undefined) sides.push([uri, this.virtual(uri.path, before), uri]);
      else left.push(file.path);
    }
    if (sides.length > 0) {
      try {
        await vscode.commands.executeCommand("vscode.changes", "Changes of this request (before ↔ now)", sides);
      } catch (err) {
        this.log.info(`vscode.changes: ${errorMessage(err)}; the Changes list instead`);
        this.view.dispatch({ type: "changes", requestId, files: result.files, truncated: result.truncated });
      }
    } else if (result.files.length === 0) {
      void vscode.window.showInformationMessage("TunaCode: no changes recorded for this request.");
    }
    if (left.length > 0) {
      void vscode.window.showInformationMessage(
        `TunaCode: ${left.slice(0, 5).join(", ")}${left.length > 5 ? ` and ${left.length - 5} more` : ""} changed since (or the diff is binary or cut): see the Changes list.`,
      );
    }
  }

  /** The palette's "Show Changes of This Session": a pick of every changed file. */
  async pickSessionChange(): Promise<void> {
    const sessionId = this.host.currentSessionId;
    if (!sessionId) {
      void vscode.window.showInformationMessage("TunaCode: no session yet.");
      return;
    }
    let result: ChangesResult;
    try {
      result = await this.server.executeCommand<ChangesResult>(Commands.changes, { sessionId });
    } catch (err) {
      void vscode.window.showErrorMessage(`TunaCode: could not list the changes: ${errorMessage(err)}`);
      return;
    }
    if (result.files.length === 0) {
      void vscode.window.showInformationMessage("TunaCode: no changes in this session.");
      return;
    }
    const picked = await vscode.window.showQuickPick(
      result.files.map((f) => ({ label: f.path, description: f.status, file: f })),
      { title: `Changes of this session${result.truncated ? " (cut)" : ""}` },
    );
    if (picked) await this.showDiff(picked.file.path, picked.file.diff, picked.file.status);
  }

  /**
   * A change in the diff editor. With `status` (a recorded change): before ↔ the file now.
   * Without (an edit still asking for approval): the file now ↔ with the edit applied.
   */
  async showDiff(file: string, recorded: string, status?: string): Promise<void> {
    const diff = withoutBufferMark(recorded);
    const uri = this.resolve(file);
    if (!uri) return;
    const name = path.basename(file);
    const current = await readText(uri);
    if (status === "deleted" || (status !== undefined && current === undefined)) {
      const before = reverseUnifiedDiff("", diff);
      if (before !== undefined && current === undefined) {
        await this.openDiff(this.virtual(file, before), this.virtual(file, ""), `${name} (before ↔ deleted)`);
        return;
      }
    } else if (current !== undefined) {
      const before = reverseRecorded(current, recorded);
      if (before !== undefined) {
        await this.openDiff(this.virtual(file, before), uri, `${name} (before ↔ after this request)`);
        return;
      }
      const after = status === undefined ? applyUnifiedDiff(current, diff) : undefined;
      if (after !== undefined) {
        await this.openDiff(uri, this.virtual(file, after), `${name} (now ↔ with the edit)`);
        return;
      }
    }
    // The file changed since, or the diff is binary or cut: show the recorded diff as it is,
    // read-only (never an Untitled document that asks to be saved).
    await this.showReadOnly(`${file}.diff`, recorded);
    void vscode.window.showInformationMessage(
      parseHunks(diff)
        ? `TunaCode: ${file} changed since this diff was recorded; showing the recorded diff.`
        : `TunaCode: the diff of ${file} is binary or was cut; showing it as recorded.`,
    );
  }

  /**
   * Undo of one file: the reverse of its diff, as an editor edit (so Ctrl+Z brings the
   * agent's version back), saved when the document had no unsaved changes of the user's.
   * Refused, saying why, when the file changed since: Rewind then asks before overwriting.
   */
  async undoFile(requestId: string, file: string, status: string, recorded: string): Promise<void> {
    // An edit of a buffer with unsaved changes is undone in that buffer (never saved).
    const diff = withoutBufferMark(recorded);
    const uri = this.resolve(file);
    if (!uri) return;
    // Without hunks only an empty added or deleted file can be undone; a binary or cut diff
    // cannot be checked against the file.
    const hunks = parseHunks(diff);
    const emptyFile = !hunks && status !== "modified" && !/^Binary files /m.test(diff) && !/^@@/m.test(diff);
    if (!hunks && !emptyFile) {
      void vscode.window.showWarningMessage(
        `TunaCode: the change of ${file} cannot be undone by itself (the file is binary, or its diff was cut). "Rewind to before this prompt" restores it.`,
      );
      return;
    }
    const current = await readText(uri);
    const changedSince = (): void =>
      void vscode.window.showWarningMessage(
        `TunaCode: ${file} changed since this request, so its change cannot be undone by itself. "Rewind to before this prompt" restores it (and asks before overwriting).`,
      );
    const edit = new vscode.WorkspaceEdit();
    let save: vscode.Uri | undefined;
    if (status === "added") {
      if (current !== undefined) {
        if ((emptyFile ? current : reverseUnifiedDiff(current, diff)) !== "") return changedSince();
        edit.deleteFile(uri, { ignoreIfNotExists: true });
      }
    } else if (status === "deleted") {
      if (current !== undefined) return changedSince();
      const before = emptyFile ? "" : reverseUnifiedDiff("", diff);
      if (before === undefined) return changedSince();
      edit.createFile(uri, { ignoreIfExists: false });
      if (before !== "") edit.insert(uri, new vscode.Position(0, 0), before);
      save = uri;
    } else {
      const doc = await vscode.workspace.openTextDocument(uri).then(
        (d) => d,
        () => undefined,
      );
      if (!doc) return changedSince();
      const before = reverseRecorded(doc.getText(), recorded);
      if (before === undefined) return changedSince();
      edit.replace(uri, new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), before);
      if (!doc.isDirty) save = uri;
    }
    if (edit.size > 0 && !(await vscode.workspace.applyEdit(edit))) {
      void vscode.window.showErrorMessage(`TunaCode: the editor refused to undo the change of ${file}.`);
      return;
    }
    if (save) {
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === save.toString());
      if (doc?.isDirty && !(await doc.save())) {
        void vscode.window.showWarningMessage(`TunaCode: ${file} is undone in the editor but could not be saved.`);
      }
    }
    this.log.info(`Undid the change of ${file} (request ${requestId})`);
    this.view.dispatch({ type: "file_undone", requestId, path: file });
  }

  /**
   * Undo of one hunk of a file's change: its old lines back for its new ones, as an editor
   * edit of the document (the open buffer when there is one; saved only when it had no
   * unsaved changes). Refused, saying why, when the file no longer has the hunk's new lines.
   */
  async undoHunk(requestId: string, file: string, recorded: string, index: number): Promise<void> {
    const uri = this.resolve(file);
    if (!uri) return;
    const doc = await vscode.workspace.openTextDocument(uri).then(
      (d) => d,
      () => undefined,
    );
    const now = doc?.getText();
    const before = now === undefined ? undefined : reverseHunk(now, recorded, index);
    if (!doc || now === undefined || before === undefined) {
      void vscode.window.showWarningMessage(
        `TunaCode: ${file} no longer has the lines of this change (it changed since), so the change cannot be undone by itself. "Rewind to before this prompt" restores the file (and asks before overwriting).`,
      );
      return;
    }
    // Replace only the lines that differ, so the cursor and the rest of the buffer stay.
    let head = 0;
    while (head < now.length && head < before.length && now[head] === before[head]) head++;
    let tail = 0;
    while (tail < now.length - head && tail < before.length - head && now[now.length - 1 - tail] === before[before.length - 1 - tail]) tail++;
    const edit = new vscode.WorkspaceEdit();
    edit.replace(uri, new vscode.Range(doc.positionAt(head), doc.positionAt(now.length - tail)), before.slice(head, before.length - tail));
    const wasDirty = doc.isDirty;
    if (!(await vscode.workspace.applyEdit(edit))) {
      void vscode.window.showErrorMessage(`TunaCode: the editor refused to undo the change in ${file}.`);
      return;
    }
    if (!wasDirty && doc.isDirty && !(await doc.save())) {
      void vscode.window.showWarningMessage(`TunaCode: the change in ${file} is undone in the editor but could not be saved.`);
    }
    this.log.info(`Undid hunk ${index + 1} of the change of ${file} (request ${requestId})`);
    this.view.dispatch({ type: "hunk_undone", requestId, path: file, index });
  }

  /** "Rewind to before this prompt": files and history; a conflict asks before forcing. */
  async rewind(requestId: string, prompt?: string, edit = false): Promise<void> {
    const sessionId = this.host.currentSessionId;
    if (!sessionId) return;
    if (this.host.isRunning) {
      void vscode.window.showInformationMessage("TunaCode: stop the running request before rewinding.");
      return;
    }
    const choice = await vscode.window.showWarningMessage(
      edit ? "Edit this prompt and resend? The conversation is rewound to before it." : "Rewind to before this prompt?",
      { modal: true, detail: "The files this request and every later one changed are put back, and the conversation is cut back to before this prompt." },
      "Rewind",
    );
    if (choice !== "Rewind") return;
    let result: RewindResult | undefined;
    try {
      result = await this.server.executeCommand<RewindResult>(Commands.sessionRewind, { sessionId, requestId, files: true });
    } catch (err) {
      const files = conflictFiles(err);
      if (!files) {
        void vscode.window.showErrorMessage(`TunaCode: rewind failed: ${errorMessage(err)}`);
        return;
      }
      const overwrite = await vscode.window.showWarningMessage(
        `${files.length === 1 ? "A file" : `${files.length} files`} changed since the agent wrote ${files.length === 1 ? "it" : "them"}. Overwrite?`,
        {
          modal: true,
          detail: `${files.slice(0, 20).join("\n")}${files.length > 20 ? `\n… and ${files.length - 20} more` : ""}\n\nRewinding puts ${files.length === 1 ? "it" : "them"} back as before this prompt; the newer edits are lost.`,
        },
        "Overwrite",
      );
      if (overwrite !== "Overwrite") return;
      try {
        result = await this.server.executeCommand<RewindResult>(Commands.sessionRewind, { sessionId, requestId, files: true, force: true });
      } catch (err2) {
        void vscode.window.showErrorMessage(`TunaCode: rewind failed: ${errorMessage(err2)}`);
        return;
      }
    }
    this.log.info(`Rewound session ${sessionId} to before ${requestId}: restored ${JSON.stringify(result.restored)}`);
    await this.host.resume(sessionId);
    // "Edit and resend" puts the prompt in the box to edit; a plain rewind keeps what is typed.
    if (prompt) this.view.post(edit ? { type: "focus_prompt", text: prompt } : { type: "restore_prompt", text: prompt });
    const n = result.restored.length;
    void vscode.window.showInformationMessage(
      `TunaCode: rewound to before the prompt${n > 0 ? `; ${n === 1 ? "1 file" : `${n} files`} restored` : ""}.`,
    );
  }

  /** A changed file's URI; undefined for a path that is not inside the workspace folder. */
  private resolve(file: string): vscode.Uri | undefined {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    if (!folder || !isInsidePath(file)) {
      void vscode.window.showWarningMessage(`TunaCode: ${file} is not a path inside this workspace.`);
      return undefined;
    }
    return vscode.Uri.joinPath(folder, file);
  }

  /** A read-only editor tab with `text` (this scheme's documents cannot be edited or saved). */
  async showReadOnly(name: string, text: string, preview = true): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(this.virtual(name, text));
    await vscode.window.showTextDocument(doc, { preview });
  }

  private virtual(file: string, text: string): vscode.Uri {
    const key = String(this.nextKey++);
    this.contents.set(key, text);
    if (this.contents.size > MAX_KEPT_CONTENTS) this.contents.delete(this.contents.keys().next().value as string);
    return vscode.Uri.from({ scheme: CHANGE_SCHEME, path: `/${file.replace(/^\/+/, "")}`, query: key });
  }

  private async openDiff(left: vscode.Uri, right: vscode.Uri, title: string): Promise<void> {
    await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: true });
  }
}

/** The files of a -32004 rewind conflict, else undefined. */
export function conflictFiles(err: unknown): string[] | undefined {
  if (!(err instanceof ResponseError) || err.code !== ErrorCodes.rewindConflict) return undefined;
  const files = (err.data as { files?: unknown } | undefined)?.files;
  return Array.isArray(files) ? files.filter((f): f is string => typeof f === "string") : [];
}

/** The editor's text of an open document (unsaved changes included), else the disk's. */
async function readText(uri: vscode.Uri): Promise<string | undefined> {
  const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  if (open) return open.getText();
  try {
    return new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
  } catch {
    return undefined;
  }
}
