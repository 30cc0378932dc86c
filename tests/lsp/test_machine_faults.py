"""Machine faults: the server SIGKILLed mid-request again and again, and two servers on one store.

After each kill the store passes `PRAGMA integrity_check`, every message that was finished
before the kill is stored, and a new server resumes the interrupted session with every
tool call answered in the model's input. Two server processes sharing one TUNACODE_HOME
work on two sessions at once; on one session the second is refused with -32002 busy.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.conftest import scripted_options
from tests.lsp.fault_checks import integrity, paired_call_ids, refusal, stored_messages
from tests.lsp.fault_process import sigkill
from tests.lsp.harness import LspHarness
from tunacode_lsp.core.history import violations
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

SESSION_BUSY = -32002
DONE = {"steps": [{"text": "Done."}]}
SLOW_TEXT = {"steps": [{"text": "word " * 50, "chunks": 50, "delay": 0.1}]}
STALL = {"steps": [{"stall": 30}]}
# Damage a crash may leave in a stored history, repaired when the session is loaded.
CRASH_LEFTOVERS = ("has no tool result", "user message follows a user message")


def _list_turn(call_id: str) -> dict[str, Any]:
    return {"steps": [{"text": "Listing."}, {"tool_call": {"id": call_id, "name": "list_files", "arguments": {}}}]}


def _is(kind: str, **fields: Any):
    return lambda e: e["type"] == kind and all(e.get(k) == v for k, v in fields.items())


# (script, the event after which to kill, what is surely stored by then beyond the prompt)
KILL_POINTS: list[tuple[list[dict[str, Any]], Any, list[tuple[str, str]]]] = [
    ([SLOW_TEXT], _is("text_delta"), []),
    (
        [{"steps": [{"tool_call": {"id": "call_k1", "name": "bash", "arguments": {"command": "sleep 2"}}}]}, DONE],
        _is("tool_call_update", toolCallId="call_k1", status="in_progress"),
        [],
    ),
    ([_list_turn("call_k2"), STALL], _is("turn_end", turn=1), [("call", "call_k2"), ("result", "call_k2")]),
    ([_list_turn("call_k3"), SLOW_TEXT], _is("text_delta", text="word "), [("call", "call_k3"), ("result", "call_k3")]),
    ([STALL], _is("request_start"), []),
]


def _signature(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """What identifies each stored message: a prompt's text, a call's id, a result's call id."""

    found: list[tuple[str, str]] = []
    for message in messages:
        if message["role"] == "user":
            found.append(("user", "".join(b.get("text", "") for b in message["content"])))
        elif message["role"] == "assistant":
            found.extend(("call", b["id"]) for b in message["content"] if b.get("type") == "tool_call")
        else:
            found.append(("result", message["tool_call_id"]))
    return found


def _is_subsequence(wanted: list[Any], found: list[Any]) -> bool:
    rest = iter(found)
    return all(item in rest for item in wanted)


async def _start(workspace: Path, home: Path, model: ScriptedModelServer, **options: Any) -> LspHarness:
    harness = LspHarness(workspace, home)
    await harness.start(init_options=scripted_options(model, **options))
    return harness


async def test_sigkill_mid_request_again_and_again(model, workspace, home):
    session_id: str | None = None
    finished: list[tuple[str, str]] = []  # every message surely stored so far, in order
    for round_, (script, kill_after, stored_by_then) in enumerate(KILL_POINTS):
        model.set_script(script)
        seen_requests = len(model.requests)
        harness = await _start(workspace, home, model)
        try:
            prompt = f"round {round_}"
            params = {"prompt": prompt, **({"sessionId": session_id} if session_id else {})}
            pending = harness.send_command("tunacode.request", params)
            event = await harness.wait_for_event(kill_after)
            session_id = event["sessionId"]
            if len(model.requests) > seen_requests:  # the resumed history reached the model paired
                sent = model.requests[seen_requests]["messages"]
                assert set(paired_call_ids(sent)) >= {value for kind, value in finished if kind == "call"}
            assert await sigkill(harness, pending) == -9
        finally:
            await harness.stop()

        assert integrity(home) == "ok", f"round {round_}"
        stored = stored_messages(home, session_id)
        if kill_after is not KILL_POINTS[-1][1]:  # the prompt is stored once the model streams
            finished.append(("user", prompt))
        finished.extend(stored_by_then)
        assert _is_subsequence(finished, _signature(stored)), (round_, finished, _signature(stored))
        leftovers = [v for v in violations(stored) if not v.endswith(CRASH_LEFTOVERS)]
        assert leftovers == [], leftovers

    model.set_script([DONE])
    harness = await _start(workspace, home, model)
    try:
        result = await harness.command("tunacode.request", {"prompt": "still there?", "sessionId": session_id})
    finally:
        await harness.stop()
    assert result["stopReason"] == "end_turn" and result["sessionId"] == session_id
    sent = model.requests[-1]["messages"]
    calls = paired_call_ids(sent)
    assert {"call_k2", "call_k3"} <= set(calls)
    assert all(f"round {n}" in str(sent) for n in range(len(KILL_POINTS) - 1))
    assert integrity(home) == "ok"
    assert violations(stored_messages(home, session_id)[-2:]) == []


BASH_TURN = {"steps": [{"tool_call": {"name": "bash", "arguments": {"command": "echo changed"}}}]}


async def _both_waiting_for_approval(*harnesses: LspHarness) -> None:
    for harness in harnesses:
        await harness.wait_for(lambda h=harness: h.approvals.open == 1)


async def test_two_servers_on_one_store_work_on_two_sessions_at_once(model, workspace, home):
    other_model = ScriptedModelServer({"turns": [BASH_TURN, {"steps": [{"text": "B done."}]}]}).start()
    model.set_script([BASH_TURN, {"steps": [{"text": "A done."}]}])
    first = second = None
    try:
        first = await _start(workspace, home, model, approval="ask")
        second = await _start(workspace, home, other_model, approval="ask")
        for harness in (first, second):
            harness.approvals.block = asyncio.Event()  # released, a prompt is dismissed: Deny
        pending_a = first.send_command("tunacode.request", {"prompt": "task A"})
        pending_b = second.send_command("tunacode.request", {"prompt": "task B"})
        await _both_waiting_for_approval(first, second)  # both mid-request, both holding a lease
        listed = await first.command("tunacode.session.list", {})
        assert [s["busy"] for s in listed["sessions"]] == [True, True]
        first.approvals.block.set()
        second.approvals.block.set()
        result_a, result_b = await asyncio.wait_for(asyncio.gather(pending_a, pending_b), 15)
    finally:
        for harness in (first, second):
            if harness is not None:
                await harness.stop()
        other_model.stop()

    assert result_a["sessionId"] != result_b["sessionId"]
    assert (result_a["text"], result_b["text"]) == ("A done.", "B done.")
    assert integrity(home) == "ok"
    for result, prompt in ((result_a, "task A"), (result_b, "task B")):
        stored = stored_messages(home, result["sessionId"])
        assert [m["role"] for m in stored] == ["user", "assistant", "tool_result", "assistant"]
        assert stored[0]["content"][0]["text"] == prompt and violations(stored) == []


async def test_two_servers_on_one_session_the_second_is_busy(model, workspace, home):
    model.set_script([BASH_TURN, {"steps": [{"text": "A done."}]}, {"steps": [{"text": "B done."}]}])
    first = second = None
    try:
        first = await _start(workspace, home, model, approval="ask")
        second = await _start(workspace, home, model, approval="auto")
        first.approvals.block = asyncio.Event()
        pending = first.send_command("tunacode.request", {"prompt": "task A"})
        await first.wait_for(lambda: first.approvals.open == 1)
        session_id = first.events[0]["sessionId"]
        before = stored_messages(home, session_id)

        code, message = await refusal(second.command("tunacode.request", {"prompt": "me too", "sessionId": session_id}))
        assert code == SESSION_BUSY and "busy" in message
        code, message = await refusal(second.command("tunacode.session.delete", {"sessionId": session_id}))
        assert code == SESSION_BUSY, message
        got = await second.command("tunacode.session.get", {"sessionId": session_id})
        assert got["session"]["busy"] is True and got["messages"] == before
        assert stored_messages(home, session_id) == before

        first.approvals.block.set()
        result = await asyncio.wait_for(pending, 15)
        assert result["stopReason"] == "end_turn" and result["text"] == "A done."
        again = await second.command("tunacode.request", {"prompt": "now me", "sessionId": session_id})
        assert again["stopReason"] == "end_turn" and again["text"] == "B done."
    finally:
        for harness in (first, second):
            if harness is not None:
                await harness.stop()

    stored = stored_messages(home, session_id)
    assert [m["role"] for m in stored] == ["user", "assistant", "tool_result", "assistant", "user", "assistant"]
    assert violations(stored) == [] and integrity(home) == "ok"
    assert len(paired_call_ids(model.requests[-1]["messages"])) == 1
