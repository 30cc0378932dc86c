"""The editor's open documents, as the file tools see them (a port the front end fills).

With an overlay, read_file, edit_file and the approval's diff work on the editor's text of an
open document (unsaved changes included), and edit_file hands its change to the editor
(`apply`), which decides how it reaches the buffer and the disk. Without one (the CLI, ACP
without fs support) the tools use the disk only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class StaleDocument(Exception):
    """The document changed in the editor between the read and the edit: read and plan again."""


@dataclass(frozen=True)
class BufferEdit:
    """An edit that went only into the editor's buffer (it held the user's unsaved changes), so
    the disk, and the checkpoints, never saw it."""

    real_path: Path
    old_text: str
    new_text: str


class DocumentOverlay(Protocol):
    def text(self, real_path: Path) -> str | None:
        """The editor's text of an open document, else None (the disk is the truth)."""
        ...

    def texts(self) -> dict[Path, str]:
        """The editor's text of every open document, by real path (grep searches them)."""
        ...

    async def apply(self, real_path: Path, old_text: str, new_text: str) -> str:
        """Put the change in the editor (one undo step) and on disk as the front end rules;
        returns a short note for the model (e.g. that the disk copy is not written yet).
        Raises StaleDocument when the editor's text is no longer `old_text`, ToolError when
        the editor refused."""
        ...

    def buffer_edits(self) -> list[BufferEdit]:
        """The edits `apply` left in the editor only, in order (checkpoints count and rewind them)."""
        ...
