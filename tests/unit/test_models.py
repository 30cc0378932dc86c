"""Model strings -> endpoint, key and tinyagent model; unusable models say what to set."""

from __future__ import annotations

import pytest

from tunacode_lsp.agent.models import (
    LOCAL_PLACEHOLDER_KEY,
    ModelNotUsable,
    default_model,
    list_models,
    normalize_chat_url,
    resolve_model,
    split_model_string,
)


def test_split_at_the_first_colon():
    assert split_model_string("openai:gpt-4.1") == ("openai", "gpt-4.1")
    assert split_model_string("openai-compatible:qwen2.5-coder:7b") == ("openai-compatible", "qwen2.5-coder:7b")
    assert split_model_string(" OpenRouter:moonshotai/kimi-k2.5") == ("openrouter", "moonshotai/kimi-k2.5")
    for bad in ("gpt-4.1", ":x", "openai:", ""):
        with pytest.raises(ModelNotUsable, match="provider:model_id"):
            split_model_string(bad)


def test_openai_needs_its_key():
    with pytest.raises(ModelNotUsable, match="OPENAI_API_KEY"):
        resolve_model("openai:gpt-4.1", env={})
    resolved = resolve_model("openai:gpt-4.1", env={"OPENAI_API_KEY": "sk-1"})
    assert resolved.api_key == "sk-1" and resolved.chat_url == "https://api.openai.com/v1"
    assert resolved.model.id == "gpt-4.1" and resolved.model.base_url == resolved.chat_url
    assert resolved.model.api == "openai-responses"
    chat = resolve_model("openai:gpt-4.1", env={"OPENAI_API_KEY": "sk-1"}, openai_api="chat")
    assert chat.model.api == "openai-completions" and chat.chat_url == "https://api.openai.com/v1/chat/completions"


def test_tunacode_api_key_beats_the_providers():
    resolved = resolve_model("openrouter:a/b", env={"OPENROUTER_API_KEY": "or", "TUNACODE_API_KEY": "tc"})
    assert resolved.api_key == "tc" and "openrouter.ai" in resolved.chat_url


def test_openai_compatible_needs_a_base_url_and_gets_a_placeholder_key():
    with pytest.raises(ModelNotUsable, match="baseUrl"):
        resolve_model("openai-compatible:qwen", env={})
    resolved = resolve_model("openai-compatible:qwen", base_url="http://127.0.0.1:11434/v1", env={})
    assert resolved.chat_url == "http://127.0.0.1:11434/v1/chat/completions"
    assert resolved.api_key == LOCAL_PLACEHOLDER_KEY


def test_a_remote_base_url_for_openai_still_needs_a_key_but_a_local_one_does_not():
    with pytest.raises(ModelNotUsable):
        resolve_model("openai:gpt-4.1", env={"TUNACODE_BASE_URL": "https://proxy.example/v1"})
    local = {"TUNACODE_BASE_URL": "http://localhost:8000/v1"}
    assert resolve_model("openai:gpt-4.1", base_url="http://localhost:8000/v1", env=local).api_key == LOCAL_PLACEHOLDER_KEY


def test_a_settings_base_url_never_gets_a_providers_key():
    env = {"OPENAI_API_KEY": "sk-real", "ANTHROPIC_API_KEY": "sk-ant"}
    for spec in ("openai:gpt-4.1", "openrouter:a/b", "anthropic:claude-sonnet-4-5", "gemini:gemini-2.5-pro"):
        with pytest.raises(ModelNotUsable, match="openai-compatible"):
            resolve_model(spec, base_url="https://attacker.example/v1", env=env)
    compatible = resolve_model("openai-compatible:x", base_url="https://attacker.example/v1", env=env)
    assert compatible.api_key == LOCAL_PLACEHOLDER_KEY  # never OPENAI_API_KEY
    env_base = resolve_model("openai:gpt-4.1", env={**env, "OPENAI_BASE_URL": "https://gw.example/v1"})
    assert (env_base.chat_url, env_base.api_key) == ("https://gw.example/v1", "sk-real")
    anthropic = resolve_model("anthropic:claude-sonnet-4-5", env={**env, "ANTHROPIC_BASE_URL": "https://gw.example"})
    assert (anthropic.chat_url, anthropic.api_key, anthropic.model.api) == ("https://gw.example", "sk-ant", "anthropic-messages")


def test_native_providers_name_their_variables():
    for spec, var in (
        ("anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("gemini:gemini-2.5-pro", "GEMINI_API_KEY"),
        ("azure:my-deployment", "AZURE_OPENAI_ENDPOINT"),
    ):
        with pytest.raises(ModelNotUsable, match=var):
            resolve_model(spec, env={})
    azure = resolve_model("azure:dep", env={"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com/", "AZURE_OPENAI_API_KEY": "k"})
    assert azure.chat_url == "https://r.openai.azure.com/openai/v1" and azure.model.api == "openai-responses"
    bedrock = resolve_model("bedrock:anthropic.claude-sonnet-4-5", env={})
    assert bedrock.model.api == "anthropic-messages" and bedrock.api_key == ""


def test_headers_from_the_environment_and_settings():
    env = {"OPENAI_API_KEY": "k", "TUNACODE_HEADERS": '{"X-Team": "a", "X-Env": "1"}'}
    model = resolve_model("openai:gpt-4.1", env=env, headers={"X-Team": "b"}).model
    assert model.headers == {"X-Team": "b", "X-Env": "1"}
    with pytest.raises(ModelNotUsable, match="TUNACODE_HEADERS"):
        resolve_model("openai:gpt-4.1", env={**env, "TUNACODE_HEADERS": "nope"})


def test_unknown_provider_lists_the_known_ones():
    with pytest.raises(ModelNotUsable, match="openrouter"):
        resolve_model("nosuch:claude", env={})


def test_chat_url_normalisation():
    assert normalize_chat_url("http://h:1/v1/") == "http://h:1/v1/chat/completions"
    assert normalize_chat_url("http://h:1/v1/chat/completions") == "http://h:1/v1/chat/completions"


def test_default_model_follows_the_key():
    assert default_model({}) == "openai:gpt-4.1"
    assert default_model({"OPENROUTER_API_KEY": "x"}).startswith("openrouter:")
    assert default_model({"OPENROUTER_API_KEY": "x", "OPENAI_API_KEY": "y"}) == "openai:gpt-4.1"
    assert default_model({"ANTHROPIC_API_KEY": "x", "OPENROUTER_API_KEY": "y"}).startswith("anthropic:")
    assert default_model({"GEMINI_API_KEY": "x"}).startswith("gemini:")
    models = list_models({"OPENAI_API_KEY": "y"})
    assert {m.configured for m in models if m.provider == "openai"} == {True}
    assert {m.configured for m in models if m.provider == "openrouter"} == {False}
