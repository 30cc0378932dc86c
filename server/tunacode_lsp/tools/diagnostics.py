"""diagnostics: the errors and warnings the editor's language servers report for files.

Offered only when the front end can ask its editor (the LSP client advertised
`experimental.tunacode.diagnostics`); the tool knows the editor only through the
`DiagnosticsSource` port, so it stays free of LSP.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from tinyagent.agent_types import AgentTool, AgentToolResult

from tunacode_lsp.tools.base import ToolCall, make_tool, text_result
from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.paths import display_path, refuse_special, resolve_in_workspace, workspace_real_root
from tunacode_lsp.tools.timeouts import tool_seconds

MAX_FILES = 20
MAX_PER_FILE = 50
SEVERITY = {1: "error", 2: "warning", 3: "info", 4: "hint"}

# real paths -> {real path: [LSP Diagnostic as a dict]}; raises ToolError when the editor cannot answer
DiagnosticsSource = Callable[[list[Path]], Awaitable[dict[Path, list[dict[str, Any]]]]]

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "filepaths": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "maxItems": MAX_FILES,
            "description": "Files to check, relative to the workspace root (e.g. the files you just edited).",
        },
    },
    "required": ["filepaths"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Get the errors and warnings the editor's language servers (type checkers, linters, compilers) "
    "report for files, e.g. right after you edited them. Gives at most "
    f"{MAX_PER_FILE} per file, errors first. The editor may need a moment to re-check a file it just saw change."
)


def format_diagnostics(shown: str, diagnostics: list[dict[str, Any]]) -> str:
    if not diagnostics:
        return f"{shown}: no problems reported"
    ordered = sorted(diagnostics, key=lambda d: (d.get("severity") or 9, d.get("range", {}).get("start", {}).get("line", 0)))
    lines = [f"{shown}: {len(diagnostics)} problem{'s' if len(diagnostics) != 1 else ''}"]
    for d in ordered[:MAX_PER_FILE]:
        line = (d.get("range", {}).get("start", {}).get("line", 0) or 0) + 1
        severity = SEVERITY.get(d.get("severity") or 0, "problem")
        origin = " ".join(str(x) for x in (d.get("source"), d.get("code")) if x not in (None, ""))
        message = " ".join(str(d.get("message", "")).split())[:500]
        lines.append(f"  line {line}: {severity}{f' [{origin}]' if origin else ''}: {message}")
    if len(ordered) > MAX_PER_FILE:
        lines.append(f"  [{len(ordered) - MAX_PER_FILE} more not shown]")
    return "\n".join(lines)


AFTER_EDIT_SECONDS = 3.0  # an edit's result waits at most this long for the editor's diagnostics


async def diagnostics_after_edit(source: DiagnosticsSource, real: Path, shown: str) -> str:
    """A note for an edit's result: the diagnostics the editor reports for the edited open
    document within AFTER_EDIT_SECONDS ('' when it cannot say in time)."""

    try:
        found = await asyncio.wait_for(source([real]), AFTER_EDIT_SECONDS)
    except (ToolError, TimeoutError):
        return f"\n[The editor reported no diagnostics for {shown} within {AFTER_EDIT_SECONDS:g} s.]"
    return (
        "\nDiagnostics the editor reports now (it may still be re-checking; call diagnostics again later):\n"
        + format_diagnostics(shown, found.get(real, []))
    )


def create_diagnostics_tool(
    root: Path, source: DiagnosticsSource, timeouts: Mapping[str, float] | None = None
) -> AgentTool:
    real_root = workspace_real_root(root)

    async def run(args: dict[str, Any], call: ToolCall) -> AgentToolResult:
        paths = [resolve_in_workspace(real_root, p) for p in args["filepaths"]]
        for path in paths:
            refuse_special(path, display_path(real_root, path))
        missing = [display_path(real_root, p) for p in paths if not p.is_file()]
        if missing:
            raise ToolError(f"Not a file: {', '.join(missing)}.")
        found = await source(paths)
        text = "\n".join(format_diagnostics(display_path(real_root, p), found.get(p, [])) for p in paths)
        return text_result(text, files=len(paths))

    return make_tool(
        name="diagnostics", label="Diagnostics", description=DESCRIPTION, parameters=PARAMETERS, run=run,
        seconds=tool_seconds(timeouts or {}, "diagnostics"),
    )
