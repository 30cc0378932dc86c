"""`tunacode.steer` over the real server: the text reaches the model at the running
request's next turn boundary, is stored there (a valid history that replays) and announced
as `user_message`; after the last turn it is refused (`accepted: false`)."""

from __future__ import annotations

import asyncio
import os

from tests.conftest import scripted_options
from tests.lsp.test_projection import assert_live_equals_replayed

STEER = "also add a test for the empty list"


def _is(type_: str, **fields):
    return lambda e: e["type"] == type_ and all(e.get(k) == v for k, v in fields.items())


def _open_gate(path) -> None:
    with open(path, "w") as gate:  # blocks until the command reads: the tool is running
        gate.write("go\n")


async def test_steer_reaches_the_next_turn_is_stored_and_replays(lsp, model, workspace):
    os.mkfifo(workspace / "gate")
    model.set_script([
        {"steps": [{"text": "Checking."}, {"tool_call": {"id": "call_gate", "name": "bash", "arguments": {"command": "cat gate"}}}]},
        {"text": "Done, with the empty-list test."},
        {"text": "It is in the history."},
    ])
    await lsp.start(init_options=scripted_options(model, shellSandbox="off"))
    session = await lsp.command("tunacode.session.new")
    pending = lsp.send_command("tunacode.request", {"prompt": "fix sum()", "sessionId": session["sessionId"]})
    await lsp.wait_for_event(_is("tool_call_update", status="in_progress"))
    assert await lsp.command("tunacode.steer", {"sessionId": session["sessionId"], "text": STEER}) == {"accepted": True}
    await asyncio.to_thread(_open_gate, workspace / "gate")
    result = await asyncio.wait_for(pending, 15)
    assert result["stopReason"] == "end_turn" and result["text"] == "Done, with the empty-list test."

    # the model's second call: the tool result, then the steer as a user message
    second = model.requests[1]["messages"]
    assert second[-2]["role"] == "tool" and second[-1]["role"] == "user" and STEER in str(second[-1]["content"])
    assert STEER not in str(model.requests[0]["messages"])
    # live: user_message after the tool's end and the first turn's end, before the second turn's text
    types = [e["type"] for e in lsp.events_of(result["requestId"])]
    at = types.index("user_message")
    assert types[at - 1] == "turn_end" and "text_delta" in types[at + 1 :] and types[-1] == "request_end"
    assert next(e for e in lsp.events if e["type"] == "user_message")["text"] == STEER
    # stored where the model saw it
    stored = (await lsp.command("tunacode.session.get", {"sessionId": session["sessionId"]}))["messages"]
    assert [m["role"] for m in stored] == ["user", "assistant", "tool_result", "user", "assistant"]
    assert stored[3]["content"][0]["text"] == STEER
    # and it replays: the next request's model input holds it at the same place
    again = await lsp.command("tunacode.request", {"prompt": "what did I ask?", "sessionId": session["sessionId"]})
    replay = [(m["role"], str(m.get("content"))) for m in model.requests[2]["messages"][1:]]
    assert [r for r, _ in replay] == ["user", "assistant", "tool", "user", "assistant", "user"]
    assert STEER in replay[3][1]
    # the server's projection of the session gives the events the client received, the steer included
    await assert_live_equals_replayed(lsp, session["sessionId"], [result["requestId"], again["requestId"]])


async def test_steer_after_the_last_turn_is_refused(lsp, model):
    model.set_script([{"text": "All done."}])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    answer = await lsp.command("tunacode.steer", {"sessionId": result["sessionId"], "text": "one more thing"})
    assert answer == {"accepted": False}
    assert await lsp.command("tunacode.steer", {"sessionId": "no-such-session", "text": "x"}) == {"accepted": False}
    stored = (await lsp.command("tunacode.session.get", {"sessionId": result["sessionId"]}))["messages"]
    assert "one more thing" not in str(stored) and len(model.requests) == 1


async def test_steer_during_the_last_turn_gets_one_more_turn(lsp, model):
    """A steer that arrives while the final answer streams is seen by one more model call."""

    model.set_script([
        {"steps": [{"text": "First "}, {"delay": 2.0}, {"text": "answer."}]},
        {"text": "Second answer, with the steer."},
    ])
    await lsp.start(init_options=scripted_options(model))
    pending = lsp.send_command("tunacode.request", {"prompt": "hi"})
    delta = await lsp.wait_for_event(_is("text_delta"))
    assert (await lsp.command("tunacode.steer", {"sessionId": delta["sessionId"], "text": "shorter"}))["accepted"]
    result = await asyncio.wait_for(pending, 15)
    assert result["text"] == "Second answer, with the steer." and result["turns"] == 2
    assert model.requests[1]["messages"][-1]["role"] == "user" and "shorter" in str(model.requests[1]["messages"][-1])
