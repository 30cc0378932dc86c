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


# ---------------------------------------------------------------- headers and keys, an attacker's view


async def _refused_before_any_call(lsp, model, init_options, env) -> str:
    model.set_script([{"text": "hi"}])
    await lsp.start(init_options=init_options, env=env)
    with pytest.raises(Exception) as caught:
        await lsp.command("tunacode.request", {"prompt": "hi"})
    assert getattr(caught.value, "code", None) == -32003, caught.value
    assert model.requests == [] and model.headers_seen == []
    return str(caught.value)


async def test_a_header_line_cannot_be_smuggled_through_the_environment(lsp, model):
    env = {"OPENAI_COMPATIBLE_API_KEY": "k", "TUNACODE_HEADERS": '{"X-Team": "a\\r\\nX-Injected: 1"}'}
    options = {"model": "openai-compatible:scripted", "baseUrl": model.chat_url}
    message = await _refused_before_any_call(lsp, model, options, env)
    assert "X-Team" in message and "one line" in message


async def test_a_setting_cannot_set_the_host_or_the_framing_headers(lsp, model):
    """Bug: `headers: {"Host": ...}` (or Content-Length, Transfer-Encoding) went out as given,
    so a consented settings file could make a provider's front end route or frame the call
    differently from how it was sent."""

    for name in ("Host", "Content-Length", "transfer-encoding"):
        options = {"model": "openai-compatible:scripted", "baseUrl": model.chat_url, "headers": {name: "evil.example"}}
        message = await _refused_before_any_call(lsp, model, options, {})
        assert name in message and "set by the HTTP client" in message
        await lsp.stop()


async def test_a_header_name_that_is_not_a_token_is_a_clear_error(lsp, model):
    """Bug: a name with a space or a colon reached the HTTP client, which failed the call
    mid-request with its own protocol error (retried, then 'model request failed')."""

    options = {"model": "openai-compatible:scripted", "baseUrl": model.chat_url, "headers": {"X Team: a": "b"}}
    message = await _refused_before_any_call(lsp, model, options, {})
    assert "not a valid HTTP header name" in message


async def test_a_settings_base_url_never_receives_the_gemini_key(lsp, model):
    options = {"model": "gemini:gemini-2.5-pro", "baseUrl": model.base_url}
    message = await _refused_before_any_call(lsp, model, options, {"GEMINI_API_KEY": "AIza-real-secret"})
    assert "GOOGLE_GEMINI_BASE_URL" in message
