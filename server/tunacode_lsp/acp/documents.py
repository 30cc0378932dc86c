"""The client's files for the tools (tools/documents.py), under ACP: fs/read_text_file and
fs/write_text_file, when the client offers them in `initialize`.

- Reads (`text`): the client's text of the file (an open buffer with unsaved changes, else the
  disk as the editor reads it). Only for files the disk rules accept (inside the workspace, a
  regular text file, not too big): anything else is left to the tool, which reports it as for
  the disk. The wait is bounded; a client that fails or is slow means the disk is read.
  `text` blocks on the client, so the tools call it off the event loop (`reads_block`).
- Edits (`apply`): the file is read again through the client; if it is no longer the text the
  edit was planned on, the tool plans again (StaleDocument). Then fs/write_text_file puts the
  new text in the editor (its buffer and undo; the editor decides when it reaches the disk).
  A client that reads but cannot write: the disk is written when it still holds the planned
  text, else the edit is refused (the user has unsaved changes).
"""

from __future__ import annotations

import asyncio
import logging
import stat
import threading
from pathlib import Path

from acp.interfaces import Client

from tunacode_lsp.tools.beneath import read_beneath, replace_beneath
from tunacode_lsp.tools.documents import BufferEdit, StaleDocument
from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.paths import display_path
from tunacode_lsp.tools.textfile import MAX_FILE_BYTES, decode, encode, read_text_file

log = logging.getLogger(__name__)

READ_WAIT_SECONDS = 10.0
WRITE_WAIT_SECONDS = 10.0


class AcpDocuments:
    reads_block = True  # tools/documents.py: call `text` off the event loop

    def __init__(
        self, client: Client, session_id: str, real_root: Path, *, can_read: bool, can_write: bool,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self._client = client
        self._session_id = session_id
        self._root = real_root
        self._can_read = can_read
        self._can_write = can_write
        self._loop = loop
        self._loop_thread = threading.get_ident()  # made on the loop
        self.applied: dict[Path, tuple[str, str]] = {}  # edits put in the editor: (old, new), for the diff shown
        self._written: list[BufferEdit] = []  # every edit written through the client, in order

    def text(self, real_path: Path) -> str | None:
        if threading.get_ident() == self._loop_thread:  # must not block the loop: the disk it is
            return None
        shown = display_path(self._root, real_path)
        try:
            on_disk = read_text_file(real_path, shown, self._root)  # the disk rules first
        except ToolError:
            return None  # the tool reads the disk and says what is wrong
        if not self._can_read:  # write-only client: plan on the disk, write through the client
            return decode(on_disk) if self._can_write else None
        future = asyncio.run_coroutine_threadsafe(self._read(real_path), self._loop)
        try:
            return future.result(READ_WAIT_SECONDS)
        except Exception as exc:  # noqa: BLE001 - a slow or failing client: the disk is read
            future.cancel()
            log.info("fs/read_text_file %s failed (%s); reading the disk", shown, exc or type(exc).__name__)
            return None

    async def _read(self, real_path: Path) -> str | None:
        response = await self._client.read_text_file(session_id=self._session_id, path=str(real_path))
        content = response.content
        return content if len(content) <= MAX_FILE_BYTES else None

    def texts(self) -> dict[Path, str]:
        """ACP does not say which documents are open: grep searches the disk."""

        return {}

    def buffer_edits(self) -> list[BufferEdit]:
        """Edits written through the client that the disk does not hold (the editor kept them in
        its buffer, unsaved): checkpoints count them."""

        return [edit for edit in self._written if _disk_bytes(self._root, edit.real_path) != encode(edit.new_text)]

    async def apply(self, real_path: Path, old_text: str, new_text: str) -> str:
        shown = display_path(self._root, real_path)
        if self._can_read:
            try:
                current = await asyncio.wait_for(self._read(real_path), READ_WAIT_SECONDS)
            except Exception as exc:  # noqa: BLE001
                raise ToolError(f"The editor could not read '{shown}' ({exc or type(exc).__name__}); nothing was written.") from None
            if current != old_text:
                raise StaleDocument()
        if not self._can_write:
            on_disk = await asyncio.to_thread(read_text_file, real_path, shown, self._root)
            if on_disk != encode(old_text):
                raise ToolError(f"'{shown}' has unsaved changes in an editor that cannot take edits "
                                "(no fs/write_text_file): ask the user to save it first. Nothing was written.")
            await asyncio.to_thread(replace_beneath, self._root, real_path, encode(new_text), shown)
            self.applied[real_path] = (old_text, new_text)
            return ""
        try:
            await asyncio.wait_for(
                self._client.write_text_file(session_id=self._session_id, path=str(real_path), content=new_text),
                WRITE_WAIT_SECONDS,
            )
        except TimeoutError:
            raise ToolError(f"The editor did not confirm the edit of '{shown}' within {WRITE_WAIT_SECONDS:g} s; "
                            "read the file again to see whether it was applied.") from None
        except Exception as exc:  # noqa: BLE001
            raise ToolError(f"The editor refused the edit of '{shown}': {exc}. Nothing was written.") from None
        self.applied[real_path] = (old_text, new_text)
        self._written.append(BufferEdit(real_path, old_text, new_text))
        return ""


def _disk_bytes(real_root: Path, path: Path) -> bytes | None:
    """A regular file's bytes (a non-blocking open beneath the root), else None."""

    try:
        info, data = read_beneath(real_root, path, str(path), MAX_FILE_BYTES)
    except (OSError, ToolError):
        return None
    return data if stat.S_ISREG(info.st_mode) else None
