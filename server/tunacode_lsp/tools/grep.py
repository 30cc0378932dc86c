"""grep: search file contents with a Python regular expression, honouring .gitignore."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from tinyagent.agent_types import AgentTool, AgentToolResult

from tunacode_lsp.tools.base import ToolCall, make_tool, text_result
from tunacode_lsp.tools.errors import ToolCancelled, ToolError
from tunacode_lsp.tools.limits import MAX_PATH_CHARS, MAX_PATTERN_CHARS
from tunacode_lsp.tools.paths import display_path, resolve_in_workspace, workspace_real_root
from tunacode_lsp.tools.settings import ToolSettings
from tunacode_lsp.tools.textfile import MAX_FILE_BYTES, is_binary
from tunacode_lsp.tools.walk import glob_matcher, walk_files

MAX_MATCHES = 200
MAX_LINE_CHARS = 300

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "maxLength": MAX_PATTERN_CHARS,
            "minLength": 1,
            "description": (
                "A Python `re` regular expression, searched in each line (re.search). Escape regex "
                "characters for a literal search; use (?i) for case-insensitive."
            ),
        },
        "path": {
            "type": "string",
            "maxLength": MAX_PATH_CHARS,
            "description": "File or folder to search, relative to the workspace root. Default: the whole workspace.",
        },
        "glob": {
            "type": "string",
            "maxLength": MAX_PATH_CHARS,
            "description": "Only files matching this gitignore-style glob, e.g. `*.py` (any depth) or `src/**/*.ts`.",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Search the contents of the workspace's text files for a Python regular expression (`re`, not "
    "ripgrep syntax). Prints `path:LINE:text` for each matching line. Honours .gitignore and skips "
    ".git, node_modules, .venv, __pycache__ and the like, binary files and files over 10 MB. "
    f"Stops after {MAX_MATCHES} matches and says so; narrow with `path` or `glob`. Use read_file "
    "to see a match in context."
)


def _search(
    real_root: Path,
    start: Path,
    regex: re.Pattern[str],
    glob: str | None,
    call: ToolCall,
    max_chars: int,
) -> tuple[list[str], int, bool]:
    """(result lines, files searched, stopped early); raises ToolCancelled when aborted."""
    wanted = glob_matcher(glob)
    if start.is_file():
        candidates = iter([(start, display_path(real_root, start))])
    else:
        candidates = walk_files(real_root, start, lambda: call.aborted)
    results: list[str] = []
    size = 0
    searched = 0
    for real, rel in candidates:
        if call.aborted:
            raise ToolCancelled()
        if not wanted(rel):
            continue
        try:
            if real.stat().st_size > MAX_FILE_BYTES:
                continue
            data = real.read_bytes()
        except OSError:
            continue
        if is_binary(data):
            continue
        searched += 1
        for number, line in enumerate(data.decode("utf-8", errors="replace").split("\n"), 1):
            if not regex.search(line):
                continue
            line = line.rstrip("\r")
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + " [...]"
            entry = f"{rel}:{number}:{line}"
            if len(results) >= MAX_MATCHES or size + len(entry) > max_chars:
                return results, searched, True
            results.append(entry)
            size += len(entry) + 1
    if call.aborted:
        raise ToolCancelled()
    return results, searched, False


def create_grep_tool(root: Path, settings: ToolSettings | None = None) -> AgentTool:
    settings = settings or ToolSettings()
    real_root = workspace_real_root(root)

    async def run(args: dict[str, Any], call: ToolCall) -> AgentToolResult:
        try:
            regex = re.compile(args["pattern"])
        except re.error as exc:
            raise ToolError(
                f"Invalid regular expression {args['pattern']!r}: {exc}. The pattern is Python `re` "
                "syntax; escape special characters (\\. \\( \\[) for a literal search."
            ) from None
        start = resolve_in_workspace(real_root, args.get("path", "."), field="path")
        shown = display_path(real_root, start)
        if not start.exists():
            raise ToolError(f"Path '{args.get('path')}' does not exist. Use list_files to find it.")
        results, searched, stopped = await asyncio.to_thread(
            _search, real_root, start, regex, args.get("glob"), call, settings.max_output_chars
        )
        if not results:
            text = f"No matches for {args['pattern']!r} in {shown} ({searched} files searched)."
        else:
            text = "\n".join(results)
            if stopped:
                text += (
                    f"\n[Stopped after {len(results)} matches; there are more. Narrow the pattern, "
                    "path or glob.]"
                )
        return text_result(text, matches=len(results), files_searched=searched, truncated=stopped, path=shown)

    return make_tool(name="grep", label="Search", description=DESCRIPTION, parameters=PARAMETERS, run=run)
