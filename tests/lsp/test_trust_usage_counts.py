"""Token counts stay integers on the wire: a session document above 2**53 - 1 (the largest
integer every JSON reader keeps exactly) is refused on import with the field named, and a
running total saturates there instead of overflowing SQLite's INTEGER into a REAL (which the
server then sent as 9.22e18). Over the real CLI (`sessions import`) and the real server
(raw JSON-RPC bytes, so an int and a float are told apart)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import scripted_options
from tests.lsp.raw_client import RawServer
from tests.unit.store.test_session_documents import valid_document

MAX_COUNT = 2**53 - 1
WITH_USAGE = {"turns": [{"steps": [{"text": "Counted.", "chunks": 1},
                                   {"usage": {"prompt_tokens": 120, "completion_tokens": 8}}]}] * 3}


def _import(home: Path, document: dict) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-P", "-m", "tunacode_lsp", "sessions", "--store", str(home / "sessions.sqlite3"), "import", "-", "--json"],
        input=json.dumps(document), capture_output=True, text=True, timeout=60,
    )


def _document(workspace: Path, tokens: int) -> dict:
    document = valid_document()
    document["working_directory"] = str(workspace)
    document["current_model"] = "openai-compatible:scripted"
    document["session_total_usage"].update({"input_tokens": tokens, "total_tokens": tokens})
    document["total_tokens"] = tokens
    return document


@pytest.mark.parametrize("tokens", [2**53, 2**63 - 1])
def test_a_document_above_2_53_is_refused_naming_the_field(home, workspace, tokens):
    done = _import(home, _document(workspace, tokens))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "total_tokens: too large" in done.stderr and str(MAX_COUNT) in done.stderr


async def _request(server: RawServer, msg_id: int, session_id: str) -> None:
    server.request(msg_id, "workspace/executeCommand",
                   {"command": "tunacode.request", "arguments": [{"prompt": "count", "sessionId": session_id}]})
    answer = await server.answer_to(msg_id, timeout=30)
    assert answer.get("result", {}).get("stopReason") == "end_turn", answer


async def _session_usage(server: RawServer, msg_id: int, session_id: str) -> dict:
    server.request(msg_id, "workspace/executeCommand", {"command": "tunacode.session.get", "arguments": [{"sessionId": session_id}]})
    answer = await server.answer_to(msg_id)
    assert "result" in answer, answer
    return answer["result"]["session"]["usage"]


async def test_a_total_at_the_cap_stays_an_integer_after_more_requests(home, workspace, model):
    done = _import(home, _document(workspace, MAX_COUNT))
    assert done.returncode == 0, done.stderr
    session_id = json.loads(done.stdout)["sessionId"]
    model.set_script(WITH_USAGE)
    server = await RawServer.start(home, workspace)
    try:
        await server.initialize(workspace, scripted_options(model))
        for msg_id in (10, 11):
            await _request(server, msg_id, session_id)
        usage = await _session_usage(server, 12, session_id)
    finally:
        await server.close()
    assert type(usage["inputTokens"]) is int and usage["inputTokens"] == MAX_COUNT
    assert type(usage["totalTokens"]) is int and usage["totalTokens"] == MAX_COUNT
    assert type(usage["outputTokens"]) is int and usage["outputTokens"] == 2 + 16


async def test_a_row_stored_before_the_cap_is_read_and_added_to_as_an_integer(home, workspace, model):
    """A store written before the cap may hold 2**63 - 1: the next request's sum overflowed
    SQLite's INTEGER into a REAL, sent as 9.22e18; now it saturates at 2**53 - 1."""

    done = _import(home, _document(workspace, 5))
    session_id = json.loads(done.stdout)["sessionId"]
    with sqlite3.connect(home / "sessions.sqlite3") as conn:
        conn.execute("UPDATE sessions SET input_tokens = ?, total_tokens = ? WHERE session_id = ?",
                     (2**63 - 1, 2**63 - 1, session_id))
    model.set_script(WITH_USAGE)
    server = await RawServer.start(home, workspace)
    try:
        await server.initialize(workspace, scripted_options(model))
        before = await _session_usage(server, 9, session_id)
        await _request(server, 10, session_id)
        after = await _session_usage(server, 11, session_id)
    finally:
        await server.close()
    assert type(after["inputTokens"]) is int, after  # was 9.223372036854776e+18
    assert after["inputTokens"] == MAX_COUNT
    assert before["inputTokens"] == MAX_COUNT and type(before["inputTokens"]) is int
    assert after["totalTokens"] == MAX_COUNT and type(after["totalTokens"]) is int
