"""list_files: the files under a folder of the workspace (ripgrep --files), honouring .gitignore."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tinyagent.agent_types import AgentTool, AgentToolResult

from tunacode_lsp.core.text import clip
from tunacode_lsp.tools.base import ToolCall, make_tool, text_result
from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.limits import MAX_PATH_CHARS
from tunacode_lsp.tools.paths import display_path, refuse_special, resolve_in_workspace, workspace_real_root
from tunacode_lsp.tools.ripgrep import glob_matcher, run_rg
from tunacode_lsp.tools.settings import ToolSettings
from tunacode_lsp.tools.timeouts import tool_seconds

MAX_ENTRIES = 1000
MAX_COUNTED = 50_000

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "maxLength": MAX_PATH_CHARS,
            "description": "Folder to list, relative to the workspace root. Default: the whole workspace.",
        },
        "glob": {
            "type": "string",
            "maxLength": MAX_PATH_CHARS,
            "description": "Only files matching this gitignore-style glob, e.g. `*.py` (any depth) or `src/**/*.ts`.",
        },
    },
    "additionalProperties": False,
}

DESCRIPTION = (
    "List the files under a folder of the workspace (recursively), one path per line relative to "
    "the workspace root, sorted. Honours .gitignore and skips .git, node_modules, .venv, "
    f"__pycache__ and the like (symlinks are not listed). Lists at most {MAX_ENTRIES} files and says when there are more; "
    "narrow with `path` or `glob`."
)


def create_list_files_tool(root: Path, settings: ToolSettings | None = None) -> AgentTool:
    settings = settings or ToolSettings()
    real_root = workspace_real_root(root)

    async def run(args: dict[str, Any], call: ToolCall) -> AgentToolResult:
        start = resolve_in_workspace(real_root, args.get("path", "."), field="path")
        shown = display_path(real_root, start)
        if not start.exists():
            raise ToolError(f"Folder '{clip(str(args.get('path')), 200)}' does not exist.")
        refuse_special(start, shown)
        if not start.is_dir():
            raise ToolError(f"'{shown}' is a file, not a folder: use read_file to read it.")
        wanted = glob_matcher(args.get("glob"))
        found = await run_rg(
            ["--files", "--", shown], real_root, call, max_lines=MAX_COUNTED, max_chars=64 * 1024 * 1024,
            keep=wanted if args.get("glob") else None,
        )
        paths = sorted(found.lines)
        listed: list[str] = []
        size = 0
        for rel in paths:
            if len(listed) >= MAX_ENTRIES or size + len(rel) >= settings.max_output_chars:
                break
            listed.append(rel)
            size += len(rel) + 1
        total = len(paths)
        if not listed:
            text = f"No files under {shown}" + (f" matching {clip(args['glob'], 200)!r}." if args.get("glob") else ".")
        else:
            text = "\n".join(listed)
            if total > len(listed):
                more = f"at least {total:,}" if found.stopped else f"{total:,}"
                text += f"\n[Listed {len(listed)} of {more} files. Narrow with path or glob.]"
        return text_result(text, path=shown, files=len(listed), total=total, truncated=total > len(listed))

    return make_tool(
        name="list_files", label="List files", description=DESCRIPTION, parameters=PARAMETERS, run=run,
        seconds=tool_seconds(settings.tool_timeouts, "list_files"),
    )
