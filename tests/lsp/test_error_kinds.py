"""The kind of a failed request's error (`ErrorInfo.kind`, agent/error_kinds.py), through the
real server and the scripted model answering HTTP errors: a client shows its buttons by it."""

from __future__ import annotations

import pytest

from tests.conftest import scripted_options

CASES = {
    401: ("auth", "Incorrect API key provided"),
    429: ("rate_limit", "slow down"),
    500: ("server", "upstream exploded"),
    400: ("context_length", "This model's maximum context length is 8192 tokens"),
}


@pytest.mark.parametrize("status", sorted(CASES))
async def test_a_provider_http_error_ends_the_request_with_its_kind(lsp, model, status):
    kind, message = CASES[status]
    model.set_script([{"error": {"status": status, "body": {"error": {"message": message}}}}])
    await lsp.start(init_options=scripted_options(model, maxRetries=0))

    result = await lsp.command("tunacode.request", {"prompt": "hello"})

    assert result["stopReason"] == "error", result
    assert result["error"]["kind"] == kind, result["error"]
    assert f"HTTP {status}" in result["error"]["message"]
    end = lsp.events_of(result["requestId"])[-1]
    assert end["type"] == "request_end" and end["error"] == result["error"]


async def test_a_model_that_cannot_be_reached_is_a_network_error(lsp, model):
    model.set_script([{"text": "never"}])
    options = scripted_options(model, maxRetries=0)
    options["baseUrl"] = "http://127.0.0.1:9/v1/chat/completions"  # the discard port: nothing listens
    await lsp.start(init_options=options)

    result = await lsp.command("tunacode.request", {"prompt": "hello"})

    assert result["stopReason"] == "error" and result["error"]["kind"] == "network", result["error"]


async def test_a_request_that_ends_well_has_no_error(lsp, model):
    model.set_script([{"text": "fine"}])
    await lsp.start(init_options=scripted_options(model))

    result = await lsp.command("tunacode.request", {"prompt": "hello"})

    assert result["stopReason"] == "end_turn" and "error" not in result




async def test_a_replayed_failed_request_keeps_its_kind(lsp, model):
    """Bug: a failed request replayed from its stored messages alone (its failed answer kept,
    no stored end: a session document without `request_ends`, a server that died first)
    ended with an error without a `kind`, so a client showed no Open Settings for a 401."""

    model.set_script([{"error": {"status": 401, "body": {"error": {"message": "Incorrect API key provided"}}}}])
    await lsp.start(init_options=scripted_options(model, maxRetries=0))
    result = await lsp.command("tunacode.request", {"prompt": "hello"})
    live = lsp.events_of(result["requestId"])[-1]
    assert live["error"]["kind"] == "auth", live
    document = await lsp.command("tunacode.session.export", {"sessionId": result["sessionId"]})
    document.pop("request_ends")  # optional on import: an older server's export has none
    key = "messages" if "messages" in document else "history"
    failed = {"role": "assistant", "content": [{"type": "text", "text": "Let me"}], "stop_reason": "error", "error_message": live["error"]["message"]}
    imported = await lsp.command("tunacode.session.import", {"document": dict(document, **{key: [*document[key], failed]})})

    got = await lsp.command("tunacode.session.get", {"sessionId": imported["sessionId"], "events": True})

    ends = [e for e in got["events"] if e["type"] == "request_end"]
    assert len(ends) == 1 and ends[0]["stopReason"] == "error", ends
    assert ends[0]["error"] == live["error"], ends
