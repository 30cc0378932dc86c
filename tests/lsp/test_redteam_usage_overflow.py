"""Red team (v3): a provider or gateway reporting usage numbers too large for a float (JSON
allows a 400-digit integer; Python parses it as an int, and float() of it raises
OverflowError). The request must end with a clear outcome and `maxCost` must still hold."""

from __future__ import annotations

import json

import pytest

from tests.conftest import scripted_options

HUGE = "1" + "0" * 400  # an integer no float can hold
LIST = {"steps": [{"tool_call": {"name": "list_files", "arguments": {}}}]}
DONE = {"steps": [{"text": "Done."}]}


def _chunk(**fields: object) -> str:
    body = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", **fields}
    return f"data: {json.dumps(body)}\n\n"


def _listing_with_usage(usage: str) -> dict:
    call = {"index": 0, "id": "call_huge", "type": "function", "function": {"name": "list_files", "arguments": "{}"}}
    body = (
        _chunk(choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}}])
        + _chunk(choices=[{"index": 0, "delta": {"tool_calls": [call]}}])
        + _chunk(choices=[{"index": 0, "delta": {}, "finish_reason": "tool_calls"}])
        + _chunk(choices=[], usage="USAGE").replace('"USAGE"', usage)
        + "data: [DONE]\n\n"
    )
    return {"replay": body}


@pytest.mark.parametrize(("usage", "stop", "calls"), [
    # a cost no float holds is no reported cost: the call is priced from its tokens (cheap here)
    pytest.param('{"prompt_tokens": 10, "completion_tokens": 1, "cost": ' + HUGE + '}', "end_turn", 4, id="cost"),
    # a count held at the bound prices the call far over the cap: no second call
    pytest.param('{"prompt_tokens": ' + HUGE + ', "completion_tokens": 1}', "max_cost", 1, id="prompt-tokens"),
    pytest.param('{"prompt_tokens": 10, "completion_tokens": ' + HUGE + '}', "max_cost", 1, id="completion-tokens"),
])
async def test_usage_too_large_for_a_float_does_not_defeat_max_cost(lsp, model, usage, stop, calls):
    """Bug: the request ended `error` (OverflowError, then the store refused the >64-bit int)."""

    model.set_script([_listing_with_usage(usage), LIST, LIST, DONE, DONE])
    await lsp.start(init_options=scripted_options(model, modelCost={"input": 1.0, "output": 1.0}))
    result = await lsp.command("tunacode.request", {"prompt": "explore", "maxCost": 1.0})
    assert result["stopReason"] == stop, result
    assert len(model.requests) == calls
    # the server lives on and the session can go on
    again = await lsp.command("tunacode.request", {"prompt": "go on", "sessionId": result["sessionId"]})
    assert again["stopReason"] in ("end_turn", "max_cost"), again
