"""Turn limits, timeouts, provider retry and empty responses, through the real server."""

from __future__ import annotations

from tests.conftest import scripted_options

LIST = {"steps": [{"tool_call": {"name": "list_files", "arguments": {}}}]}
DONE = {"steps": [{"text": "Done."}]}


async def test_max_turns_makes_exactly_that_many_model_calls(lsp, model):
    model.set_script([LIST, LIST, LIST, DONE])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "explore", "maxTurns": 2})
    assert result["stopReason"] == "max_turns"
    assert len(model.requests) == 2 and result["turns"] == 2
    assert all(c["status"] == "completed" for c in result["toolCalls"])
    notices = [e for e in lsp.events_of(result["requestId"]) if e["type"] == "notice"]
    assert any("2 model turns" in n["message"] for n in notices)
    # the session goes on: every call of the stopped request is answered in the history
    result = await lsp.command("tunacode.request", {"prompt": "go on", "sessionId": result["sessionId"]})
    messages = model.requests[-1]["messages"]
    calls = [tc["id"] for m in messages if m["role"] == "assistant" for tc in m.get("tool_calls", [])]
    assert calls == [m["tool_call_id"] for m in messages if m["role"] == "tool"] and len(calls) == 3


async def test_max_turns_option_is_the_default(lsp, model):
    model.set_script([LIST, DONE])
    await lsp.start(init_options=scripted_options(model, maxTurns=1))
    result = await lsp.command("tunacode.request", {"prompt": "explore"})
    assert result["stopReason"] == "max_turns" and len(model.requests) == 1


async def test_request_timeout_ends_like_an_abort(lsp, model):
    model.set_script([{"steps": [{"text": "thinking about it", "chunks": 1}, {"stall": 30}, {"text": "never"}]}, DONE])
    await lsp.start(init_options=scripted_options(model, requestTimeout=1))
    result = await lsp.command("tunacode.request", {"prompt": "slow"})
    assert result["stopReason"] == "timeout"
    assert result["text"] == "thinking about it"
    events = lsp.events_of(result["requestId"])
    assert any(e["type"] == "notice" and "timed out" in e["message"] for e in events)
    assert model.wait_for_closed(2.0)
    result = await lsp.command("tunacode.request", {"prompt": "again", "sessionId": result["sessionId"]})
    assert result["stopReason"] == "end_turn"
    assistant = [m for m in model.requests[-1]["messages"] if m["role"] == "assistant"]
    assert assistant[-1]["content"].endswith("[INTERRUPTED]")


async def test_server_error_is_retried_with_a_notice(lsp, model):
    model.set_script([
        {"error": {"status": 500, "body": {"error": {"message": "upstream hiccup"}}, "headers": {"Retry-After": "0"}}},
        {"error": {"status": 503, "body": "overloaded", "headers": {"Retry-After": "0"}}},
        DONE,
    ])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["stopReason"] == "end_turn" and result["text"] == "Done."
    assert len(model.requests) == 3
    notices = [e["message"] for e in lsp.events_of(result["requestId"]) if e["type"] == "notice"]
    assert len(notices) == 2 and "upstream hiccup" in notices[0] and "retry 2 of 3" in notices[1]


async def test_retries_give_up_with_the_providers_message(lsp, model):
    busy = {"error": {"status": 429, "body": {"error": {"message": "rate limited"}}, "headers": {"Retry-After": "0"}}}
    model.set_script([busy] * 3 + [DONE])
    await lsp.start(init_options=scripted_options(model, maxRetries=2))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["stopReason"] == "error"
    assert "429" in result["error"]["message"] and "rate limited" in result["error"]["message"]
    assert len(model.requests) == 3
    end = lsp.events_of(result["requestId"])[-1]
    assert end["type"] == "request_end" and end["error"] == result["error"]
    result = await lsp.command("tunacode.request", {"prompt": "again", "sessionId": result["sessionId"]})
    assert result["stopReason"] == "end_turn"


async def test_client_errors_are_not_retried_and_context_length_is_explained(lsp, model):
    model.set_script([
        {"error": {"status": 400, "body": {"error": {"message": "This model's maximum context length is 8192 tokens"}}}},
        DONE,
    ])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["stopReason"] == "error" and len(model.requests) == 1
    message = result["error"]["message"]
    assert "context window" in message and "new session" in message and "fork" in message


async def test_connection_dropped_before_any_token_is_retried(lsp, model):
    model.set_script([{"steps": [{"drop": True}]}, DONE])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["stopReason"] == "end_turn" and len(model.requests) == 2


async def test_connection_dropped_mid_stream_is_an_error_with_the_text_kept(lsp, model):
    model.set_script([{"steps": [{"text": "partial answer", "chunks": 2}, {"drop": True}]}, DONE])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["stopReason"] == "error" and len(model.requests) == 1
    assert result["text"] == "partial answer"
    result = await lsp.command("tunacode.request", {"prompt": "again", "sessionId": result["sessionId"]})
    assert result["stopReason"] == "end_turn"
    roles = [m["role"] for m in model.requests[-1]["messages"][1:]]
    assert roles == ["user", "assistant", "user"]


async def test_empty_response_gets_one_nudge(lsp, model):
    model.set_script([{"steps": [{"text": ""}]}, DONE])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["stopReason"] == "end_turn" and result["text"] == "Done."
    assert len(model.requests) == 2
    assert "empty" in model.requests[1]["messages"][-1]["content"]


async def test_two_empty_responses_stop_with_a_notice(lsp, model):
    model.set_script([{"steps": [{"text": ""}]}, {"steps": [{"text": ""}]}, DONE])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert len(model.requests) == 2
    notices = [e["message"] for e in lsp.events_of(result["requestId"]) if e["type"] == "notice"]
    assert any("empty response" in n for n in notices)
    # nothing empty was stored: the next request sends one user turn, not a broken history
    await lsp.command("tunacode.request", {"prompt": "again", "sessionId": result["sessionId"]})
    roles = [m["role"] for m in model.requests[-1]["messages"][1:]]
    assert roles == ["user"]


def _priced_list(cost: float) -> dict:
    return {"steps": [{"tool_call": {"name": "list_files", "arguments": {}}}, {"usage": {"cost": cost}}]}


async def test_max_cost_stops_before_the_call_that_would_pass_it(lsp, model):
    """The server checks before each model call: spent + the last call's cost (the next resends
    at least its context) over the cap ends the request `max_cost`; no further call starts."""

    model.set_script([_priced_list(0.3), _priced_list(0.3), _priced_list(0.3), DONE])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "explore", "maxCost": 1.0})
    # after the 3rd call 0.9 is spent and a 4th (predicted 0.3) would pass 1.0; after the 2nd, 0.6 + 0.3 would not
    assert result["stopReason"] == "max_cost" and len(model.requests) == 3
    assert abs(result["usage"]["cost"] - 0.9) < 1e-9
    notices = [e["message"] for e in lsp.events_of(result["requestId"]) if e["type"] == "notice"]
    assert any("cost cap of $1 (maxCost)" in n for n in notices), notices
    # the session goes on: every call of the stopped request is answered in the history
    result = await lsp.command("tunacode.request", {"prompt": "go on", "sessionId": result["sessionId"], "maxCost": 5})
    assert result["stopReason"] == "end_turn"


async def test_max_cost_must_be_a_positive_amount(lsp, model):
    await lsp.start(init_options=scripted_options(model))
    for bad in (0, -1, "lots", 2_000_000, True):
        try:
            await lsp.command("tunacode.request", {"prompt": "x", "maxCost": bad})
        except Exception as exc:
            assert getattr(exc, "code", None) == -32602 and "params.maxCost" in str(exc), (bad, exc)
        else:
            raise AssertionError(bad)
    assert model.requests == []


async def test_a_negative_or_missing_cost_cannot_defeat_max_cost(lsp, model):
    """A provider or gateway that reports -100 dollars for a call (hostile or broken) counts 0."""

    model.set_script([_priced_list(-100), _priced_list(0.6), DONE])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "explore", "maxCost": 1.0})
    assert result["stopReason"] == "max_cost" and len(model.requests) == 2
    assert result["usage"]["cost"] == 0.6
