"""The coding tools the model gets: one module per tool, a factory each, all file access confined
to the workspace root (paths.py). The agent layer calls build_tools and summarize_args."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tunacode_lsp.core.text import clip
from tunacode_lsp.tools.documents import DocumentOverlay
from tunacode_lsp.tools.errors import ToolCancelled, ToolError
from tunacode_lsp.tools.line_refs import LineRefLedger
from tunacode_lsp.tools.settings import ToolSettings

if TYPE_CHECKING:
    from tinyagent.agent_types import AgentTool

    from tunacode_lsp.tools.diagnostics import DiagnosticsSource

# The tool factories load tinyagent: imported when first asked for, so that a light module of
# this package (confined_read, beneath, paths) costs nothing at the server's start-up.
_FACTORIES = {
    "create_bash_tool": "bash",
    "create_diagnostics_tool": "diagnostics",
    "create_edit_file_tool": "edit_file",
    "create_grep_tool": "grep",
    "create_list_files_tool": "list_files",
    "create_read_file_tool": "read_file",
    "create_todo_write_tool": "todo_write",
    "create_write_file_tool": "write_file",
}


def __getattr__(name: str) -> Any:
    module = _FACTORIES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "CHANGING_TOOLS",
    "LineRefLedger",
    "ToolCancelled",
    "ToolError",
    "ToolSettings",
    "build_tools",
    "create_bash_tool",
    "create_edit_file_tool",
    "create_grep_tool",
    "create_list_files_tool",
    "create_read_file_tool",
    "create_todo_write_tool",
    "create_write_file_tool",
    "summarize_args",
]

CHANGING_TOOLS: frozenset[str] = frozenset({"write_file", "edit_file", "bash"})

SUMMARY_CHARS = 80


def build_tools(
    workspace_root: Path,
    settings: ToolSettings = ToolSettings(),
    *,
    ledger: LineRefLedger | None = None,
    diagnostics: DiagnosticsSource | None = None,
    approved: dict[str, str] | None = None,
    documents: DocumentOverlay | None = None,
) -> list[AgentTool]:
    """All tools for one workspace. read_file and edit_file share `ledger`, the record of the line
    references the model has seen; pass one ledger per session so that references from an earlier
    request stay usable (without it, a new request must read a file again before line edits)."""
    from tunacode_lsp.tools.bash import create_bash_tool
    from tunacode_lsp.tools.diagnostics import create_diagnostics_tool
    from tunacode_lsp.tools.edit_file import create_edit_file_tool
    from tunacode_lsp.tools.grep import create_grep_tool
    from tunacode_lsp.tools.list_files import create_list_files_tool
    from tunacode_lsp.tools.read_file import create_read_file_tool
    from tunacode_lsp.tools.todo_write import create_todo_write_tool
    from tunacode_lsp.tools.write_file import create_write_file_tool

    root = Path(workspace_root)
    ledger = ledger if ledger is not None else LineRefLedger()
    tools = [
        create_read_file_tool(root, settings, ledger=ledger, documents=documents),
        create_write_file_tool(root, settings, approved=approved),
        create_edit_file_tool(root, settings, ledger=ledger, approved=approved, documents=documents),
        create_bash_tool(root, settings),
        create_grep_tool(root, settings, documents=documents),
        create_list_files_tool(root, settings),
        create_todo_write_tool(root),
    ]
    if diagnostics is not None:  # only when the editor can answer
        tools.append(create_diagnostics_tool(root, diagnostics))
    return tools


def _short(text: str) -> str:
    line = " ".join(text.split())
    return clip(line, SUMMARY_CHARS)


def summarize_args(name: str, args: dict[str, Any]) -> str:
    """A short one-line summary of a call's arguments for progress messages and tool cards."""
    if not isinstance(args, dict):
        return ""

    def text(key: str) -> str:
        value = args.get(key)
        return value if isinstance(value, str) else ""

    if name in ("read_file", "write_file", "edit_file"):
        summary = text("filepath")
        offset = args.get("offset")
        if name == "read_file" and isinstance(offset, int) and offset > 0:
            summary += f" from line {offset + 1}"
        return _short(summary)
    if name == "bash":
        cwd = text("cwd")
        lines = text("command").strip().splitlines() or [""]
        more = f" (+{len(lines) - 1} more line{'s' if len(lines) > 2 else ''})" if len(lines) > 1 else ""
        return _short(lines[0] + (f" (in {cwd})" if cwd and cwd != "." else "")) + more
    if name == "grep":
        where = " ".join(part for part in (text("path"), text("glob")) if part)
        return _short(f"/{text('pattern')}/" + (f" in {where}" if where else ""))
    if name == "list_files":
        return _short(" ".join(part for part in (text("path") or ".", text("glob")) if part))
    if name == "todo_write" and isinstance(args.get("todos"), list):
        todos = [t for t in args["todos"] if isinstance(t, dict)]
        done = sum(t.get("status") == "completed" for t in todos)
        return f"{len(todos)} items, {done} done"
    try:
        return _short(json.dumps(args, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return ""
