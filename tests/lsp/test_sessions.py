"""Session commands through the real server, and resuming across a server restart."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from tests.conftest import scripted_options
from tests.lsp.harness import LspHarness

TOOL_TURN = {"steps": [{"text": "Listing."}, {"tool_call": {"name": "list_files", "arguments": {}}}]}
DONE = {"steps": [{"text": "Done."}]}


async def _error_code(awaitable) -> tuple[int | None, str]:
    with pytest.raises(Exception) as info:
        await awaitable
    return getattr(info.value, "code", None), str(info.value)


async def test_session_lifecycle(lsp, model, workspace):
    model.set_script([TOOL_TURN, DONE, DONE])
    await lsp.start(init_options=scripted_options(model))

    created = await lsp.command("tunacode.session.new", {"title": "Empty one"})
    assert created["title"] == "Empty one" and created["messageCount"] == 0 and created["busy"] is False
    assert created["cwd"] == str(workspace) and created["model"] == "openai-compatible:scripted"

    first = await lsp.command("tunacode.request", {"prompt": "List the files please"})
    sid = first["sessionId"]
    listed = await lsp.command("tunacode.session.list", {})
    assert [s["sessionId"] for s in listed["sessions"]] == [sid, created["sessionId"]]  # newest first
    mine = listed["sessions"][0]
    assert mine["title"].startswith("List the files please")
    assert mine["messageCount"] == 4  # user, assistant with a call, tool result, final assistant
    assert mine["usage"]["totalTokens"] == first["usage"]["totalTokens"] > 0
    assert (await lsp.command("tunacode.session.list", {"limit": 1}))["sessions"][0]["sessionId"] == sid
    assert (await lsp.command("tunacode.session.list", {"cwd": "/somewhere/else"}))["sessions"] == []

    got = await lsp.command("tunacode.session.get", {"sessionId": sid})
    roles = [m["role"] for m in got["messages"]]
    assert roles == ["user", "assistant", "tool_result", "assistant"]
    call = got["messages"][1]["content"][-1]
    assert call["type"] == "tool_call" and got["messages"][2]["tool_call_id"] == call["id"]
    assert got["session"]["messageCount"] == len(got["messages"])

    forked = await lsp.command("tunacode.session.fork", {"sessionId": sid, "messageCount": 2})
    fork_messages = (await lsp.command("tunacode.session.get", {"sessionId": forked["sessionId"]}))["messages"]
    # cut back to a clean point: a call is never copied without its result
    assert [m["role"] for m in fork_messages] in (["user"], ["user", "assistant", "tool_result"])

    # resuming the fork sends its history to the model
    await lsp.command("tunacode.request", {"prompt": "continue", "sessionId": forked["sessionId"]})
    assert "List the files please" in str(model.requests[-1]["messages"])

    assert await lsp.command("tunacode.session.delete", {"sessionId": sid}) == {"deleted": True}
    assert await lsp.command("tunacode.session.delete", {"sessionId": sid}) == {"deleted": False}
    code, _ = await _error_code(lsp.command("tunacode.session.get", {"sessionId": sid}))
    assert code == -32001


async def test_export_import_round_trip(lsp, model):
    model.set_script([TOOL_TURN, DONE])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    document = await lsp.command("tunacode.session.export", {"sessionId": result["sessionId"]})
    assert set(document) >= {
        "version", "session_id", "project_id", "created_at", "last_modified", "working_directory",
        "current_model", "total_tokens", "session_total_usage", "thoughts", "messages",
    }
    imported = await lsp.command("tunacode.session.import", {"document": document})
    assert imported["sessionId"] != result["sessionId"]  # the original still exists
    original = await lsp.command("tunacode.session.get", {"sessionId": result["sessionId"]})
    copy = await lsp.command("tunacode.session.get", {"sessionId": imported["sessionId"]})
    assert copy["messages"] == original["messages"]

    bad = dict(document, messages=[{"role": "wizard", "content": []}])
    code, message = await _error_code(lsp.command("tunacode.session.import", {"document": bad}))
    assert code == -32602 and "messages[0]" in message
    code, message = await _error_code(lsp.command("tunacode.session.import", {"document": {"version": 1}}))
    assert code == -32602 and "document" in message
    before = await lsp.command("tunacode.session.list", {})
    assert len(before["sessions"]) == 2  # nothing was created by the rejected imports


async def test_unknown_and_busy_sessions(lsp, model):
    model.set_script([{"steps": [{"text": "slow " * 30, "chunks": 30, "delay": 0.1}]}, DONE])
    await lsp.start(init_options=scripted_options(model))
    for command, args in (
        ("tunacode.request", {"prompt": "hi", "sessionId": "nope"}),
        ("tunacode.session.get", {"sessionId": "nope"}),
        ("tunacode.session.export", {"sessionId": "nope"}),
        ("tunacode.session.fork", {"sessionId": "nope"}),
    ):
        code, message = await _error_code(lsp.command(command, args))
        assert code == -32001 and "nope" in message, command

    pending = lsp.send_command("tunacode.request", {"prompt": "talk"})
    first = await lsp.wait_for_event(lambda e: e["type"] == "text_delta")
    code, message = await _error_code(lsp.command("tunacode.request", {"prompt": "me too", "sessionId": first["sessionId"]}))
    assert code == -32002 and "busy" in message
    code, _ = await _error_code(lsp.command("tunacode.session.delete", {"sessionId": first["sessionId"]}))
    assert code == -32002
    listed = (await lsp.command("tunacode.session.list", {}))["sessions"]
    assert listed[0]["busy"] is True
    await lsp.command("tunacode.abort", {"sessionId": first["sessionId"]})
    assert (await asyncio.wait_for(pending, 2))["stopReason"] == "cancelled"
    assert (await lsp.command("tunacode.session.list", {}))["sessions"][0]["busy"] is False


async def test_resume_after_server_restart(model, workspace, home):
    model.set_script([TOOL_TURN, DONE, DONE])
    first = LspHarness(workspace, home)
    try:
        await first.start(init_options=scripted_options(model))
        result = await first.command("tunacode.request", {"prompt": "remember the word pineapple"})
    finally:
        await first.stop()

    second = LspHarness(workspace, home)
    try:
        await second.start(init_options=scripted_options(model))
        resumed = await second.command("tunacode.request", {"prompt": "what was the word?", "sessionId": result["sessionId"]})
    finally:
        await second.stop()
    assert resumed["stopReason"] == "end_turn" and resumed["sessionId"] == result["sessionId"]
    messages = model.requests[-1]["messages"]
    assert "pineapple" in messages[1]["content"]
    calls = [tc["id"] for m in messages if m["role"] == "assistant" for tc in m.get("tool_calls", [])]
    assert calls and calls == [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    db = sqlite3.connect(home / "sessions.sqlite3")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
