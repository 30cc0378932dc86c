"""Queued requests (`tunacode.request {queue: true}`) over the real server: they wait their
turn, keep it through an abort of the running request, and are dropped (answered
`cancelled`) by their own cancel, their own abort or a shutdown."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types

from tests.conftest import scripted_options

STALL = {"steps": [{"text": "thinking it over"}, {"stall": 30}, {"text": "late"}]}


def _is(type_: str, **fields):
    return lambda e: e["type"] == type_ and all(e.get(k) == v for k, v in fields.items())


async def _running(lsp, model, *turns):
    """A request that stays in its model call until aborted; its first event."""

    model.set_script([STALL, *turns])
    await lsp.start(init_options=scripted_options(model))
    first = lsp.send_command("tunacode.request", {"prompt": "take your time"})
    delta = await lsp.wait_for_event(_is("text_delta"))
    return first, delta["sessionId"], delta["requestId"]


async def test_queued_request_keeps_its_place_through_an_abort_and_then_starts(lsp, model):
    first, session_id, first_id = await _running(lsp, model, {"text": "second answer"})
    queued = lsp.send_command("tunacode.request", {"prompt": "and then this", "sessionId": session_id, "queue": True})
    notice = await lsp.wait_for_event(_is("request_queued"))
    assert notice["sessionId"] == session_id and notice["position"] == 1 and notice["seq"] == 1
    queued_id = notice["requestId"]
    with pytest.raises(Exception) as busy:  # without queue: still the busy error
        await lsp.command("tunacode.request", {"prompt": "now!", "sessionId": session_id})
    assert getattr(busy.value, "code", None) == -32002
    active = {a["requestId"]: a for a in (await lsp.command("tunacode.status"))["activeRequests"]}
    assert active[queued_id].get("queued") is True and "queued" not in active[first_id]

    assert await lsp.command("tunacode.abort", {"sessionId": session_id}) == {"aborted": 1}
    assert (await asyncio.wait_for(first, 5))["stopReason"] == "cancelled"
    result = await asyncio.wait_for(queued, 10)
    assert result["requestId"] == queued_id and result["stopReason"] == "end_turn" and result["text"] == "second answer"
    events = lsp.events_of(queued_id)
    assert [e["type"] for e in events][:2] == ["request_queued", "request_start"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    # the queued prompt came after the aborted one in the history the model saw
    contents = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "user"]
    assert "take your time" in contents[0] and "and then this" in contents[-1]


async def test_queued_request_dropped_by_its_own_cancel_or_abort(lsp, model):
    first, session_id, _ = await _running(lsp, model)
    client = lsp.client
    params = types.ExecuteCommandParams(
        command="tunacode.request", arguments=[{"prompt": "queued one", "sessionId": session_id, "queue": True}]
    )
    by_rpc = asyncio.ensure_future(client.protocol.send_request_async("workspace/executeCommand", params, msg_id="q-1"))
    by_abort = lsp.send_command("tunacode.request", {"prompt": "queued two", "sessionId": session_id, "queue": True})
    await lsp.wait_for(lambda: sum(e["type"] == "request_queued" for e in lsp.events) == 2)
    one, two = [e for e in lsp.events if e["type"] == "request_queued"]
    assert {one["position"], two["position"]} == {1, 2}

    client.protocol.notify("$/cancelRequest", types.CancelParams(id="q-1"))
    with pytest.raises(Exception) as info:
        await asyncio.wait_for(by_rpc, 5)
    assert getattr(info.value, "code", None) == -32800
    queued_ids = {one["requestId"], two["requestId"]}
    remaining = [a["requestId"] for a in (await lsp.command("tunacode.status"))["activeRequests"] if a.get("queued")]
    assert len(remaining) == 1
    [abort_id] = remaining
    assert await lsp.command("tunacode.abort", {"requestId": abort_id}) == {"aborted": 1}
    result = await asyncio.wait_for(by_abort, 5)
    assert result["stopReason"] == "cancelled" and result["requestId"] == abort_id and result["turns"] == 0
    for request_id in queued_ids:  # each: queued, then its end; never started, nothing stored
        assert [(e["type"], e.get("stopReason")) for e in lsp.events_of(request_id)] == [
            ("request_queued", None), ("request_end", "cancelled"),
        ]
    assert not first.done()  # the running request never noticed
    assert len(model.requests) == 1
    await lsp.command("tunacode.abort", {"sessionId": session_id})
    assert (await asyncio.wait_for(first, 5))["stopReason"] == "cancelled"
    session = await lsp.command("tunacode.session.get", {"sessionId": session_id})
    assert [m for m in session["messages"] if m["role"] == "user" and "queued" in str(m["content"])] == []


async def test_shutdown_answers_every_queued_request(lsp, model):
    first, session_id, _ = await _running(lsp, model)
    queued = [
        lsp.send_command("tunacode.request", {"prompt": f"queued {n}", "sessionId": session_id, "queue": True})
        for n in range(3)
    ]
    await lsp.wait_for(lambda: sum(e["type"] == "request_queued" for e in lsp.events) == 3)
    await asyncio.wait_for(lsp.stop(), 10)
    assert first.done() and first.result()["stopReason"] == "cancelled"
    assert all(q.done() and q.result()["stopReason"] == "cancelled" for q in queued)
    assert len(model.requests) == 1  # no queued request started during the shutdown


@pytest.mark.parametrize("how", ["exit", "SIGTERM", "stdin closed"])
async def test_the_end_of_the_server_answers_queued_requests(home, workspace, model, how):
    import signal

    from tests.lsp.raw_wire_client import RawClient

    model.set_script([STALL])
    client = await RawClient.start(home, workspace)
    try:
        await client.initialize(workspace, scripted_options(model))
        running = client.request("workspace/executeCommand", {"command": "tunacode.request", "arguments": [{"prompt": "go"}]})
        delta = await client.wait_for(lambda m: m.get("method") == "tunacode/event" and m["params"]["type"] == "text_delta")
        session_id = delta["params"]["sessionId"]
        queued = [
            client.request("workspace/executeCommand", {
                "command": "tunacode.request", "arguments": [{"prompt": f"q{n}", "sessionId": session_id, "queue": True}],
            })
            for n in range(2)
        ]
        await client.wait_for(lambda m: sum(
            x.get("method") == "tunacode/event" and x["params"]["type"] == "request_queued" for x in client.messages
        ) == 2)
        if how == "exit":
            client.notify("exit")
        elif how == "SIGTERM":
            client.process.send_signal(signal.SIGTERM)
        else:
            assert client.process.stdin is not None
            client.process.stdin.close()
        for msg_id in queued:
            answer = await client.response(msg_id, 5)
            assert answer.get("error", {}).get("code") == -32800 or answer["result"]["stopReason"] == "cancelled"
        if how != "exit":  # exit is immediate; the others answer the running request too
            assert (await client.response(running, 5))["result"]["stopReason"] == "cancelled"
        await client.exit_code(5)
    finally:
        await client.close()
