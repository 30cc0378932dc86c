"""A small stdio MCP server for the tests, written with the SDK's MCPServer (FastMCP).

Tools: `echo` (read-only), `write_note` (changing: writes a file in $NOTES_DIR), `slow` (sleeps,
reporting progress; writes `slow-cancelled` in $NOTES_DIR when it is cancelled), `crash`
(exits the process), `big` (a large result), `picture` (an image).
Run: python tests/mcp/demo_server.py
"""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ImageContent, ToolAnnotations

server = MCPServer("demo")
NOTES = Path(os.environ.get("NOTES_DIR", "."))
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


@server.tool()
def write_note(name: str, text: str) -> str:
    """Write a note file."""
    (NOTES / name).write_text(text)
    return f"wrote {name}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def slow(seconds: float, ctx: Context) -> str:
    """Sleep for a while, reporting progress."""
    try:
        steps = max(1, int(seconds * 10))
        for i in range(steps):
            await ctx.report_progress(i, steps)
            await asyncio.sleep(0.1)
        return "slept"
    except asyncio.CancelledError:
        (NOTES / "slow-cancelled").write_text("yes")
        raise


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def crash() -> str:
    """Exit the server process."""
    os._exit(3)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def big() -> str:
    """A very large result."""
    return "x" * 2_000_000


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def picture() -> ImageContent:
    """A tiny image."""
    return ImageContent(type="image", data=PNG, mime_type="image/png")


if __name__ == "__main__":
    server.run()
