"""Long sessions over the real server: cache-stable pruning and the context meter."""

from __future__ import annotations

import asyncio
import json
from os.path import commonprefix
from typing import Any

import pytest
from lsprotocol import types

from tests.conftest import scripted_options

FILE_LINES = 400  # about 20 KB


def read_turns(turns: int) -> list[dict[str, Any]]:
    steps = [
        {"steps": [{"text": f"Reading it again ({n})."}, {"tool_call": {"name": "read_file", "arguments": {"filepath": "big.py"}}}]}
        for n in range(turns)
    ]
    return steps + [{"text": "Done reading."}]


def model_input(body: dict[str, Any]) -> str:
    """What a provider caches: the request's messages, serialised in order."""
    return json.dumps(body["messages"], ensure_ascii=False)


def kept_previous(bodies: list[dict[str, Any]]) -> list[bool]:
    """Per call after the first: did it start with the whole previous call's input?"""
    inputs = [model_input(b) for b in bodies]
    # the previous input ends with "]"; compare it without that closing bracket
    return [inputs[n].startswith(inputs[n - 1][:-1]) for n in range(1, len(inputs))]


async def test_pruning_keeps_the_previous_input_as_a_prefix_between_rare_steps(lsp, model, workspace):
    (workspace / "big.py").write_text("".join(f"value_{n:04d} = {n} * 2  # some padding text here\n" for n in range(FILE_LINES)))
    turns = 16
    model.set_script(read_turns(turns))
    await lsp.start(init_options=scripted_options(model, historyTokenBudget=20_000, maxTurns=100))

    result = await lsp.command("tunacode.request", {"prompt": "Read big.py many times."})

    assert result["stopReason"] == "end_turn", result
    bodies = model.requests
    assert len(bodies) == turns + 1
    assert any("[output pruned" in model_input(b) for b in bodies)
    kept = kept_previous(bodies)
    # Steps are rare: most calls append to the previous input unchanged (the old pruning
    # changed an early message on every call past the budget). Each 20 KB output is a
    # quarter of this budget and the never-pruned head (0.3 of it) holds the first one, so
    # here a step comes every other call, and keeps the head: the calls share more of their
    # input than with the earlier head of 0.25 (a step every third call that kept nothing).
    steps = kept.count(False)
    assert 1 <= steps <= len(kept) // 2, kept
    # A step keeps what was pruned before byte-identical: the input up to the first newly
    # pruned output is shared.
    for n, ok in enumerate(kept, start=1):
        if not ok:
            shared = commonprefix([model_input(bodies[n - 1]), model_input(bodies[n])])
            assert shared.count("[output pruned") == model_input(bodies[n - 1]).count("[output pruned")


async def test_turn_end_carries_the_context_meter(lsp, model):
    model.set_script([{"steps": [{"text": "hi"}, {"usage": {"prompt_tokens": 321, "completion_tokens": 2, "cached_tokens": 21}}]}])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hello"})
    turn_end = next(e for e in lsp.events_of(result["requestId"]) if e["type"] == "turn_end")
    assert turn_end["contextTokens"] == 321  # the provider's count: uncached 300 + cached 21
    assert turn_end["contextWindow"] == 128_000  # an unknown local model: the default window


async def test_context_meter_falls_back_to_the_estimate(lsp, model):
    model.set_script([{"text": "hi"}])  # no usage asked for? the scripted model computes one
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hello " * 400})
    turn_end = next(e for e in lsp.events_of(result["requestId"]) if e["type"] == "turn_end")
    assert turn_end["contextTokens"] >= 2400 / 4


PLAN_1 = [{"content": "Read calc", "status": "in_progress", "activeForm": "Reading calc"},
          {"content": "Fix add", "status": "pending", "activeForm": "Fixing add"}]
PLAN_2 = [{"content": "Read calc", "status": "completed", "activeForm": "Reading calc"},
          {"content": "Fix add", "status": "in_progress", "activeForm": "Fixing add"}]


async def test_todo_write_plan_events_storage_and_export_round_trip(lsp, model):
    model.set_script([
        {"tool_call": {"name": "todo_write", "arguments": {"todos": PLAN_1}}},
        {"tool_call": {"name": "todo_write", "arguments": {"todos": PLAN_2}}},
        {"tool_call": {"name": "todo_write", "arguments": {"todos": [{"content": "x", "status": "doing", "activeForm": "x"}]}}},
        {"text": "Planned."},
    ])
    await lsp.start(init_options=scripted_options(model, approval="ask"))  # no approval needed

    result = await lsp.command("tunacode.request", {"prompt": "Fix calc in steps."})

    assert result["stopReason"] == "end_turn", result
    events = lsp.events_of(result["requestId"])
    plans = [e["items"] for e in events if e["type"] == "plan"]
    assert plans == [PLAN_1, PLAN_2]  # the invalid third list changed nothing
    assert not lsp.approvals.prompts
    updates = [e for e in events if e["type"] == "tool_call_update" and e["name"] == "todo_write"]
    assert [u["status"] for u in updates if u["status"] in ("completed", "failed")] == ["completed", "completed", "failed"]
    assert "status" in model.requests[3]["messages"][-1]["content"]  # the model was told what was wrong

    got = await lsp.command("tunacode.session.get", {"sessionId": result["sessionId"]})
    assert got["plan"] == PLAN_2
    document = await lsp.command("tunacode.session.export", {"sessionId": result["sessionId"]})
    assert document["plan"] == PLAN_2
    imported = await lsp.command("tunacode.session.import", {"document": document})
    again = await lsp.command("tunacode.session.get", {"sessionId": imported["sessionId"]})
    assert again["plan"] == PLAN_2


# ---------------------------------------------------------------- compaction by command


async def _session_with_turns(lsp, model, turns: int) -> str:
    session_id = None
    for n in range(turns):
        model.set_script([{"text": f"ANSWER-{n} " + "a" * 2000}])
        args = {"prompt": f"QUESTION-{n} " + "q" * 2000, **({"sessionId": session_id} if session_id else {})}
        result = await lsp.command("tunacode.request", args)
        assert result["stopReason"] == "end_turn", result
        session_id = result["sessionId"]
    assert session_id is not None
    return session_id


async def test_compact_command_summarises_older_turns_and_keeps_the_stored_messages(lsp, model):
    await lsp.start(init_options=scripted_options(model, contextWindow=20_000))
    session_id = await _session_with_turns(lsp, model, 5)  # ~5,000 tokens: below 0.8 of the window
    stored_before = (await lsp.command("tunacode.session.get", {"sessionId": session_id}))["messages"]

    model.set_script([{"steps": [{"text": "SUMMARY-TEXT"}, {"usage": {"prompt_tokens": 1000, "completion_tokens": 5}}]}])
    result = await lsp.command("tunacode.session.compact", {"sessionId": session_id})

    assert result["after"] < result["before"]
    assert result["session"]["sessionId"] == session_id
    assert result["session"]["usage"]["inputTokens"] >= 1000  # the summary call's cost is the session's
    summary_call = model.requests[-1]
    assert "tools" not in summary_call and "QUESTION-0" in json.dumps(summary_call["messages"])
    got = await lsp.command("tunacode.session.get", {"sessionId": session_id})
    assert got["messages"] == stored_before  # nothing stored is dropped
    document = await lsp.command("tunacode.session.export", {"sessionId": session_id})
    assert document["compaction"]["summary"] == "SUMMARY-TEXT"

    model.set_script([{"text": "NEXT-ANSWER"}])
    nxt = await lsp.command("tunacode.request", {"prompt": "NEXT-QUESTION", "sessionId": session_id})
    assert nxt["stopReason"] == "end_turn"
    sent = json.dumps(model.requests[-1]["messages"])
    assert "SUMMARY-TEXT" in sent and "NEXT-QUESTION" in sent
    assert "QUESTION-0" not in sent and "ANSWER-0" not in sent  # older turns replaced
    assert "QUESTION-4" in sent and "ANSWER-4" in sent  # recent ones kept

    imported = await lsp.command("tunacode.session.import", {"document": document})
    model.set_script([{"text": "ok"}])
    await lsp.command("tunacode.request", {"prompt": "again", "sessionId": imported["sessionId"]})
    assert "SUMMARY-TEXT" in json.dumps(model.requests[-1]["messages"])  # export/import keep it


async def test_a_failed_summary_call_leaves_the_session_as_it_was(lsp, model):
    await lsp.start(init_options=scripted_options(model, contextWindow=20_000, maxRetries=0))
    session_id = await _session_with_turns(lsp, model, 3)
    before = await lsp.command("tunacode.session.export", {"sessionId": session_id})
    model.set_script([{"error": {"status": 500, "body": {"error": {"message": "summary broke"}}}}])
    with pytest.raises(Exception) as info:
        await lsp.command("tunacode.session.compact", {"sessionId": session_id})
    assert getattr(info.value, "code", None) == -32603 and "summary broke" in str(info.value)
    after = await lsp.command("tunacode.session.export", {"sessionId": session_id})
    assert after["compaction"] is None and after["messages"] == before["messages"]
    assert after["session_total_usage"] == before["session_total_usage"]


async def test_compact_command_can_be_cancelled_and_stores_nothing(lsp, model):
    client = await lsp.start(init_options=scripted_options(model, contextWindow=20_000))
    session_id = await _session_with_turns(lsp, model, 3)
    calls = len(model.requests)
    model.set_script([{"steps": [{"text": "partial"}, {"stall": 60}]}])
    params = types.ExecuteCommandParams(command="tunacode.session.compact", arguments=[{"sessionId": session_id}])
    future = asyncio.ensure_future(client.protocol.send_request_async("workspace/executeCommand", params, msg_id="compact-1"))
    await asyncio.to_thread(model.wait_for_requests, calls + 1, 10.0)
    client.protocol.notify("$/cancelRequest", types.CancelParams(id="compact-1"))
    with pytest.raises(Exception) as info:
        await asyncio.wait_for(future, 5.0)
    assert getattr(info.value, "code", None) == -32800
    assert await asyncio.to_thread(model.wait_for_closed, 5.0)  # the summary stream was closed
    document = await lsp.command("tunacode.session.export", {"sessionId": session_id})
    assert document["compaction"] is None
    model.set_script([{"text": "ok"}])  # the lease was given back: the session takes requests
    result = await lsp.command("tunacode.request", {"prompt": "still there?", "sessionId": session_id})
    assert result["stopReason"] == "end_turn"


async def test_tunacode_abort_with_the_session_stops_a_compaction(lsp, model):
    await lsp.start(init_options=scripted_options(model, contextWindow=20_000))
    session_id = await _session_with_turns(lsp, model, 3)
    calls = len(model.requests)
    model.set_script([{"steps": [{"text": "partial"}, {"stall": 60}]}])
    pending = lsp.send_command("tunacode.session.compact", {"sessionId": session_id})
    await asyncio.to_thread(model.wait_for_requests, calls + 1, 10.0)
    assert await lsp.command("tunacode.abort", {"sessionId": session_id}) == {"aborted": 1}
    with pytest.raises(Exception) as info:
        await asyncio.wait_for(pending, 5.0)
    assert getattr(info.value, "code", None) == -32800 and "unchanged" in str(info.value)
    document = await lsp.command("tunacode.session.export", {"sessionId": session_id})
    assert document["compaction"] is None
