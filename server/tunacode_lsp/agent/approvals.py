"""Readable summaries of what a changing tool call would do, for the approval prompt."""

from __future__ import annotations

import json
from typing import Any

MAX_COMMAND_CHARS = 300


def _lines(text: Any) -> int:
    return len(text.splitlines()) if isinstance(text, str) and text else 0


def _edits(args: dict[str, Any]) -> list[dict[str, Any]]:
    edits = args.get("edits")
    if isinstance(edits, list):
        return [e for e in edits if isinstance(e, dict)]
    if "old_text" in args or "new_text" in args:
        return [args]
    return []


def approval_summary(name: str, args: dict[str, Any]) -> str:
    path = args.get("filepath") if isinstance(args.get("filepath"), str) else "?"
    if name == "bash":
        command = str(args.get("command", ""))
        if len(command) > MAX_COMMAND_CHARS:
            command = command[: MAX_COMMAND_CHARS - 1] + "…"
        where = f" (in {args['cwd']})" if isinstance(args.get("cwd"), str) else ""
        return f"run `{command}`{where}"
    if name == "write_file":
        content = args.get("content", "")
        size = len(content.encode("utf-8")) if isinstance(content, str) else 0
        return f"create {path} ({_lines(content)} lines, {size} bytes)"
    if name == "edit_file":
        edits = _edits(args)
        removed = sum(_lines(e.get("old_text")) or (1 if "line" in e else 0) for e in edits)
        added = sum(_lines(e.get("new_text")) for e in edits)
        return f"edit {path}: {len(edits)} change{'s' if len(edits) != 1 else ''} (-{removed} +{added} lines)"
    if name.startswith("mcp__"):
        _, server, tool = name.split("__", 2)
        return f"call the MCP server '{server}' tool '{tool}' with {json.dumps(args, ensure_ascii=False, default=str)}"
    return ", ".join(f"{k}={v!r}"[:80] for k, v in args.items())
