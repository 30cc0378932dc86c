"""Compaction cancelled while its summary call is connecting: the connection closes.

Two moments: the scripted model holds the response headers back (a stall before an error
answer), so the cancel lands while the HTTP client waits for them; and the headers come at
once, so the cancel races their arrival (the case that leaked, agent/provider/openai_chat.py
`_race`; tests/unit/test_provider_abort_race.py makes it deterministic).
"""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types

from tests.conftest import scripted_options
from tests.lsp.test_long_sessions import _session_with_turns

HEADERS_HELD = [{"steps": [{"stall": 60}, {"error": {"status": 500}}]}]  # no response headers for 60 s


async def test_cancel_while_the_summary_call_connects_closes_its_connection(lsp, model):
    client = await lsp.start(init_options=scripted_options(model, contextWindow=20_000, maxRetries=0))
    session_id = await _session_with_turns(lsp, model, 3)
    calls = len(model.requests)
    model.set_script(HEADERS_HELD)
    params = types.ExecuteCommandParams(command="tunacode.session.compact", arguments=[{"sessionId": session_id}])
    future = asyncio.ensure_future(client.protocol.send_request_async("workspace/executeCommand", params, msg_id="compact-c"))
    await asyncio.to_thread(model.wait_for_requests, calls + 1, 10.0)
    assert model.open_streams == 1  # the summary call waits for its headers
    client.protocol.notify("$/cancelRequest", types.CancelParams(id="compact-c"))
    with pytest.raises(Exception) as info:
        await asyncio.wait_for(future, 5.0)
    assert getattr(info.value, "code", None) == -32800
    assert await asyncio.to_thread(model.wait_for_closed, 5.0), "the summary call's connection is still open"
    document = await lsp.command("tunacode.session.export", {"sessionId": session_id})
    assert document["compaction"] is None


async def test_abort_while_the_summary_call_connects_closes_its_connection(lsp, model):
    await lsp.start(init_options=scripted_options(model, contextWindow=20_000, maxRetries=0))
    session_id = await _session_with_turns(lsp, model, 3)
    calls = len(model.requests)
    model.set_script(HEADERS_HELD)
    pending = lsp.send_command("tunacode.session.compact", {"sessionId": session_id})
    await asyncio.to_thread(model.wait_for_requests, calls + 1, 10.0)
    assert await lsp.command("tunacode.abort", {"sessionId": session_id}) == {"aborted": 1}
    with pytest.raises(Exception) as info:
        await asyncio.wait_for(pending, 5.0)
    assert getattr(info.value, "code", None) == -32800
    assert await asyncio.to_thread(model.wait_for_closed, 5.0), "the summary call's connection is still open"



async def test_cancel_as_the_summary_stream_starts_closes_its_connection_every_time(lsp, model):
    """The cancel races the summary call's response headers (sent at once here): before the
    fix, a response that arrived in the same loop turn as the abort was never closed, about
    one round in two; five rounds in a row must each close."""
    client = await lsp.start(init_options=scripted_options(model, contextWindow=20_000))
    session_id = await _session_with_turns(lsp, model, 3)
    for round_ in range(5):
        calls = len(model.requests)
        model.set_script([{"steps": [{"text": "partial"}, {"stall": 60}]}])
        params = types.ExecuteCommandParams(command="tunacode.session.compact", arguments=[{"sessionId": session_id}])
        msg_id = f"compact-r{round_}"
        future = asyncio.ensure_future(client.protocol.send_request_async("workspace/executeCommand", params, msg_id=msg_id))
        await asyncio.to_thread(model.wait_for_requests, calls + 1, 10.0)
        client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
        with pytest.raises(Exception) as info:
            await asyncio.wait_for(future, 5.0)
        assert getattr(info.value, "code", None) == -32800
        assert await asyncio.to_thread(model.wait_for_closed, 5.0), f"round {round_}: the summary connection is still open"
    document = await lsp.command("tunacode.session.export", {"sessionId": session_id})
    assert document["compaction"] is None
