"""Abort through each route, at each point of a request; the session stays usable."""

from __future__ import annotations

import asyncio
import os
import re
import time

import pytest
from lsprotocol import types

from tests.conftest import scripted_options

SLOW_TEXT = {"steps": [{"text": "word " * 60, "chunks": 60, "delay": 0.1}]}
FOLLOW_UP = {"steps": [{"text": "Still here."}]}


def _is(type_: str, **fields):
    return lambda e: e["type"] == type_ and all(e.get(k) == v for k, v in fields.items())


async def _start_slow(lsp, model, **options):
    model.set_script([SLOW_TEXT, FOLLOW_UP])
    await lsp.start(init_options=scripted_options(model, **options))
    pending = lsp.send_command("tunacode.request", {"prompt": "talk slowly"})
    first = await lsp.wait_for_event(_is("text_delta"))
    return pending, first


async def _check_next_request_sees_interrupted_text(lsp, model, session_id):
    result = await lsp.command("tunacode.request", {"prompt": "are you there?", "sessionId": session_id})
    assert result["stopReason"] == "end_turn" and result["text"] == "Still here."
    messages = model.requests[-1]["messages"]
    assistant = [m for m in messages if m["role"] == "assistant"]
    assert assistant and assistant[-1]["content"].rstrip().endswith("[INTERRUPTED]")
    assert "word" in assistant[-1]["content"]
    roles = [m["role"] for m in messages[1:]]
    assert roles == ["user", "assistant", "user"]


async def test_abort_command_mid_stream(lsp, model):
    pending, first = await _start_slow(lsp, model)
    started = time.monotonic()
    answer = await lsp.command("tunacode.abort", {"sessionId": first["sessionId"]})
    result = await asyncio.wait_for(pending, 1.0)
    assert answer == {"aborted": 1}
    assert result["stopReason"] == "cancelled" and time.monotonic() - started < 1.0
    assert result["text"].startswith("word") and "[INTERRUPTED]" not in result["text"]
    assert model.wait_for_closed(2.0), "the provider connection was not closed"
    events = lsp.events_of(result["requestId"])
    assert events[-1]["type"] == "request_end" and events[-1]["stopReason"] == "cancelled"
    assert (await lsp.command("tunacode.status"))["activeRequests"] == []
    await _check_next_request_sees_interrupted_text(lsp, model, result["sessionId"])


async def test_abort_by_request_id_and_unknown_ids(lsp, model):
    pending, first = await _start_slow(lsp, model)
    [active] = (await lsp.command("tunacode.status"))["activeRequests"]
    assert active["requestId"] == first["requestId"] and active["sessionId"] == first["sessionId"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", active["startedAt"])
    assert await lsp.command("tunacode.abort", {"requestId": "req_nope"}) == {"aborted": 0}
    assert await lsp.command("tunacode.abort", {"requestId": first["requestId"]}) == {"aborted": 1}
    result = await asyncio.wait_for(pending, 1.0)
    assert result["stopReason"] == "cancelled"


async def test_cancel_request_route(lsp, model):
    model.set_script([SLOW_TEXT, FOLLOW_UP])
    client = await lsp.start(init_options=scripted_options(model))
    params = types.ExecuteCommandParams(command="tunacode.request", arguments=[{"prompt": "talk"}])
    future = asyncio.ensure_future(
        client.protocol.send_request_async("workspace/executeCommand", params, msg_id="req-to-cancel")
    )
    first = await lsp.wait_for_event(_is("text_delta"))
    client.protocol.notify("$/cancelRequest", types.CancelParams(id="req-to-cancel"))
    with pytest.raises(Exception) as info:
        await asyncio.wait_for(future, 1.0)
    assert getattr(info.value, "code", None) == -32800
    end = await lsp.wait_for_event(_is("request_end", requestId=first["requestId"]))
    assert end["stopReason"] == "cancelled"
    await _check_next_request_sees_interrupted_text(lsp, model, first["sessionId"])


async def test_progress_cancel_route(lsp, model):
    model.set_script([SLOW_TEXT, FOLLOW_UP])
    client = await lsp.start(init_options=scripted_options(model))
    client.progress_reports["tok-1"] = []  # a token the client made itself
    pending = lsp.send_command("tunacode.request", {"prompt": "talk"}, token="tok-1")
    first = await lsp.wait_for_event(_is("text_delta"))
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token="tok-1"))
    result = await asyncio.wait_for(pending, 1.0)
    assert result["stopReason"] == "cancelled"
    assert client.progress_reports["tok-1"][-1].message == "cancelled"
    await _check_next_request_sees_interrupted_text(lsp, model, first["sessionId"])


async def test_abort_before_the_first_token(lsp, model):
    model.set_script([{"steps": [{"stall": 20}, {"text": "late"}]}, FOLLOW_UP])
    await lsp.start(init_options=scripted_options(model))
    pending = lsp.send_command("tunacode.request", {"prompt": "hi"})
    start = await lsp.wait_for_event(_is("request_start"))
    model.wait_for_requests(1)
    await lsp.command("tunacode.abort", {"requestId": start["requestId"]})
    result = await asyncio.wait_for(pending, 1.0)
    assert result["stopReason"] == "cancelled" and result["text"] == ""
    result = await lsp.command("tunacode.request", {"prompt": "again", "sessionId": result["sessionId"]})
    assert result["stopReason"] == "end_turn"
    roles = [m["role"] for m in model.requests[-1]["messages"][1:]]
    assert roles == ["user"]  # nothing of the aborted turn was worth keeping; the two prompts merged
    assert "hi" in model.requests[-1]["messages"][1]["content"]


async def test_abort_mid_tool_kills_the_process_group(lsp, model, workspace):
    model.set_script([
        {"steps": [{"text": "Running it."}, {"tool_call": {"name": "bash", "arguments": {"command": "echo $$ > ready; sleep 30; touch late"}}}]},
        FOLLOW_UP,
    ])
    os.mkfifo(workspace / "ready")  # the command blocks on it until we read its pid: no polling
    await lsp.start(init_options=scripted_options(model, shellSandbox="off"))  # host pids: unsandboxed
    pending = lsp.send_command("tunacode.request", {"prompt": "run it"})
    running = await lsp.wait_for_event(_is("tool_call_update", status="in_progress"))
    pid = int(await asyncio.wait_for(asyncio.to_thread((workspace / "ready").read_text), 10))
    started = time.monotonic()
    await lsp.command("tunacode.abort", {"requestId": running["requestId"]})
    result = await asyncio.wait_for(pending, 1.0)
    assert time.monotonic() - started < 1.0
    assert result["stopReason"] == "cancelled"
    assert result["toolCalls"][0]["status"] == "cancelled"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not (workspace / "late").exists()
    events = lsp.events_of(result["requestId"])
    final = [e for e in events if e["type"] == "tool_call_update" and e["status"] == "cancelled"]
    assert len(final) == 1 and events.index(final[0]) < len(events) - 1
    # the stored history pairs the call with a result: the next request's model input shows it
    result = await lsp.command("tunacode.request", {"prompt": "what happened?", "sessionId": result["sessionId"]})
    messages = model.requests[-1]["messages"]
    calls = [tc["id"] for m in messages if m["role"] == "assistant" for tc in m.get("tool_calls", [])]
    results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert calls == results == [running["toolCallId"]]


async def test_abort_between_turns_and_during_retry_backoff(lsp, model):
    model.set_script([
        {"error": {"status": 429, "body": {"error": {"message": "slow down"}}, "headers": {"Retry-After": "30"}}},
        FOLLOW_UP,
    ])
    await lsp.start(init_options=scripted_options(model))
    pending = lsp.send_command("tunacode.request", {"prompt": "hi"})
    notice = await lsp.wait_for_event(_is("notice"))
    assert "retrying in 30.0 s" in notice["message"] and "slow down" in notice["message"]
    started = time.monotonic()
    await lsp.command("tunacode.abort", {"requestId": notice["requestId"]})
    result = await asyncio.wait_for(pending, 1.0)
    assert result["stopReason"] == "cancelled" and time.monotonic() - started < 1.0
    assert len(model.requests) == 1  # no retry after the abort
