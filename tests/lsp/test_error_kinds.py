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
