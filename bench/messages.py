"""Synthetic sessions: message dumps shaped like the ones the runner stores.

A cycle of four: the user's prompt, an assistant turn with a tool call, the tool's result
(about 1.5 kB of output), and an assistant answer, with unique tool call ids. About 700
bytes per message on average, close to what a coding session stores.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

TOOL_OUTPUT = "".join(
    f"{n}:{n * 7919 % 65536:04x}|    return value + {n}  # line {n} of the module\n" for n in range(30)
)
USAGE = {
    "input": 4595, "output": 15, "cache_read": 0, "cache_write": 0, "total_tokens": 4610,
    "cost": {"input": 0.0, "output": 0.0, "cache_read": 0.0, "cache_write": 0.0, "total": 0.0},
}
STAMP = 1_795_316_222_419


def message(index: int) -> dict[str, Any]:
    """Message `index` of a synthetic session (the same index gives the same message)."""
    cycle, kind = divmod(index, 4)
    call_id = f"call_{cycle}"
    stamp = STAMP + index
    if kind == 0:
        prompt = f"Task {cycle}: look at module {cycle % 50} and fix what is wrong."
        return {"role": "user", "content": [{"type": "text", "text": prompt}], "timestamp": stamp}
    if kind == 1:
        return {"role": "assistant",
                "content": [{"type": "text", "text": "Let me read the module first."},
                            {"type": "tool_call", "id": call_id, "name": "read_file",
                             "arguments": {"filepath": f"src/module_{cycle % 50}.py"}}],
                "stop_reason": "tool_calls", "timestamp": stamp, "api": "openai-completions",
                "provider": "openai-compatible", "model": "scripted", "usage": USAGE}
    if kind == 2:
        return {"role": "tool_result", "tool_call_id": call_id, "tool_name": "read_file",
                "content": [{"type": "text", "text": f"src/module_{cycle % 50}.py: lines 1-30 of 30\n{TOOL_OUTPUT}"}],
                "timestamp": stamp}
    return {"role": "assistant",
            "content": [{"type": "text", "text": f"Module {cycle % 50} reads well; nothing needs a change."}],
            "stop_reason": "stop", "timestamp": stamp, "api": "openai-completions",
            "provider": "openai-compatible", "model": "scripted", "usage": USAGE}


def messages(start: int, count: int) -> Iterator[dict[str, Any]]:
    return (message(i) for i in range(start, start + count))
