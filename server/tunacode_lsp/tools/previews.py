"""What a changing file tool call would do, computed by the same steps the tool runs.

The approval shows this preview; the tool then checks that what it writes is exactly what
was shown (the digest of the resulting bytes): a file that changed while the user was
deciding refuses the edit instead of applying something the user never saw.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tunacode_lsp.tools.documents import DocumentOverlay
from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.line_refs import LineRefLedger
from tunacode_lsp.tools.paths import display_path, resolve_in_workspace, workspace_real_root
from tunacode_lsp.tools.snapshot import Snapshot
from tunacode_lsp.tools.textfile import encode, line_body, split_lines

MAX_DIFF_LINES = 400
MAX_DIFF_CHARS = 20_000


@dataclass(frozen=True)
class ChangePreview:
    path: str
    diff: str  # unified diff, bounded
    truncated: bool
    digest: str  # sha256 of the bytes the tool will write
    added: int
    removed: int
    edits: int = 1


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def bounded_diff(shown: str, before: list[str], after: list[str]) -> tuple[str, bool, int, int]:
    lines = list(difflib.unified_diff(
        [line_body(line) for line in before], [line_body(line) for line in after],
        fromfile=f"a/{shown}" if before else "/dev/null", tofile=f"b/{shown}", lineterm="",
    ))
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    kept: list[str] = []
    size = 0
    for line in lines:
        if len(kept) >= MAX_DIFF_LINES or size + len(line) > MAX_DIFF_CHARS:
            kept.append(f"[diff cut: {len(lines) - len(kept):,} more lines not shown]")
            return "\n".join(kept), True, added, removed
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept), False, added, removed


def preview_write(root: Path, args: dict[str, Any]) -> ChangePreview:
    real_root = workspace_real_root(root)
    real = resolve_in_workspace(real_root, args["filepath"])
    shown = display_path(real_root, real)
    data = encode(args["content"])
    diff, cut, added, removed = bounded_diff(shown, [], split_lines(args["content"]))
    return ChangePreview(shown, diff, cut, digest_of(data), added, removed)


def preview_edit(
    root: Path, args: dict[str, Any], ledger: LineRefLedger, documents: DocumentOverlay | None = None
) -> ChangePreview:
    """The diff edit_file would apply now (raises ToolError as the tool would)."""

    from tunacode_lsp.tools.edit_file import edit_list
    from tunacode_lsp.tools.edit_plan import EditPlanner, apply_replacements

    real_root = workspace_real_root(root)
    real = resolve_in_workspace(real_root, args["filepath"])
    shown = display_path(real_root, real)
    edits = edit_list(args)
    open_text = documents.text(real) if documents is not None else None  # what the editor shows
    snapshot = Snapshot(real, encode(open_text)) if open_text is not None else Snapshot.load(real, shown, real_root)
    replacements = EditPlanner(snapshot, shown, ledger).plan(edits)
    new_text, _ = apply_replacements(snapshot.lines, replacements)
    if new_text == snapshot.text:
        raise ToolError(f"The edits leave '{shown}' unchanged: nothing would be written.")
    diff, cut, added, removed = bounded_diff(shown, snapshot.lines, split_lines(new_text))
    return ChangePreview(shown, diff, cut, digest_of(encode(new_text)), added, removed, len(edits))
