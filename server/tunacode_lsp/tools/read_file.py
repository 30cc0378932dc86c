"""read_file: numbered lines with a short content hash each, the references edit_file checks."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tinyagent.agent_types import AgentTool, AgentToolResult

from tunacode_lsp.tools.base import ToolCall, make_tool, text_result
from tunacode_lsp.tools.documents import DocumentOverlay, overlay_text
from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.kept_outputs import kept_file
from tunacode_lsp.tools.limits import MAX_PATH_CHARS
from tunacode_lsp.tools.line_refs import LineRefLedger
from tunacode_lsp.tools.paths import display_path, resolve_in_workspace, workspace_real_root
from tunacode_lsp.tools.settings import ToolSettings
from tunacode_lsp.tools.snapshot import Snapshot
from tunacode_lsp.tools.textfile import HASH_CHARS, encode, line_body, printable
from tunacode_lsp.tools.timeouts import tool_seconds

MAX_LINE_CHARS = 2000
MAX_OUTPUT_CHARS = 100_000


def _parameters(default_limit: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "filepath": {
                "type": "string",
                "maxLength": MAX_PATH_CHARS,
                "description": "Path of the file, relative to the workspace root (or absolute inside it).",
            },
            "offset": {
                "type": "integer",
                "minimum": 0,
                "description": "Number of lines to skip before the first line shown (0-based). Default 0.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": f"Maximum number of lines to show. Default {default_limit}.",
            },
        },
        "required": ["filepath"],
        "additionalProperties": False,
    }


def _description(default_limit: int) -> str:
    return (
        "Read a text file of the workspace. Each line is shown as `LINE:HASH|content`, e.g. "
        f"`12:a3f0|    return a + b`: LINE is the 1-based line number and HASH a {HASH_CHARS}-character "
        "hash of the line's content. Pass LINE and HASH to edit_file to change that line. "
        f"Shows up to {default_limit} lines from `offset` (0-based lines to skip); a footer says how "
        f"to read on. Output stops at about {MAX_OUTPUT_CHARS:,} characters and lines longer than "
        f"{MAX_LINE_CHARS} characters are cut for display. Binary files and files over 10 MB are "
        "refused. Use list_files to find files and grep to search. It also reads the file a cut "
        "bash or grep result names as holding the whole output."
    )


def render_lines(snapshot: Snapshot, offset: int, limit: int) -> tuple[list[str], int]:
    """Formatted lines from `offset`, within the line and size limits; and the index after the last."""
    rendered: list[str] = []
    size = 0
    index = offset
    stop = min(len(snapshot.lines), offset + limit)
    while index < stop:
        body = printable(line_body(snapshot.lines[index]))
        if len(body) > MAX_LINE_CHARS:
            body = body[:MAX_LINE_CHARS] + f" [... line cut, {len(body):,} characters in all]"
        entry = f"{index + 1}:{snapshot.hashes[index]}|{body}"
        if rendered and size + len(entry) + 1 > MAX_OUTPUT_CHARS:
            break
        rendered.append(entry)
        size += len(entry) + 1
        index += 1
    return rendered, index


def create_read_file_tool(
    root: Path,
    settings: ToolSettings | None = None,
    *,
    ledger: LineRefLedger | None = None,
    documents: DocumentOverlay | None = None,
) -> AgentTool:
    settings = settings or ToolSettings()
    real_root = workspace_real_root(root)
    refs = ledger if ledger is not None else LineRefLedger()

    async def run(args: dict[str, Any], call: ToolCall) -> AgentToolResult:
        offset = args.get("offset", 0)
        limit = args.get("limit", settings.read_default_limit)
        kept = kept_file(settings.outputs_dir, args["filepath"])
        if kept is not None:  # a cut result's whole output: read beneath its own folder only
            real, shown = kept, str(kept)
            snapshot = await asyncio.to_thread(Snapshot.load, kept, shown, kept.parent)
        else:
            real = resolve_in_workspace(real_root, args["filepath"])
            shown = display_path(real_root, real)
            open_text = await overlay_text(documents, real)
            if open_text is not None:  # open in the editor: its text, unsaved changes included
                snapshot = Snapshot(real, encode(open_text))
            else:
                snapshot = await asyncio.to_thread(Snapshot.load, real, shown, real_root)
        call.check_abort()
        total = len(snapshot.lines)
        if total == 0:
            refs.record_read(str(real), snapshot.digest, [], whole_file=True)
            return text_result(f"{shown} is empty (0 lines).", path=shown, total_lines=0)
        if offset >= total:
            raise ToolError(
                f"offset {offset} is past the end of '{shown}' ({total} lines). "
                f"Use an offset below {total}."
            )
        rendered, next_index = await asyncio.to_thread(render_lines, snapshot, offset, limit)
        call.check_abort()
        refs.record_read(
            str(real), snapshot.digest, snapshot.hashes, whole_file=offset == 0 and next_index == total
        )
        header = f"{shown}: lines {offset + 1}-{next_index} of {total}"
        parts = [header, *rendered]
        if next_index < total:
            reason = (
                "line limit" if next_index == offset + limit else f"size limit of {MAX_OUTPUT_CHARS:,} characters"
            )
            parts.append(
                f"[Stopped at the {reason}; {total - next_index} more lines. "
                f"Read on with offset={next_index}.]"
            )
        return text_result(
            "\n".join(parts),
            path=shown,
            start_line=offset + 1,
            end_line=next_index,
            total_lines=total,
            truncated=next_index < total,
        )

    return make_tool(
        name="read_file",
        label="Read file",
        description=_description(settings.read_default_limit),
        parameters=_parameters(settings.read_default_limit),
        run=run,
        seconds=tool_seconds(settings.tool_timeouts, "read_file"),
    )
