"""What an approval shows: exactly what will run, computed from the arguments the tool will use.

- bash: the whole command (a command that cannot be shown whole is refused before anyone is
  asked: tools/bash.py `command_problem`); long runs of blanks are made visible.
- write_file / edit_file: the unified diff, computed by the same parsing and planning the tool
  runs (tools/previews.py), bounded and saying so when cut; the tool later writes only those
  exact bytes.
- apply_patch: the unified diff of every file the patch touches, planned as the tool plans it
  (tools/apply_patch.py); the tool later writes only that plan (its digest).
- MCP tools: the server, the tool and the full arguments.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tunacode_lsp.core.text import visible_blanks
from tunacode_lsp.tools.apply_patch import patch_paths_run_code_outside, patch_runs_code_outside, preview_patch
from tunacode_lsp.tools.bash import command_problem
from tunacode_lsp.tools.documents import DocumentOverlay
from tunacode_lsp.tools.edit_file import prepare_args
from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.line_refs import LineRefLedger
from tunacode_lsp.tools.paths import resolve_in_workspace, workspace_real_root
from tunacode_lsp.tools.previews import preview_edit, preview_write
from tunacode_lsp.tools.sandbox_protected import runs_code_outside_path
from tunacode_lsp.tools.spec import spec_of

MAX_ARGUMENTS_SHOWN = 20_000


@dataclass(frozen=True)
class ApprovalView:
    headline: str  # what will happen, one line (`run npm test`): plain clients' message, denials
    detail: str  # the full command, the diff, or the JSON arguments
    detail_kind: str  # command | diff | arguments
    truncated: bool = False
    digest: str | None = None  # for file changes: the bytes the user approves
    runs_code_outside: bool = False  # the file is one a tool runs outside the sandbox (never auto-approved)


def approval_view(
    name: str, args: dict[str, Any], root: Path, ledger: LineRefLedger, documents: DocumentOverlay | None = None
) -> ApprovalView:
    """Raises ToolError when the call cannot run as shown (the model gets the error; nobody is asked).

    Which view a tool gets is its spec's `approval` (tools/spec.py)."""

    view = spec_of(name).approval
    if view == "command":
        command = str(args.get("command", ""))
        problem = command_problem(command)
        if problem:
            raise ToolError(problem)
        where = f" (in {args['cwd']})" if isinstance(args.get("cwd"), str) and args["cwd"] not in ("", ".") else ""
        if args.get("background") is True:  # it keeps running after the call: the user must know
            where += " in the background, until stopped"
        first = visible_blanks(command.strip().splitlines()[0]) if command.strip() else ""
        more = " …" if len(command.strip().splitlines()) > 1 else ""
        return ApprovalView(f"run {first}{more}{where}", command, "command")
    if view == "write":
        preview = preview_write(root, args)
        return ApprovalView(
            f"create {preview.path} ({preview.added} lines)", preview.diff, "diff", preview.truncated, preview.digest,
            edits_code_outside(name, args, root),
        )
    if view == "edit":
        preview = preview_edit(root, prepare_args(dict(args)), ledger, documents)
        changes = f"{preview.edits} change{'s' if preview.edits != 1 else ''}"
        return ApprovalView(
            f"edit {preview.path}: {changes} (-{preview.removed} +{preview.added} lines)",
            preview.diff, "diff", preview.truncated, preview.digest, edits_code_outside(name, args, root),
        )
    if view == "patch":
        plan, diff, cut_diff, added, removed = preview_patch(root, args, documents)
        files = len(plan.changes)
        return ApprovalView(
            f"patch {files} file{'s' if files != 1 else ''}: {', '.join(c.shown for c in plan.changes[:5])}"
            f"{' …' if files > 5 else ''} (-{removed} +{added} lines)",
            diff, "diff", cut_diff, plan.digest, patch_runs_code_outside(root, plan),
        )
    shown = json.dumps(args, ensure_ascii=False, indent=2, default=str)
    cut = len(shown) > MAX_ARGUMENTS_SHOWN
    if name.startswith("mcp__"):
        _, server, tool = name.split("__", 2)
        summary = f"call the MCP server '{server}' tool '{tool}'"
    else:
        summary = f"call {name}"
    return ApprovalView(summary, shown[:MAX_ARGUMENTS_SHOWN] + ("\n[arguments cut]" if cut else ""), "arguments", cut)


def edits_code_outside(name: str, args: dict[str, Any], root: Path) -> bool:
    """A file tool's call changes a file that runs code outside the sandbox (tools/sandbox.py
    RUNS_CODE_OUTSIDE: `.vscode/tasks.json`, `.envrc`, ...), so it is asked even under `auto`."""

    spec = spec_of(name)
    if spec.approval == "patch":
        return patch_paths_run_code_outside(args, root)
    raw = args.get(spec.path_arg) if spec.changes_files and spec.path_arg is not None else None
    if not isinstance(raw, str):
        return False
    real_root = workspace_real_root(root)
    try:
        real = resolve_in_workspace(real_root, raw)
    except ToolError:
        return False  # the tool refuses it anyway
    return runs_code_outside_path(real_root, real)

