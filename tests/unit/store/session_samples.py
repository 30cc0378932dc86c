"""Sample tinyagent message dumps for the session store tests."""

from __future__ import annotations

from typing import Any


def user(text: str, timestamp: int = 1) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": timestamp}


def assistant_calls(*ids: str, text: str = "working") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "thinking", "thinking": "plan"}, {"type": "text", "text": text}]
        + [{"type": "tool_call", "id": i, "name": "read_file", "arguments": {"filepath": "a.py"}} for i in ids],
        "stop_reason": "tool_calls",
        "usage": {"input": 10, "output": 5, "cache_read": 0, "cache_write": 0, "total_tokens": 15},
        "model": "gpt-test",
    }


def assistant_text(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "stop_reason": "stop"}


def tool_result(call_id: str, text: str = "1: print('hi')") -> dict[str, Any]:
    return {
        "role": "tool_result",
        "tool_call_id": call_id,
        "tool_name": "read_file",
        "content": [{"type": "text", "text": text}],
        "details": {"lines": 1},
        "is_error": False,
    }


def conversation() -> list[dict[str, Any]]:
    return [
        user("Fix the bug in a.py\nIt crashes on start"),
        assistant_calls("call_1", "call_2"),
        tool_result("call_1"),
        tool_result("call_2"),
        assistant_text("Fixed."),
        user("thanks"),
        assistant_text("You're welcome."),
    ]
