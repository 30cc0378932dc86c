"""write_file: create a new file (and its parent folders); never overwrites."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from tinyagent.agent_types import AgentTool, AgentToolResult

from tunacode_lsp.tools.base import ToolCall, make_tool, text_result
from tunacode_lsp.tools.beneath import create_beneath
from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.limits import MAX_PATH_CHARS
from tunacode_lsp.tools.paths import display_path, refuse_special, resolve_in_workspace, workspace_real_root
from tunacode_lsp.tools.previews import digest_of
from tunacode_lsp.tools.settings import ToolSettings
from tunacode_lsp.tools.textfile import encode, split_lines
from tunacode_lsp.tools.timeouts import tool_seconds

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "filepath": {
            "type": "string",
            "maxLength": MAX_PATH_CHARS,
            "description": "Path of the new file, relative to the workspace root (or absolute inside it).",
        },
        "content": {"type": "string", "description": "The complete content of the new file."},
    },
    "required": ["filepath", "content"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Create a new file in the workspace with the given content; missing parent folders are "
    "created. It refuses to overwrite a file that exists: use edit_file to change an existing file."
)


def _create(real_root: Path, real: Path, shown: str, data: bytes) -> None:
    refuse_special(real, shown)
    if os.path.lexists(real):
        kind = "folder" if real.is_dir() else "file"
        raise ToolError(
            f"'{shown}' already exists (a {kind}): write_file only creates new files. "
            "Use edit_file to change an existing file, or pick another path."
        )
    try:
        # O_EXCL fails if the file appeared meanwhile, so nothing is ever overwritten; every
        # folder is opened beneath the root without following a link (tools/beneath.py)
        create_beneath(real_root, real, data, shown)
    except NotADirectoryError:
        raise ToolError(f"A parent of '{shown}' is a file, not a folder: pick another path.") from None
    except FileExistsError:
        raise ToolError(f"'{shown}' already exists: use edit_file to change it.") from None
    except OSError as exc:
        raise ToolError(f"Cannot create '{shown}': {exc.strerror}.") from None


def create_write_file_tool(
    root: Path, settings: ToolSettings | None = None, *, approved: dict[str, str] | None = None
) -> AgentTool:
    real_root = workspace_real_root(root)

    async def run(args: dict[str, Any], call: ToolCall) -> AgentToolResult:
        real = resolve_in_workspace(real_root, args["filepath"])
        shown = display_path(real_root, real)
        if real == real_root:
            raise ToolError("'filepath' names the workspace root itself: give a file path.")
        content: str = args["content"]
        data = encode(content)
        expected = (approved or {}).pop(call.tool_call_id, None)
        if expected is not None and digest_of(data) != expected:
            raise ToolError("The content differs from what the user approved. Nothing was written.")
        call.check_abort()
        await asyncio.to_thread(_create, real_root, real, shown, data)
        line_count = len(split_lines(content))
        return text_result(
            f"Created {shown} ({line_count} lines, {len(data):,} bytes).",
            path=shown,
            lines=line_count,
            bytes=len(data),
        )

    return make_tool(
        name="write_file", label="Write file", description=DESCRIPTION, parameters=PARAMETERS, run=run,
        seconds=tool_seconds((settings or ToolSettings()).tool_timeouts, "write_file"), changes_files=True,
    )
