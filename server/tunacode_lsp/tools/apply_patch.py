"""apply_patch: Codex's patch format (tools/patch_format.py), the edit format GPT/Codex models
were trained on, offered to them beside edit_file (agent/edit_format.py).

It goes the way edit_file goes: every path resolved beneath the root (no `..`, no absolute
path out, no link out, no VCS metadata), special files refused, the whole patch planned
against the files as they are (open documents through the editor's overlay) before anything
is written, the approval shown the exact diff (`preview_patch`) and the tool writing only
what was approved (the digest), a checkpoint before it (its spec changes files).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinyagent.agent_types import AgentTool, AgentToolResult

from tunacode_lsp.tools.base import ToolCall, make_tool, text_result
from tunacode_lsp.tools.beneath import create_beneath, folder_beneath, replace_beneath
from tunacode_lsp.tools.documents import DocumentOverlay, StaleDocument
from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.patch_format import MAX_PATCH_CHARS, PatchError, apply_hunks, parse_patch
from tunacode_lsp.tools.paths import display_path, refuse_special, resolve_in_workspace, workspace_real_root
from tunacode_lsp.tools.previews import bounded_diff
from tunacode_lsp.tools.sandbox_protected import runs_code_outside_path
from tunacode_lsp.tools.settings import ToolSettings
from tunacode_lsp.tools.textfile import decode, encode, read_text_file, split_lines
from tunacode_lsp.tools.timeouts import tool_seconds

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "patch": {
            "type": "string",
            "maxLength": MAX_PATCH_CHARS,
            "description": "The whole patch, from `*** Begin Patch` to `*** End Patch`.",
        },
    },
    "required": ["patch"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Change files with a patch in this format:\n"
    "*** Begin Patch\n"
    "*** Update File: path/to/file.py\n"
    "@@ def the_function():\n"
    " a context line (space prefix)\n"
    "-a removed line\n"
    "+an added line\n"
    "*** Add File: path/new.py\n"
    "+the new file's lines, each prefixed with +\n"
    "*** Delete File: path/old.py\n"
    "*** End Patch\n"
    "Paths are relative to the workspace root. Give about 3 lines of context around each change "
    "and an `@@` line naming the enclosing class or function when the context alone may occur "
    "more than once. Context must match the file (a match ignoring whitespace is used only when "
    "it is the only one). The whole patch applies or nothing is written. Returns the diff."
)


@dataclass(frozen=True)
class FileChange:
    kind: str  # add | delete | update
    real: Path
    shown: str
    before: str | None  # None: the file does not exist yet
    after: str | None  # None: the file is deleted
    in_editor: bool = False


@dataclass(frozen=True)
class PatchPlan:
    changes: list[FileChange]
    notes: list[str]

    @property
    def digest(self) -> str:
        hasher = hashlib.sha256()
        for change in self.changes:
            hasher.update(change.shown.encode() + b"\0" + change.kind.encode() + b"\0")
            hasher.update(b"-" if change.after is None else encode(change.after))
            hasher.update(b"\0")
        return hasher.hexdigest()

    @property
    def paths(self) -> list[Path]:
        return [change.real for change in self.changes]

    def diff(self) -> tuple[str, bool, int, int]:
        parts: list[str] = []
        cut_any = False
        added = removed = 0
        for change in self.changes:
            before = split_lines(change.before or "")
            after = split_lines(change.after or "")
            text, cut, plus, minus = bounded_diff(change.shown, before, after)
            if change.after is None:
                text = text.replace(f"+++ b/{change.shown}", "+++ /dev/null", 1)
            parts.append(text)
            cut_any = cut_any or cut
            added += plus
            removed += minus
        return "\n".join(parts), cut_any, added, removed


def _resolve(real_root: Path, raw: str) -> tuple[Path, str]:
    real = resolve_in_workspace(real_root, raw, field="patch path")
    if real == real_root:
        raise ToolError(f"The patch path '{raw}' names the workspace root itself: give a file path.")
    shown = display_path(real_root, real)
    refuse_special(real, shown)
    return real, shown


def _current(real_root: Path, real: Path, shown: str, documents: DocumentOverlay | None) -> tuple[str, bool]:
    open_text = documents.text(real) if documents is not None else None
    if open_text is not None:
        return open_text, True
    if real.is_dir():
        raise ToolError(f"'{shown}' is a folder, not a file.")
    if not real.exists():
        raise ToolError(f"'{shown}' does not exist: use `*** Add File:` to create it. Nothing was written.")
    return decode(read_text_file(real, shown, real_root)), False


def plan_patch(root: Path, patch: str, documents: DocumentOverlay | None = None) -> PatchPlan:
    """What the patch would do now (raises ToolError, nothing written). Runs no editor round trip
    other than the overlay's `text`; call it off the event loop."""

    real_root = workspace_real_root(root)
    try:
        ops = parse_patch(patch)
    except PatchError as exc:
        raise ToolError(f"{exc} Nothing was written.") from None
    changes: list[FileChange] = []
    notes: list[str] = []
    seen: set[Path] = set()

    def claim(real: Path, shown: str) -> None:
        if real in seen:
            raise ToolError(f"The patch touches '{shown}' twice: put all its changes in one section. Nothing was written.")
        seen.add(real)

    for op in ops:
        real, shown = _resolve(real_root, op.path)
        claim(real, shown)
        if op.kind == "add":
            if os.path.lexists(real):
                raise ToolError(
                    f"'{shown}' already exists: `*** Add File:` only creates new files; use `*** Update File:`. "
                    "Nothing was written."
                )
            changes.append(FileChange("add", real, shown, None, op.content))
        elif op.kind == "delete":
            if not os.path.lexists(real):
                raise ToolError(f"'{shown}' does not exist, so it cannot be deleted. Nothing was written.")
            if real.is_dir():
                raise ToolError(f"'{shown}' is a folder: apply_patch deletes files only. Nothing was written.")
            before, _ = _current(real_root, real, shown, None)
            changes.append(FileChange("delete", real, shown, before, None))
        else:
            before, in_editor = _current(real_root, real, shown, documents)
            try:
                after, found = apply_hunks(before, op.hunks, shown) if op.hunks else (before, [])
            except PatchError as exc:
                raise ToolError(str(exc)) from None
            notes += found
            if op.move_to is not None:
                target, target_shown = _resolve(real_root, op.move_to)
                claim(target, target_shown)
                if os.path.lexists(target):
                    raise ToolError(f"'{target_shown}' already exists: `*** Move to:` needs a new path. Nothing was written.")
                changes.append(FileChange("add", target, target_shown, None, after))
                changes.append(FileChange("delete", real, shown, before, None))
            else:
                if after == before:
                    raise ToolError(f"The patch leaves '{shown}' unchanged. Nothing was written.")
                changes.append(FileChange("update", real, shown, before, after, in_editor))
    return PatchPlan(changes, notes)


def preview_patch(root: Path, args: dict[str, Any], documents: DocumentOverlay | None = None) -> tuple[PatchPlan, str, bool, int, int]:
    """For the approval: the plan and its bounded diff (added, removed)."""

    plan = plan_patch(root, args.get("patch", ""), documents)
    diff, cut, added, removed = plan.diff()
    return plan, diff, cut, added, removed


def patch_runs_code_outside(root: Path, plan: PatchPlan) -> bool:
    real_root = workspace_real_root(root)
    return any(runs_code_outside_path(real_root, real) for real in plan.paths)


def patch_paths_run_code_outside(args: dict[str, Any], root: Path) -> bool:
    """Any path the patch names (moves included) is a file that runs code outside the sandbox
    (`.vscode/tasks.json`, ...): asked even under approval `auto`. A patch that does not parse,
    or a path the tool refuses anyway, counts as not."""

    try:
        ops = parse_patch(args.get("patch", ""))
    except PatchError:
        return False
    real_root = workspace_real_root(root)
    for op in ops:
        for raw in (op.path, op.move_to):
            if raw is None:
                continue
            try:
                real = resolve_in_workspace(real_root, raw)
            except ToolError:
                continue
            if runs_code_outside_path(real_root, real):
                return True
    return False


def _delete_beneath(real_root: Path, real: Path, shown: str, before: str) -> None:
    with folder_beneath(real_root, real.parent, shown) as folder:
        if decode(read_text_file(real, shown, real_root)) != before:
            raise ToolError(f"'{shown}' changed on disk during the patch; it was not deleted.")
        os.unlink(real.name, dir_fd=folder)


def _write(real_root: Path, change: FileChange) -> None:
    if change.kind == "add":
        assert change.after is not None
        try:
            create_beneath(real_root, change.real, encode(change.after), change.shown)
        except FileExistsError:
            raise ToolError(f"'{change.shown}' appeared meanwhile; it was not overwritten.") from None
    elif change.kind == "delete":
        assert change.before is not None
        _delete_beneath(real_root, change.real, change.shown, change.before)
    else:
        assert change.after is not None
        if decode(read_text_file(change.real, change.shown, real_root)) != change.before:
            raise ToolError(f"'{change.shown}' changed on disk during the patch; it was not written.")
        replace_beneath(real_root, change.real, encode(change.after), change.shown)


def create_apply_patch_tool(
    root: Path,
    settings: ToolSettings | None = None,
    *,
    approved: dict[str, str] | None = None,
    documents: DocumentOverlay | None = None,
) -> AgentTool:
    settings = settings or ToolSettings()
    real_root = workspace_real_root(root)
    lock = asyncio.Lock()  # one patch at a time: parallel calls must not interleave read and write

    async def run(args: dict[str, Any], call: ToolCall) -> AgentToolResult:
        expected = (approved or {}).pop(call.tool_call_id, None)
        async with lock:
            plan = await asyncio.to_thread(plan_patch, root, args["patch"], documents)
            if expected is not None and plan.digest != expected:
                raise ToolError(
                    "The files changed while the user was deciding, so this patch would now write something "
                    "other than what the user approved. Nothing was written; read the files again."
                )
            call.check_abort()
            done: list[str] = []
            notes: list[str] = []
            try:
                for change in plan.changes:
                    if change.in_editor and documents is not None and change.before is not None and change.after is not None:
                        try:
                            note = await documents.apply(change.real, change.before, change.after)
                        except StaleDocument:
                            raise ToolError(f"'{change.shown}' changed in the editor during the patch; it was not changed.") from None
                        if note:
                            notes.append(note.strip())
                    else:
                        await asyncio.to_thread(_write, real_root, change)
                    done.append(change.shown)
            except ToolError as exc:
                if done:
                    raise ToolError(f"{exc} Already changed by this patch: {', '.join(done)}.") from None
                raise
        diff, cut, added, removed = plan.diff()
        verbs = {"add": "added", "delete": "deleted", "update": "updated"}
        listed = ", ".join(f"{c.shown} ({verbs[c.kind]})" for c in plan.changes)
        summary = f"Patched {len(plan.changes)} file{'s' if len(plan.changes) != 1 else ''} (+{added} -{removed}): {listed}."
        if notes:
            summary += " " + " ".join(notes)
        if plan.notes:
            summary += "\nNot an exact match: " + "; ".join(plan.notes) + "."
        return text_result(
            f"{summary}\n{diff}",
            paths=[c.shown for c in plan.changes],
            diff=diff,
            added=added,
            removed=removed,
            truncated=cut,
            matched=plan.notes,
        )

    return make_tool(
        name="apply_patch",
        label="Apply patch",
        description=DESCRIPTION,
        parameters=PARAMETERS,
        run=run,
        seconds=tool_seconds(settings.tool_timeouts, "apply_patch"),
        changes_files=True,
    )
