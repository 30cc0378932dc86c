"""todo_write: the model's plan for multi-step work, a list it replaces on every call.

Items are the seeds' TodoItem: `content` (what to do, imperative), `status` (pending |
in_progress | completed) and `activeForm` (the same in the present continuous, shown while
it runs). The tool only validates and echoes the list; the agent layer emits the `plan`
event and stores the list with the session (the result's `details["items"]`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tinyagent.agent_types import AgentTool, AgentToolResult

from tunacode_lsp.tools.base import ToolCall, make_tool, text_result
from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.timeouts import tool_seconds

STATUSES = ("pending", "in_progress", "completed")
MAX_ITEMS = 50
MAX_ITEM_CHARS = 500
MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "maxItems": MAX_ITEMS,
            "description": "The whole plan, replacing the previous one. Keep exactly one item in_progress while working.",
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "minLength": 1, "maxLength": MAX_ITEM_CHARS,
                                "description": "What to do, imperative: `Run the tests`."},
                    "status": {"type": "string", "enum": list(STATUSES),
                               "description": "pending, in_progress (exactly one while working) or completed."},
                    "activeForm": {"type": "string", "minLength": 1, "maxLength": MAX_ITEM_CHARS,
                                   "description": "The same, present continuous: `Running the tests`."},
                },
                "required": ["content", "status", "activeForm"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["todos"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Write your plan for a multi-step task as a checklist the user sees: the whole list each time "
    "(it replaces the previous one). Use it for work of three or more steps; mark an item "
    "in_progress before starting it and completed as soon as it is done. Not needed for a "
    "single quick step or a question."
)


def plan_items(args: dict[str, Any]) -> list[dict[str, str]]:
    """The validated items, in the wire's key order."""
    items = args.get("todos")
    if not isinstance(items, list):
        raise ToolError("todos must be a list of {content, status, activeForm}")
    return [
        {"content": str(item["content"]), "status": str(item["status"]), "activeForm": str(item["activeForm"])}
        for item in items
    ]


def render_plan(items: list[dict[str, str]]) -> str:
    if not items:
        return "Plan cleared."
    lines = [f"{MARKS.get(item['status'], '[ ]')} {item['content']}" for item in items]
    done = sum(item["status"] == "completed" for item in items)
    return f"Plan updated ({done}/{len(items)} done):\n" + "\n".join(lines)


def create_todo_write_tool(_root: Path | None = None, timeouts: Mapping[str, float] | None = None) -> AgentTool:
    async def run(args: dict[str, Any], call: ToolCall) -> AgentToolResult:
        call.check_abort()
        items = plan_items(args)
        return text_result(render_plan(items), items=items)

    return make_tool(
        name="todo_write", label="Plan", description=DESCRIPTION, parameters=PARAMETERS, run=run,
        seconds=tool_seconds(timeouts or {}, "todo_write"),
    )
