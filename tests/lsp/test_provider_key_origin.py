"""A key goes only where it belongs, over the real server: a loopback server records the
Authorization header of every model call."""

from __future__ import annotations

import pytest

SECRET = "sk-real-openai-secret-0123456789"


async def test_a_settings_base_url_never_receives_the_openai_key(lsp, model):
    """Bug: the server sent OPENAI_API_KEY to whatever the baseUrl setting said."""

    model.set_script([{"text": "hi"}])
    await lsp.start(init_options={"model": "openai:gpt-4.1", "baseUrl": model.chat_url}, env={"OPENAI_API_KEY": SECRET})
    with pytest.raises(Exception) as caught:
        await lsp.command("tunacode.request", {"prompt": "hi"})
    assert getattr(caught.value, "code", None) == -32003 and "openai-compatible" in str(caught.value)
    assert model.requests == [] and model.headers_seen == []


async def test_openai_compatible_with_a_settings_base_url_gets_only_its_own_key(lsp, model):
    model.set_script([{"text": "hi"}])
    await lsp.start(init_options={"model": "openai-compatible:scripted", "baseUrl": model.chat_url}, env={"OPENAI_API_KEY": SECRET})
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["stopReason"] == "end_turn"
    assert SECRET not in str(model.headers_seen)


async def test_a_base_url_from_the_environment_gets_the_key_and_the_headers(lsp, model):
    model.set_script([{"text": "hi"}])
    env = {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": model.base_url, "TUNACODE_HEADERS": '{"X-Gateway": "team-a"}'}
    await lsp.start(init_options={"model": "openai:gpt-4.1", "headers": {"X-User": "me"}}, env=env)
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["stopReason"] == "end_turn" and "input" in model.requests[0]  # Responses
    headers = model.headers_seen[0]
    assert headers["authorization"] == f"Bearer {SECRET}"
    assert (headers["x-gateway"], headers["x-user"]) == ("team-a", "me")


async def test_anthropic_through_the_server(lsp, model):
    model.set_script([{"steps": [{"thinking": "hm"}, {"text": "Hello from Claude."}]}])
    env = {"ANTHROPIC_API_KEY": "sk-ant-x", "ANTHROPIC_BASE_URL": model.base_url.removesuffix("/v1")}
    await lsp.start(init_options={"model": "anthropic:claude-sonnet-5-5", "thinkingBudget": 1024}, env=env)
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["stopReason"] == "end_turn" and result["text"] == "Hello from Claude."
    assert model.requests[0]["thinking"]["budget_tokens"] == 1024
