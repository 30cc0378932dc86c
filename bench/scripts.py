"""The scripted model's turns used by the figures (format: docs/scripted-model.md)."""

from __future__ import annotations

from typing import Any

# About one second of text in 40 pieces: long enough that an abort lands mid-stream.
SLOW_TEXT: dict[str, Any] = {"steps": [{"text": "word " * 40, "chunks": 40, "delay": 0.025}]}

# Answered at once.
QUICK_TEXT: dict[str, Any] = {"text": "Done."}


def repeat(turn: dict[str, Any]) -> dict[str, Any]:
    """A script that answers every request with `turn`."""
    return {"turns": [turn], "on_exhausted": "repeat_last"}


def bash_turn(command: str) -> dict[str, Any]:
    return {"steps": [{"text": "Running it."}, {"tool_call": {"name": "bash", "arguments": {"command": command}}}]}


def fast_stream(pieces: int) -> dict[str, Any]:
    """A long answer streamed as fast as the model server can send it."""
    return {"text": "token " * pieces, "chunks": pieces}


def tool_session(requests: int, tool_turns: int) -> list[dict[str, Any]]:
    """`requests` requests of `tool_turns` tool-call turns and one answer each (read, search, list, shell)."""
    calls = [
        {"name": "read_file", "arguments": {"filepath": "src/module_0.py"}},
        {"name": "grep", "arguments": {"pattern": "def ", "path": "src"}},
        {"name": "list_files", "arguments": {"path": "."}},
        {"name": "bash", "arguments": {"command": "echo ok"}},
        {"name": "read_file", "arguments": {"filepath": "src/module_1.py", "offset": 0, "limit": 40}},
    ]
    turns: list[dict[str, Any]] = []
    for r in range(requests):
        for t in range(tool_turns):
            call = calls[(r * tool_turns + t) % len(calls)]
            turns.append({"steps": [{"text": f"Step {t + 1}: looking at it.", "chunks": 4},
                                    {"tool_call": call, "chunks": 3}]})
        turns.append({"text": f"Request {r + 1} done: the code reads well and nothing needs a change.", "chunks": 8})
    return turns
