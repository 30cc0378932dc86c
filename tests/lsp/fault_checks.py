"""Checks shared by the fault, bad-input, machine-fault and secrets tests.

What the model was sent (every tool call answered right after it), what the store holds
(its rows, read straight from SQLite), how a command was refused (the JSON-RPC code and
message), and what the events of one request look like (contiguous seq, one final update
per tool call, `request_end` last).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import pytest

from tunacode_lsp.contract.protocol import FINAL_TOOL_STATUSES

STORE_TABLES = ("sessions", "messages", "leases")


async def refusal(awaitable: Awaitable[Any]) -> tuple[int | None, str]:
    """The JSON-RPC error code and message a command was refused with (fails if it was not)."""

    with pytest.raises(Exception) as info:
        await awaitable
    return getattr(info.value, "code", None), str(info.value)


def paired_call_ids(messages: list[dict[str, Any]]) -> list[str]:
    """The tool call ids of an OpenAI-style model input, asserting each is answered at once.

    Every assistant message's calls must be followed directly by one `tool` message per
    call (in any order) and no tool message may answer anything else.
    """

    ids: list[str] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        assert message["role"] != "tool", f"message {index - 1} answers no call: {message}"
        if message["role"] != "assistant":
            continue
        calls = [call["id"] for call in message.get("tool_calls") or []]
        answers = []
        while index < len(messages) and messages[index]["role"] == "tool":
            answers.append(messages[index]["tool_call_id"])
            index += 1
        assert sorted(answers) == sorted(calls), f"calls {calls} answered by {answers}"
        ids.extend(calls)
    assert len(ids) == len(set(ids)), f"duplicate tool call ids: {ids}"
    return ids


def store_path(home: Path) -> Path:
    return home / "sessions.sqlite3"


def store_rows(home: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the store's tables, in a stable order (to compare before and after)."""

    db = sqlite3.connect(store_path(home))
    try:
        return {
            table: sorted(db.execute(f"SELECT * FROM {table}").fetchall(), key=repr)  # noqa: S608 - fixed names
            for table in STORE_TABLES
        }
    finally:
        db.close()


def integrity(home: Path) -> str:
    db = sqlite3.connect(store_path(home))
    try:
        return db.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        db.close()


def stored_messages(home: Path, session_id: str) -> list[dict[str, Any]]:
    """A session's stored message bodies in order, decoded (the store writes JSON bodies)."""

    db = sqlite3.connect(store_path(home))
    try:
        rows = db.execute(
            "SELECT body FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()
    finally:
        db.close()
    return [json.loads(body) for (body,) in rows]


def check_request_events(events: list[dict[str, Any]], session_id: str, request_id: str) -> None:
    """One request's events: its own envelope, seq 1..n, each tool call settled once, end last."""

    assert events, f"no events for {request_id}"
    assert all(e["sessionId"] == session_id and e["requestId"] == request_id for e in events)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["type"] == "request_start" and events[-1]["type"] == "request_end"
    assert [e["type"] for e in events].count("request_end") == 1
    for call in (e for e in events if e["type"] == "tool_call"):
        finals = [
            e for e in events
            if e["type"] == "tool_call_update" and e["toolCallId"] == call["toolCallId"]
            and e["status"] in FINAL_TOOL_STATUSES
        ]
        assert len(finals) == 1, f"tool call {call['toolCallId']} settled {len(finals)} times"
