"""edit_file: exact old_text replacement or line+hash edits, checked against the file on disk at the
moment of the edit, applied all-or-nothing, written atomically; returns a unified diff."""

from __future__ import annotations

import asyncio
import difflib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tinyagent.agent_types import AgentTool, AgentToolResult

from tunacode_lsp.tools.base import ToolCall, make_tool, text_result
from tunacode_lsp.tools.beneath import replace_beneath
from tunacode_lsp.tools.diagnostics import DiagnosticsSource, diagnostics_after_edit
from tunacode_lsp.tools.documents import DocumentOverlay, StaleDocument, overlay_text
from tunacode_lsp.tools.edit_match import MATCHERS, Matcher
from tunacode_lsp.tools.edit_plan import EditPlanner, apply_replacements
from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.limits import MAX_PATH_CHARS
from tunacode_lsp.tools.line_refs import LineRefLedger
from tunacode_lsp.tools.paths import display_path, resolve_in_workspace, workspace_real_root
from tunacode_lsp.tools.previews import digest_of
from tunacode_lsp.tools.settings import ToolSettings
from tunacode_lsp.tools.snapshot import Snapshot
from tunacode_lsp.tools.textfile import cut_middle, encode, line_body, read_text_file, split_lines
from tunacode_lsp.tools.timeouts import tool_seconds

EDIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": (
        "One edit: either {old_text, new_text} (exact text replacement) or "
        "{line, hash, new_text, end_line?, end_hash?} (replace lines line..end_line)."
    ),
    "properties": {
        "old_text": {
            "type": "string",
            "description": (
                "Current text to replace, copied exactly (indentation and line breaks included); must occur "
                "exactly once in the file."
            ),
        },
        "new_text": {
            "type": "string",
            "description": "Replacement text. With line references it replaces the whole lines; an empty string deletes them.",
        },
        "line": {"type": "integer", "minimum": 1, "description": "First line to replace (LINE from read_file)."},
        "hash": {"type": "string", "description": "HASH of that line as shown by read_file."},
        "end_line": {
            "type": "integer",
            "minimum": 1,
            "description": "Last line to replace (inclusive). Omit to replace only `line`.",
        },
        "end_hash": {"type": "string", "description": "HASH of end_line as shown by read_file; required with end_line."},
    },
    "required": ["new_text"],
    "additionalProperties": False,
}

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "filepath": {
            "type": "string",
            "maxLength": MAX_PATH_CHARS,
            "description": "Path of the file to edit, relative to the workspace root (or absolute inside it).",
        },
        "edits": {
            "type": "array",
            "minItems": 1,
            "items": EDIT_SCHEMA,
            "description": "Edits to apply together: all succeed or none is written. Each refers to the file as it is before this call.",
        },
        "old_text": {"type": "string", "description": "Shorthand for a single edit: exact text to replace."},
        "new_text": {"type": "string", "description": "Shorthand for a single edit: its replacement."},
    },
    "required": ["filepath"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Change an existing text file. Give `edits`, a list of edits applied together (all or none). "
    "An edit is either {old_text, new_text}: old_text must match the current file exactly once "
    "(include a few surrounding lines if needed); or {line, hash, new_text, end_line?, end_hash?}: "
    "replace lines line..end_line (inclusive) with new_text, where line/hash (and end_line/end_hash) "
    "are LINE and HASH from read_file's `LINE:HASH|content` output. All edits of one call refer to the "
    "file as it is before the call, so line numbers need no adjusting between them. Edits are checked "
    "against the file on disk: if it changed since you read it, or a reference does not match, the "
    "edit is refused and nothing is written; read the file again. Returns a unified diff. For a "
    "single replacement, top-level old_text/new_text also works. To create a file use write_file."
)


def prepare_args(args: dict[str, Any]) -> dict[str, Any]:
    edits = args.get("edits")
    if isinstance(edits, str):
        try:
            args["edits"] = json.loads(edits)
        except ValueError:
            pass
    elif isinstance(edits, dict):
        args["edits"] = [edits]
    return args


def edit_list(args: dict[str, Any]) -> list[dict[str, Any]]:
    shorthand = "old_text" in args or "new_text" in args
    if "edits" in args and shorthand:
        raise ToolError("Give either 'edits' or top-level old_text/new_text, not both.")
    if shorthand:
        if "old_text" not in args or "new_text" not in args:
            missing = "new_text" if "old_text" in args else "old_text"
            raise ToolError(f"Invalid arguments: missing required field '{missing}'.")
        return [{"old_text": args["old_text"], "new_text": args["new_text"]}]
    if "edits" not in args:
        raise ToolError("Invalid arguments: missing required field 'edits' (a list of edits).")
    return args["edits"]


def unified_diff(shown: str, before: list[str], after: list[str]) -> str:
    lines = difflib.unified_diff(
        [line_body(line) for line in before],
        [line_body(line) for line in after],
        fromfile=f"a/{shown}",
        tofile=f"b/{shown}",
        lineterm="",
    )
    return "\n".join(lines)


def create_edit_file_tool(
    root: Path,
    settings: ToolSettings | None = None,
    *,
    ledger: LineRefLedger | None = None,
    approved: dict[str, str] | None = None,
    documents: DocumentOverlay | None = None,
    matchers: Sequence[Matcher] = MATCHERS,
    diagnostics: DiagnosticsSource | None = None,
) -> AgentTool:
    """`matchers`: the tolerant matchers tried when an old_text is not found as it is
    (tools/edit_match.py; the edit benchmark turns them off one by one)."""
    settings = settings or ToolSettings()
    real_root = workspace_real_root(root)
    refs = ledger if ledger is not None else LineRefLedger()
    # Edits to one file are serialised: parallel tool calls must not interleave read and write.
    locks: dict[str, asyncio.Lock] = {}

    def _load(real: Path, shown: str) -> Snapshot:
        open_text = documents.text(real) if documents is not None else None
        snapshot = Snapshot(real, encode(open_text)) if open_text is not None else Snapshot.load(real, shown, real_root)
        _ = snapshot.hashes  # computed here, off the event loop
        return snapshot

    def _write_if_unchanged(real: Path, shown: str, snapshot: Snapshot, data: bytes) -> None:
        if read_text_file(real, shown, real_root) != snapshot.data:
            raise ToolError(f"'{shown}' changed on disk during the edit. Nothing was written; read it again.")
        replace_beneath(real_root, real, data, shown)

    async def run(args: dict[str, Any], call: ToolCall) -> AgentToolResult:
        real = resolve_in_workspace(real_root, args["filepath"])
        shown = display_path(real_root, real)
        edits = edit_list(args)
        lock = locks.setdefault(str(real), asyncio.Lock())
        note = ""
        in_editor = False
        expected = (approved or {}).pop(call.tool_call_id, None)
        async with lock:
            for attempt in range(2):  # a document the user typed in meanwhile: read and plan again, once
                snapshot = await asyncio.to_thread(_load, real, shown)
                planner = EditPlanner(snapshot, shown, refs, matchers)
                replacements = await asyncio.to_thread(planner.plan, edits)  # a tolerant search may take a while
                new_text, spans = apply_replacements(snapshot.lines, replacements)
                if new_text == snapshot.text:
                    raise ToolError(f"The edits leave '{shown}' unchanged: nothing was written.")
                if expected is not None and digest_of(encode(new_text)) != expected:
                    raise ToolError(
                        f"'{shown}' changed while the user was deciding, so this edit would now write something "
                        "other than what the user approved. Nothing was written; read the file again."
                    )
                call.check_abort()
                if documents is not None and await overlay_text(documents, real) is not None:
                    try:  # open in the editor: the change goes through it (one undo step)
                        note = await documents.apply(real, snapshot.text, new_text)
                        in_editor = True
                        break
                    except StaleDocument:
                        if attempt == 1:
                            raise ToolError(
                                f"'{shown}' keeps changing in the editor; nothing was changed. Read it again."
                            ) from None
                        continue
                await asyncio.to_thread(_write_if_unchanged, real, shown, snapshot, encode(new_text))
                break
        after = Snapshot(real, encode(new_text))
        refs.record_edit(str(real), snapshot.digest, after.digest, after.hashes, spans)
        diff = unified_diff(shown, snapshot.lines, split_lines(new_text))
        shown_diff, cut = cut_middle(diff, settings.max_output_chars)
        added = sum(1 for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++"))
        removed = sum(1 for line in diff.splitlines() if line.startswith("-") and not line.startswith("---"))
        count = len(edits)
        summary = f"Edited {shown}: {count} edit{'s' if count != 1 else ''} applied (+{added} -{removed}).{note}"
        if planner.notes:  # say what a tolerant match took, so the model can check the diff
            summary += "\nNot an exact match: " + "; ".join(planner.notes) + "."
        if in_editor and diagnostics is not None:  # an open document: what the editor says of it now
            summary += await diagnostics_after_edit(diagnostics, real, shown)
        return text_result(
            f"{summary}\n{shown_diff}",
            path=shown,
            diff=shown_diff,
            edits=count,
            added=added,
            removed=removed,
            truncated=cut > 0,
            matched=planner.notes,
        )

    return make_tool(
        name="edit_file",
        label="Edit file",
        description=DESCRIPTION,
        parameters=PARAMETERS,
        run=run,
        prepare=prepare_args,
        seconds=tool_seconds(settings.tool_timeouts, "edit_file"),
        changes_files=True,
    )
