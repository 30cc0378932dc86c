"""grep: search file contents with ripgrep (Rust regex syntax), honouring .gitignore.

Documents open in the editor with unsaved changes are searched in their editor text (fed to
rg on stdin, so the regex is the same), and their disk lines are left out."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tinyagent.agent_types import AgentTool, AgentToolResult

from tunacode_lsp.core.text import clip
from tunacode_lsp.tools.base import ToolCall, make_tool, text_result
from tunacode_lsp.tools.documents import DocumentOverlay
from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.kept_outputs import MAX_KEPT_BYTES, keep_output, kept_note
from tunacode_lsp.tools.limits import MAX_PATH_CHARS, MAX_PATTERN_CHARS
from tunacode_lsp.tools.paths import display_path, refuse_special, resolve_in_workspace, workspace_real_root
from tunacode_lsp.tools.ripgrep import SKIPPED_FOLDERS, glob_matcher, run_rg
from tunacode_lsp.tools.settings import ToolSettings
from tunacode_lsp.tools.timeouts import tool_seconds

MAX_MATCHES = 200
MAX_LINE_CHARS = 300
STDIN_NAME = "<stdin>"

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "maxLength": MAX_PATTERN_CHARS,
            "minLength": 1,
            "description": (
                "A Rust regular expression (ripgrep), searched in each line. Escape regex "
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
    "Search the contents of the workspace's text files with ripgrep. The pattern is a Rust "
    "regular expression (like Python's `re`, but without look-around or backreferences; "
    "matching is linear time); use (?i) for case-insensitive, escape \\. \\( \\[ for literal "
    "characters. Prints `path:LINE:text` for each matching line. Honours .gitignore and skips "
    ".git, node_modules, .venv, __pycache__ and the like, binary files, symlinks and files over "
    f"10 MB. Stops after {MAX_MATCHES} matches and says so; narrow with `path` or `glob`. Use "
    "read_file to see a match in context."
)


def _order(line: str) -> tuple[str, int]:
    """By path, then line number (ripgrep searches files in parallel)."""

    path, _, rest = line.partition(":")
    number = rest.partition(":")[0]
    return path, int(number) if number.isdigit() else 0


def _unsaved(texts: dict[Path, str], real_root: Path, shown: str, wanted: Callable[[str], bool]) -> dict[str, bytes]:
    """The open documents under the searched path whose editor text differs from the disk,
    by their path as rg prints it."""

    found: dict[str, bytes] = {}
    for real, text in texts.items():
        if not real.is_relative_to(real_root) or real == real_root:
            continue
        rel = real.relative_to(real_root).as_posix()
        if shown != "." and rel != shown and not rel.startswith(shown + "/"):
            continue
        if not wanted(rel) or any(part in SKIPPED_FOLDERS for part in rel.split("/")[:-1]):
            continue
        data = text.encode("utf-8", "surrogateescape")
        try:
            if real.read_bytes() == data:
                continue
        except OSError:
            pass  # not on disk (yet): the editor's text is all there is
        found[rel] = data
    return found


def create_grep_tool(
    root: Path, settings: ToolSettings | None = None, *, documents: DocumentOverlay | None = None
) -> AgentTool:
    settings = settings or ToolSettings()
    real_root = workspace_real_root(root)

    async def run(args: dict[str, Any], call: ToolCall) -> AgentToolResult:
        start = resolve_in_workspace(real_root, args.get("path", "."), field="path")
        shown = display_path(real_root, start)
        if not start.exists():
            raise ToolError(f"Path '{clip(str(args.get('path')), 200)}' does not exist. Use list_files to find it.")
        refuse_special(start, shown)  # rg opens a path it is given whatever it is: a FIFO would block it
        rg_args = ["--no-heading", "--with-filename", "--line-number", "--max-filesize", "10M",
                   "--max-columns", str(MAX_LINE_CHARS), "--max-columns-preview"]
        wanted = glob_matcher(args.get("glob"))
        texts = documents.texts() if documents is not None else {}  # taken on the event loop
        unsaved = await asyncio.to_thread(_unsaved, texts, real_root, shown, wanted) if texts else {}
        found = await run_rg(
            [*rg_args, "-e", args["pattern"], "--", shown], real_root, call,
            max_lines=MAX_MATCHES, max_chars=settings.max_output_chars,
            rest_bytes=MAX_KEPT_BYTES if settings.outputs_dir is not None else 0,
            keep=(lambda line: wanted(path := line.partition(":")[0]) and path not in unsaved)
            if args.get("glob") or unsaved else None,
        )
        for rel, data in sorted(unsaved.items()):
            if found.stopped or (found.code == 2 and not found.lines):
                break
            more = await run_rg(
                [*rg_args, "-e", args["pattern"], "-"], real_root, call,
                max_lines=MAX_MATCHES - len(found.lines),
                max_chars=settings.max_output_chars - sum(len(line) + 1 for line in found.lines),
                stdin_data=data,
            )
            # rg 14.1.0 has no --label: it names stdin `<stdin>`
            found.lines += [rel + line.removeprefix(STDIN_NAME) for line in more.lines]
            found.stopped |= more.stopped
        if found.code == 2 and found.error and not found.lines and not found.stopped:  # a pattern error, not a file's
            raise ToolError(
                f"ripgrep refused the search: {clip(found.error, 400) or 'exit code 2'}. The pattern is a Rust "
                "regular expression: escape special characters (\\. \\( \\[) for a literal search."
            )
        results = sorted(found.lines, key=_order)
        if not results:
            text = f"No matches for {clip(args['pattern'], 200)!r} in {shown}."
        else:
            text = "\n".join(results)
            if found.stopped:
                text += (
                    f"\n[Stopped after {len(results)} matches; there are more. Narrow the pattern, "
                    "path or glob.]"
                )
                if found.rest:
                    whole = "\n".join(sorted(results + found.rest, key=_order)) + "\n"
                    data = whole.encode("utf-8", "surrogateescape")
                    kept = await asyncio.to_thread(keep_output, settings.outputs_dir, "grep", data)
                    text += kept_note(kept, len(data), complete=not found.rest_full)
        return text_result(text, matches=len(results), truncated=found.stopped, path=shown)

    return make_tool(
        name="grep", label="Search", description=DESCRIPTION, parameters=PARAMETERS, run=run,
        seconds=tool_seconds(settings.tool_timeouts, "grep"),
    )
