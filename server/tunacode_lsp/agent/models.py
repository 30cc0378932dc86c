"""Model strings (`provider:model_id`) -> a usable model: endpoint, key, tinyagent Model.

A model that cannot be used raises ModelNotUsable with a message that says what to set;
the server turns it into JSON-RPC error -32003 before the request starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tunacode_lsp.agent.provider.text_tool_calls import writes_text_tool_calls
from tunacode_lsp.contract.protocol import ModelInfo
from tunacode_lsp.core.text import shown

if TYPE_CHECKING:
    from tunacode_lsp.agent.provider.openai_chat import OpenAICompatModel

DEFAULT_MODEL = "openai:gpt-4.1"
OPENROUTER_DEFAULT_MODEL = "openrouter:moonshotai/kimi-k2.5"


def default_model(env: Mapping[str, str] | None = None) -> str:
    """The model used when none is configured: the one whose key the user has."""

    env = os.environ if env is None else env
    if not env.get("OPENAI_API_KEY") and env.get("OPENROUTER_API_KEY"):
        return OPENROUTER_DEFAULT_MODEL
    return DEFAULT_MODEL
LOCAL_PLACEHOLDER_KEY = "sk-local-placeholder"

# model id (without the "vendor/" prefix OpenRouter uses) -> context window in tokens
CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
    "kimi-k2.5": 262_144,
    "claude-sonnet-4.5": 200_000,
    "qwen2.5-coder": 32_768,
}
DEFAULT_CONTEXT_WINDOW = 128_000


def context_window_of(model_id: str, configured: int = 0) -> int:
    """The `contextWindow` setting when given, else the known window of the model, else 128k."""

    if configured > 0:
        return configured
    known = CONTEXT_WINDOWS.get(model_id) or CONTEXT_WINDOWS.get(model_id.rsplit("/", 1)[-1].split(":", 1)[0])
    return known or DEFAULT_CONTEXT_WINDOW


@dataclass(frozen=True)
class Provider:
    name: str
    chat_url: str | None  # None: the user must give baseUrl
    key_env: str | None
    example_models: tuple[str, ...] = ()


PROVIDERS: dict[str, Provider] = {
    "openai": Provider(
        "openai",
        "https://api.openai.com/v1/chat/completions",
        "OPENAI_API_KEY",
        ("gpt-4.1", "gpt-4.1-mini", "gpt-4o", "o4-mini"),
    ),
    "openrouter": Provider(
        "openrouter",
        "https://openrouter.ai/api/v1/chat/completions",
        "OPENROUTER_API_KEY",
        ("moonshotai/kimi-k2.5", "anthropic/claude-sonnet-4.5", "openai/gpt-4.1"),
    ),
    "openai-compatible": Provider("openai-compatible", None, "OPENAI_COMPATIBLE_API_KEY"),
}


class ModelNotUsable(Exception):
    """The configured model cannot be used; the message says what to set."""


@dataclass(frozen=True)
class ResolvedModel:
    spec: str  # "provider:model_id" as given
    provider: str
    model_id: str
    chat_url: str
    api_key: str
    model: OpenAICompatModel


def split_model_string(spec: str) -> tuple[str, str]:
    """Split `provider:model_id` at the first colon (model ids may contain colons)."""

    provider, sep, model_id = spec.strip().partition(":")
    if not sep or not provider or not model_id:
        raise ModelNotUsable(
            f"model {shown(spec)} is not of the form provider:model_id "
            f"(e.g. openai:gpt-4.1, openrouter:moonshotai/kimi-k2.5, openai-compatible:qwen2.5-coder)"
        )
    return provider.lower(), model_id


def normalize_chat_url(url: str) -> str:
    """Accept a base URL (`.../v1`) as well as the full chat-completions URL."""

    url = url.strip().rstrip("/")
    if url.endswith("/chat/completions"):
        return url
    return url + "/chat/completions"


def _is_local(url: str) -> bool:
    host = url.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0].strip("[]")
    return host in {"localhost", "::1"} or host.startswith("127.")


def resolve_model(
    spec: str | None,
    *,
    base_url: str | None = None,
    read_timeout: float = 120.0,
    text_tool_calls: bool | str = "auto",
    env: Mapping[str, str] | None = None,
) -> ResolvedModel:
    env = os.environ if env is None else env
    spec = spec or default_model(env)
    provider_name, model_id = split_model_string(spec)
    provider = PROVIDERS.get(provider_name)
    if provider is None:
        known = ", ".join(PROVIDERS)
        raise ModelNotUsable(f"unknown provider {provider_name!r} in model {shown(spec)}; known providers: {known}")

    chat_url = base_url or provider.chat_url
    if chat_url is None:
        raise ModelNotUsable(
            f"model {shown(spec)} needs a base URL: set tunacode.baseUrl (or TUNACODE_BASE_URL), "
            "e.g. http://127.0.0.1:11434/v1 for Ollama"
        )
    chat_url = normalize_chat_url(chat_url)

    key = env.get("TUNACODE_API_KEY", "").strip() or (
        env.get(provider.key_env, "").strip() if provider.key_env else ""
    )
    if not key:
        if provider.chat_url is None or _is_local(chat_url):
            key = LOCAL_PLACEHOLDER_KEY  # tinyagent and most servers want some key
        else:
            raise ModelNotUsable(
                f"model {shown(spec)} needs an API key: set {provider.key_env} (or TUNACODE_API_KEY)"
            )

    from tunacode_lsp.agent.provider.openai_chat import OpenAICompatModel  # heavy (tinyagent, httpx): not at start-up

    model = OpenAICompatModel(
        provider=provider_name,
        id=model_id,
        api="openai-completions",
        base_url=chat_url,
        read_timeout=read_timeout,
        text_tool_calls=writes_text_tool_calls(text_tool_calls, provider_name, model_id),
    )
    return ResolvedModel(spec, provider_name, model_id, chat_url, key, model)


def list_models(env: Mapping[str, str] | None = None) -> list[ModelInfo]:
    """The known models with whether each is usable now (its key is set)."""

    env = os.environ if env is None else env
    out: list[ModelInfo] = []
    for provider in PROVIDERS.values():
        configured = bool(
            env.get("TUNACODE_API_KEY") or (provider.key_env and env.get(provider.key_env))
        )
        for model_id in provider.example_models:
            out.append(ModelInfo(f"{provider.name}:{model_id}", provider.name, configured))
    return out
