"""The coding tools the model gets: one module per tool, a factory each, all file access confined
to the workspace root (paths.py). The agent layer calls build_tools; what each tool is (kind, title,
approval view) is its ToolSpec (spec.py)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tunacode_lsp.tools.documents import DocumentOverlay
from tunacode_lsp.tools.errors import ToolCancelled, ToolError
from tunacode_lsp.tools.line_refs import LineRefLedger
from tunacode_lsp.tools.settings import ToolSettings
from tunacode_lsp.tools.spec import ASKED_TOOLS, CHANGING_TOOLS, ToolSpec, spec_of, summarize_args

if TYPE_CHECKING:
    from tinyagent.agent_types import AgentTool

    from tunacode_lsp.tools.diagnostics import DiagnosticsSource

# The tool factories load tinyagent: imported when first asked for, so that a light module of
# this package (confined_read, beneath, paths) costs nothing at the server's start-up.
_FACTORIES = {
    "create_apply_patch_tool": "apply_patch",
    "create_bash_tool": "bash",
    "create_diagnostics_tool": "diagnostics",
    "create_edit_file_tool": "edit_file",
    "create_grep_tool": "grep",
    "create_list_files_tool": "list_files",
    "create_read_file_tool": "read_file",
    "create_todo_write_tool": "todo_write",
    "create_web_fetch_tool": "web_fetch",
    "create_write_file_tool": "write_file",
}


def __getattr__(name: str) -> Any:
    module = _FACTORIES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "ASKED_TOOLS",
    "CHANGING_TOOLS",
    "LineRefLedger",
    "ToolCancelled",
    "ToolError",
    "ToolSettings",
    "ToolSpec",
    "build_tools",
    "create_bash_tool",
    "create_edit_file_tool",
    "create_grep_tool",
    "create_list_files_tool",
    "create_read_file_tool",
    "create_todo_write_tool",
    "create_write_file_tool",
    "spec_of",
    "summarize_args",
]


def build_tools(
    workspace_root: Path,
    settings: ToolSettings = ToolSettings(),
    *,
    ledger: LineRefLedger | None = None,
    diagnostics: DiagnosticsSource | None = None,
    approved: dict[str, str] | None = None,
    documents: DocumentOverlay | None = None,
    apply_patch: bool = False,
) -> list[AgentTool]:
    """All tools for one workspace. read_file and edit_file share `ledger`, the record of the line
    references the model has seen; pass one ledger per session so that references from an earlier
    request stay usable (without it, a new request must read a file again before line edits).
    `apply_patch`: offer Codex's patch tool beside edit_file (the GPT/Codex family:
    agent/edit_format.py)."""
    from tunacode_lsp.tools.bash import create_bash_tool
    from tunacode_lsp.tools.diagnostics import create_diagnostics_tool
    from tunacode_lsp.tools.edit_file import create_edit_file_tool
    from tunacode_lsp.tools.grep import create_grep_tool
    from tunacode_lsp.tools.list_files import create_list_files_tool
    from tunacode_lsp.tools.process_tools import create_process_tools
    from tunacode_lsp.tools.read_file import create_read_file_tool
    from tunacode_lsp.tools.todo_write import create_todo_write_tool
    from tunacode_lsp.tools.web_fetch import create_web_fetch_tool
    from tunacode_lsp.tools.write_file import create_write_file_tool

    root = Path(workspace_root)
    ledger = ledger if ledger is not None else LineRefLedger()
    tools = [
        create_read_file_tool(root, settings, ledger=ledger, documents=documents),
        create_write_file_tool(root, settings, approved=approved),
        create_edit_file_tool(
            root, settings, ledger=ledger, approved=approved, documents=documents, diagnostics=diagnostics
        ),
        create_bash_tool(root, settings),
        create_grep_tool(root, settings, documents=documents),
        create_list_files_tool(root, settings),
        create_todo_write_tool(root, settings.tool_timeouts),
        create_web_fetch_tool(settings),
    ]
    if apply_patch:
        from tunacode_lsp.tools.apply_patch import create_apply_patch_tool

        tools.insert(3, create_apply_patch_tool(root, settings, approved=approved, documents=documents))
    if settings.background is not None:  # a session that can keep background processes
        tools += create_process_tools(settings.background, settings.max_output_chars, settings.tool_timeouts)
    if diagnostics is not None:  # only when the editor can answer
        tools.append(create_diagnostics_tool(root, diagnostics, settings.tool_timeouts))
    return tools

