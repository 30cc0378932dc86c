"""The editor's open documents for the tools (tools/documents.py), under LSP.

Reads: the text pygls keeps in sync (didOpen/didChange), unsaved changes included.

Edits of an open document, by the document's state and the client:

- no unsaved changes (its text equals the file), a rich client (`experimental.tunacode.
  saveDocuments`): a `workspace/applyEdit` with one `TextDocumentEdit` versioned to the
  document's current version (one undo step; the lines that changed, not the whole text),
  then `tunacode/saveDocuments {uris}`: buffer and file agree, no "changed on disk" prompt.
- no unsaved changes, a plain client: the file is written (as for a closed file) and nothing
  is sent: a buffer edited by applyEdit is "modified", and the file written behind it makes
  Neovim's `:checktime` raise W12 (checked). Editors reload an unmodified buffer whose file
  changed without asking (Neovim's `autoread`, on by default; VS Code).
- unsaved changes of the user's: applyEdit only. The edit joins the user's in the buffer;
  neither is saved behind the user's back, nothing conflicts (the file did not change), and
  the model is told the file on disk is not updated until the user saves.

After an applied edit the server waits, bounded, for the client's didChange to show the edit's
result (Neovim answers applyEdit first and sends didChange debounced; it also answers `applied`
for an edit versioned older than its buffer, which it drops): an edit is reported done only when
the document holds it, and the next edit is planned on the editor's current text.

Waits on the client are bounded.

A document that changed in the editor since it was read is re-read and the edit planned again
(StaleDocument); a client that refuses the edit gives the model a clear error.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls import uris
from pygls.lsp.server import LanguageServer

from tunacode_lsp.lsp import document_sync
from tunacode_lsp.lsp.client_requests import ClientDidNotAnswer, ask_client
from tunacode_lsp.lsp.editor import client_offers
from tunacode_lsp.tools.beneath import replace_beneath
from tunacode_lsp.tools.confined_read import read_confined_async
from tunacode_lsp.tools.documents import BufferEdit, StaleDocument
from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.textfile import MAX_FILE_BYTES, encode

log = logging.getLogger(__name__)

APPLY_WAIT_SECONDS = 10.0
SAVE_WAIT_SECONDS = 10.0
LANDED_WAIT_SECONDS = 5.0  # the client's didChange that carries an applied edit (Neovim's is debounced)
SAVE_DOCUMENTS = "tunacode/saveDocuments"


def _changed_lines(old: str, new: str) -> tuple[int, int, str]:
    """(first line, end line exclusive, replacement text): the smallest run of whole lines."""

    a, b = old.split("\n"), new.split("\n")
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a, end_b = end_a - 1, end_b - 1
    return start, end_a, "".join(line + "\n" for line in b[start:end_b])


class LspDocuments:
    def __init__(self, ls: LanguageServer, real_root: Path) -> None:
        self._ls = ls
        self._root = real_root
        self._buffer_only: list[BufferEdit] = []

    def buffer_edits(self) -> list[BufferEdit]:
        return list(self._buffer_only)

    def _document(self, real_path: Path) -> Any:
        for uri, document in self._ls.workspace.text_documents.items():
            if document.version is not None and uri.startswith("file:"):
                fs_path = uris.to_fs_path(uri)
                if fs_path and os.path.realpath(fs_path) == str(real_path):
                    return document
        return None

    def text(self, real_path: Path) -> str | None:
        document = self._document(real_path)
        return document.source if document is not None else None

    def texts(self) -> dict[Path, str]:
        found: dict[Path, str] = {}
        for uri, document in self._ls.workspace.text_documents.items():
            if document.version is not None and uri.startswith("file:"):
                fs_path = uris.to_fs_path(uri)
                if fs_path:
                    found[Path(os.path.realpath(fs_path))] = document.source
        return found

    async def apply(self, real_path: Path, old_text: str, new_text: str) -> str:
        document = self._document(real_path)
        if document is None or document.source != old_text:
            raise StaleDocument()
        shown = real_path.relative_to(self._root).as_posix()
        # the confined reader, off the loop: a file that became a FIFO or a link out is "not clean"
        on_disk = (await read_confined_async(self._root, real_path, limit=MAX_FILE_BYTES)).data
        clean = on_disk == encode(old_text)
        if clean and not client_offers(self._ls, "saveDocuments"):
            replace_beneath(self._root, real_path, encode(new_text), shown)
            return ""
        workspace = self._ls.client_capabilities.workspace
        if not (workspace and workspace.apply_edit):
            raise ToolError(f"'{shown}' has unsaved changes in an editor that cannot take edits (no workspace/applyEdit): "
                            "ask the user to save it first. Nothing was written.")
        first, end, replacement = _changed_lines(old_text, new_text)
        lines = old_text.split("\n")
        if end >= len(lines):  # the change reaches the last line: replace up to the very end
            rng = types.Range(types.Position(first, 0), types.Position(len(lines) - 1, len(lines[-1])))
            replacement = replacement[:-1] if replacement.endswith("\n") else replacement
        else:
            rng = types.Range(types.Position(first, 0), types.Position(end, 0))
        edit = types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=document.uri, version=document.version),
            edits=[types.TextEdit(range=rng, new_text=replacement)],
        )])
        try:
            answer = await ask_client(
                self._ls, types.WORKSPACE_APPLY_EDIT, types.ApplyWorkspaceEditParams(edit=edit, label="TunaCode"),
                timeout=APPLY_WAIT_SECONDS, label="tunacode-edit",
            )
        except ClientDidNotAnswer:
            raise ToolError(f"The editor did not apply the edit of '{shown}' within {APPLY_WAIT_SECONDS:g} s; "
                            "nothing was written. Try again.") from None
        applied = getattr(answer, "applied", None) if not isinstance(answer, dict) else answer.get("applied")
        if not applied:
            document = self._document(real_path)
            if document is not None and document.source != old_text:
                raise StaleDocument()
            reason = getattr(answer, "failure_reason", None) if not isinstance(answer, dict) else answer.get("failureReason")
            raise ToolError(f"The editor refused the edit of '{shown}'{f': {reason}' if reason else ''}. Nothing was written.")
        await self._landed(real_path, shown, new_text)
        if not clean:
            self._buffer_only.append(BufferEdit(real_path, old_text, new_text))
            return (f" The edit is in the editor's buffer of {shown}, which has unsaved changes of the user's: "
                    "the file on disk is not updated until the user saves it.")
        await self._to_disk(real_path, shown, document.uri, encode(new_text))
        return ""

    async def _landed(self, real_path: Path, shown: str, new_text: str) -> None:
        """Wait, bounded, until the client's didChange shows the edit's result: a client may answer
        applyEdit before it sends the change (Neovim: debounced), and one may answer `applied` for an
        edit it dropped (Neovim, for an edit versioned older than its buffer). Never report an edit
        the document does not hold; the next edit is planned on the editor's text, not a stale copy."""

        loop = asyncio.get_running_loop()
        deadline = loop.time() + LANDED_WAIT_SECONDS
        while True:
            document = self._document(real_path)
            if document is None:
                raise ToolError(f"'{shown}' was closed in the editor during the edit; read it again to see "
                                "whether the edit is there.")
            if document.source == new_text:
                return
            remaining = deadline - loop.time()
            if remaining <= 0 or not await document_sync.next_change(self._ls, remaining):
                break
        raise ToolError(f"The editor answered that it applied the edit of '{shown}', but its text does not show "
                        f"the result within {LANDED_WAIT_SECONDS:g} s (the edit was dropped, or the text changed "
                        "meanwhile). Read the file again before editing it.")

    async def _to_disk(self, real_path: Path, shown: str, uri: str, data: bytes) -> None:
        if client_offers(self._ls, "saveDocuments"):
            try:
                answer = await ask_client(self._ls, SAVE_DOCUMENTS, {"uris": [uri]}, timeout=SAVE_WAIT_SECONDS, label="tunacode-save")
                saved = answer.get("saved") if isinstance(answer, dict) else getattr(answer, "saved", None)
                if isinstance(saved, list | tuple) and uri in saved:
                    return
            except Exception as exc:  # noqa: BLE001 - the server writes it instead
                log.info("tunacode/saveDocuments failed: %s", exc)
        replace_beneath(self._root, real_path, data, shown)  # the buffer already shows these bytes
