"""One projection of history: `tunacode.session.get {events: true}` gives, for every stored
request, the events a client received live (protocol-v3 section 2), over the real server.

Allowed differences: the text and thinking deltas of one message merged into one event, and
timing fields (seq, durationMs)."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.conftest import scripted_options

TIMING = ("seq", "durationMs")


def _call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"tool_call": {"name": name, "arguments": arguments, "id": call_id}}


MIXED = {  # thinking and text, then a completed, a failed and a (to be) denied call
    "steps": [
        {"thinking": "Let me look around first."},
        {"text": "I will list, read and run.", "chunks": 4},
        _call("list_files", {}, "call_list"),
        _call("read_file", {"filepath": "missing.py"}, "call_read"),
        _call("bash", {"command": "touch ran"}, "call_bash"),
    ]
}
PLAN = {"steps": [_call("todo_write", {"todos": [{"content": "fix it", "status": "in_progress", "activeForm": "fixing it"}]}, "call_todo")]}
EDIT = {"steps": [_call("write_file", {"filepath": "notes.txt", "content": "a\nb\n"}, "call_write")]}
SLOW_BASH = {"steps": [_call("bash", {"command": "sleep 30"}, "call_sleep")]}
DONE = {"steps": [{"text": "Done.", "chunks": 2}]}


def comparable(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events as the contract compares them: timing fields out, adjacent deltas of one kind merged."""

    out: list[dict[str, Any]] = []
    for event in events:
        event = {k: v for k, v in event.items() if k not in TIMING}
        last = out[-1] if out else None
        if last is not None and event["type"] in ("text_delta", "thinking_delta") and last["type"] == event["type"]:
            last["text"] += event["text"]
            continue
        out.append(event)
    return out


async def replayed(lsp: Any, session_id: str) -> dict[str, list[dict[str, Any]]]:
    got = await lsp.command("tunacode.session.get", {"sessionId": session_id, "events": True})
    by_request: dict[str, list[dict[str, Any]]] = {}
    for event in got["events"]:
        assert event["sessionId"] == session_id
        by_request.setdefault(event["requestId"], []).append(event)
    return by_request


async def assert_live_equals_replayed(lsp: Any, session_id: str, request_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    stored = await replayed(lsp, session_id)
    assert list(stored) == request_ids
    for request_id in request_ids:
        if comparable(stored[request_id]) != comparable(lsp.events_of(request_id)):
            _print_difference(comparable(stored[request_id]), comparable(lsp.events_of(request_id)))
        assert comparable(stored[request_id]) == comparable(lsp.events_of(request_id)), request_id
    return stored


def finals(events: list[dict[str, Any]]) -> dict[str, tuple[str, str | None]]:
    return {
        e["toolCallId"]: (e["status"], e.get("reason"))
        for e in events
        if e["type"] == "tool_call_update" and e["status"] in ("completed", "failed", "cancelled")
    }


async def test_completed_failed_denied_and_aborted_calls_replay_as_they_ran(lsp, model, workspace):
    model.set_script([MIXED, DONE, PLAN, DONE, EDIT, DONE, SLOW_BASH, DONE])
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    lsp.approvals.answer = "Deny"
    first = await lsp.command("tunacode.request", {"prompt": "look around"})
    session_id = first["sessionId"]
    second = await lsp.command("tunacode.request", {"prompt": "plan", "sessionId": session_id})
    lsp.approvals.answer = "Allow"
    third = await lsp.command("tunacode.request", {"prompt": "write", "sessionId": session_id})
    pending = lsp.send_command("tunacode.request", {"prompt": "wait", "sessionId": session_id})
    running = await lsp.wait_for_event(lambda e: e.get("toolCallId") == "call_sleep" and e.get("status") == "in_progress")
    await lsp.command("tunacode.abort", {"requestId": running["requestId"]})
    fourth = await asyncio.wait_for(pending, 10)
    assert fourth["stopReason"] == "cancelled"

    ids = [first["requestId"], second["requestId"], third["requestId"], fourth["requestId"]]
    stored = await assert_live_equals_replayed(lsp, session_id, ids)

    assert finals(stored[ids[0]]) == {
        "call_list": ("completed", None), "call_read": ("failed", "error"), "call_bash": ("failed", "denied"),
    }
    assert finals(stored[ids[2]]) == {"call_write": ("completed", None)}
    assert finals(stored[ids[3]]) == {"call_sleep": ("cancelled", "aborted")}
    calls = {e["toolCallId"]: e for r in ids for e in stored[r] if e["type"] == "tool_call"}
    assert (calls["call_list"]["kind"], calls["call_list"]["title"]) == ("search", "List .")
    assert (calls["call_read"]["kind"], calls["call_read"]["title"]) == ("read", "Read missing.py")
    assert (calls["call_bash"]["kind"], calls["call_bash"]["title"]) == ("execute", "Run touch ran")
    assert (calls["call_write"]["kind"], calls["call_write"]["title"]) == ("edit", "Write notes.txt (+2)")
    assert [e["type"] for e in stored[ids[1]]].count("plan") == 1
    assert stored[ids[0]][0]["type"] == "request_start" and stored[ids[0]][-1]["type"] == "request_end"


async def test_a_call_refused_by_the_mode_replays_as_policy(lsp, model, workspace):
    model.set_script([EDIT, DONE])
    await lsp.start(init_options=scripted_options(model, approval="read-only"))
    result = await lsp.command("tunacode.request", {"prompt": "write"})
    stored = await assert_live_equals_replayed(lsp, result["sessionId"], [result["requestId"]])
    assert finals(stored[result["requestId"]]) == {"call_write": ("failed", "policy")}
    [update] = [e for e in stored[result["requestId"]] if e.get("status") == "failed"]
    assert update["denied"] is True


async def test_an_abort_while_waiting_for_approval_replays_as_aborted(lsp, model, workspace):
    model.set_script([EDIT, DONE])
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    lsp.approvals.block = asyncio.Event()  # the user never answers
    pending = lsp.send_command("tunacode.request", {"prompt": "write"})
    waiting = await lsp.wait_for_event(lambda e: e.get("status") == "awaiting_approval")
    await lsp.command("tunacode.abort", {"requestId": waiting["requestId"]})
    result = await asyncio.wait_for(pending, 10)
    stored = await assert_live_equals_replayed(lsp, result["sessionId"], [result["requestId"]])
    assert finals(stored[result["requestId"]]) == {"call_write": ("cancelled", "aborted")}
    lsp.approvals.block.set()


async def test_without_events_the_result_is_unchanged(lsp, model):
    model.set_script([DONE])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    got = await lsp.command("tunacode.session.get", {"sessionId": result["sessionId"]})
    assert "events" not in got


def _print_difference(a, b):  # pragma: no cover
    import json
    for x, y in zip(a, b):
        print(x["type"], x.get("toolCallId"), x.get("status"), "|", y["type"], y.get("toolCallId"), y.get("status"), "" if x == y else "  DIFF " + json.dumps(x)[80:300] + " VS " + json.dumps(y)[80:300])


async def test_a_fork_replays_the_requests_it_copied(lsp, model, workspace):
    model.set_script([EDIT, DONE])
    await lsp.start(init_options=scripted_options(model, approval="auto"))
    result = await lsp.command("tunacode.request", {"prompt": "write"})
    fork = await lsp.command("tunacode.session.fork", {"sessionId": result["sessionId"]})
    original = await replayed(lsp, result["sessionId"])
    forked = await replayed(lsp, fork["sessionId"])
    strip = lambda events: [{k: v for k, v in e.items() if k != "sessionId"} for e in events]  # noqa: E731
    assert strip(forked[result["requestId"]]) == strip(original[result["requestId"]])
    assert forked[result["requestId"]][-1]["type"] == "request_end"


async def test_an_exported_then_imported_session_replays_the_same_events(lsp, model, workspace):
    """Bug: the export left out the request_ends records, so an imported session replayed
    guessed ends (a cancelled request ended as end_turn, its usage lost)."""

    model.set_script([MIXED, DONE, SLOW_BASH, DONE])
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    lsp.approvals.answer = "Deny"
    first = await lsp.command("tunacode.request", {"prompt": "look around"})
    session_id = first["sessionId"]
    lsp.approvals.answer = "Allow"
    pending = lsp.send_command("tunacode.request", {"prompt": "wait", "sessionId": session_id})
    running = await lsp.wait_for_event(lambda e: e.get("toolCallId") == "call_sleep" and e.get("status") == "in_progress")
    await lsp.command("tunacode.abort", {"requestId": running["requestId"]})
    assert (await asyncio.wait_for(pending, 10))["stopReason"] == "cancelled"
    original = await lsp.command("tunacode.session.get", {"sessionId": session_id, "events": True})

    document = await lsp.command("tunacode.session.export", {"sessionId": session_id})
    assert document["request_ends"], document.keys()
    await lsp.command("tunacode.session.delete", {"sessionId": session_id})
    imported = await lsp.command("tunacode.session.import", {"document": document})
    copy = await lsp.command("tunacode.session.get", {"sessionId": imported["sessionId"], "events": True})

    def without_session(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in e.items() if k != "sessionId"} for e in events]

    assert without_session(copy["events"]) == without_session(original["events"])
