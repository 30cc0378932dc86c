"""Model strings (`provider:model_id`) -> a usable model: endpoint, key, tinyagent Model.

A model that cannot be used raises ModelNotUsable with a message that says what to set;
the server turns it into JSON-RPC error -32003 before the request starts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tunacode_lsp.agent.provider.text_tool_calls import writes_text_tool_calls
from tunacode_lsp.contract.protocol import ModelCostInfo, ModelInfo
from tunacode_lsp.core.text import shown

if TYPE_CHECKING:
    from tunacode_lsp.agent.catalog import ModelCard
    from tunacode_lsp.agent.provider.model import ProviderModel

DEFAULT_MODEL = "openai:gpt-4.1"
OPENROUTER_DEFAULT_MODEL = "openrouter:moonshotai/kimi-k2.5"


# (key variable, model) in order of preference: the default is the first whose key is set
DEFAULT_BY_KEY = (
    ("OPENAI_API_KEY", DEFAULT_MODEL),
    ("ANTHROPIC_API_KEY", "anthropic:claude-sonnet-4-6"),
    ("GEMINI_API_KEY", "gemini:gemini-2.5-pro"),
    ("OPENROUTER_API_KEY", OPENROUTER_DEFAULT_MODEL),
)


def default_model(env: Mapping[str, str] | None = None) -> str:
    """The model used when none is configured: the one whose key the user has."""

    env = os.environ if env is None else env
    return next((model for key, model in DEFAULT_BY_KEY if env.get(key)), DEFAULT_MODEL)
LOCAL_PLACEHOLDER_KEY = "sk-local-placeholder"

@dataclass(frozen=True)
class Provider:
    name: str
    api: str  # the wire API (provider/registry.py)
    url: str | None  # the provider's own endpoint; None: the user must give one
    key_env: str | None  # None: the SDK finds credentials itself (AWS, Google)
    base_url_env: str | None = None  # the user's environment may point the provider elsewhere
    example_models: tuple[str, ...] = ()
    extra: str | None = None  # the pip extra its SDK client needs (bedrock, vertex)


PROVIDERS: dict[str, Provider] = {
    "openai": Provider(
        "openai",
        "openai-responses",
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        ("gpt-4.1", "gpt-4.1-mini", "gpt-4o", "o4-mini"),
    ),
    "anthropic": Provider(
        "anthropic",
        "anthropic-messages",
        "https://api.anthropic.com",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        ("claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5"),
    ),
    "bedrock": Provider("bedrock", "anthropic-messages", None, None, extra="bedrock"),
    "vertex": Provider("vertex", "anthropic-messages", None, None, extra="vertex"),
    "azure": Provider("azure", "openai-responses", None, "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT"),
    "gemini": Provider(
        "gemini",
        "gemini-generate",
        "https://generativelanguage.googleapis.com/v1beta",
        "GEMINI_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",  # google-genai's own variable (a gateway, a regional endpoint)
        ("gemini-2.5-pro", "gemini-2.5-flash"),
    ),
    "openrouter": Provider(
        "openrouter",
        "openai-completions",
        "https://openrouter.ai/api/v1/chat/completions",
        "OPENROUTER_API_KEY",
        None,
        ("moonshotai/kimi-k2.5", "anthropic/claude-sonnet-4.5", "openai/gpt-4.1"),
    ),
    "openai-compatible": Provider("openai-compatible", "openai-completions", None, "OPENAI_COMPATIBLE_API_KEY"),
}
# Providers that take TUNACODE_API_KEY and TUNACODE_BASE_URL (OpenAI-compatible servers).
TUNACODE_ENV_PROVIDERS = frozenset({"openai-compatible", "openai", "openrouter"})


class ModelNotUsable(Exception):
    """The configured model cannot be used; the message says what to set."""


@dataclass(frozen=True)
class ResolvedModel:
    spec: str  # "provider:model_id" as given
    provider: str
    model_id: str
    chat_url: str  # the endpoint the calls go to (chat completions: the full URL; SDKs: their base URL)
    api_key: str
    model: ProviderModel


def split_model_string(spec: str) -> tuple[str, str]:
    """Split `provider:model_id` at the first colon (model ids may contain colons)."""

    provider, sep, model_id = spec.strip().partition(":")
    if not sep or not provider or not model_id:
        raise ModelNotUsable(
            f"model {shown(spec)} is not of the form provider:model_id "
            f"(e.g. openai:gpt-4.1, anthropic:claude-sonnet-5-5, openai-compatible:qwen2.5-coder)"
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


def parse_headers(raw: object) -> dict[str, str]:
    """HTTP headers from a `headers` setting or TUNACODE_HEADERS (a JSON object of strings)."""

    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise ModelNotUsable("TUNACODE_HEADERS is not a JSON object of strings") from None
    if not isinstance(raw, Mapping):
        raise ModelNotUsable("headers must be an object of header names to string values (one line each)")
    from tunacode_lsp.agent.provider.headers import BadHeaders, checked_headers

    try:
        return checked_headers(raw)
    except BadHeaders as exc:
        raise ModelNotUsable(str(exc)) from None


def provider_settings(options: Any) -> dict[str, Any]:
    """The provider settings of ServerOptions as resolve_model's keyword arguments."""

    return {
        "headers": options.headers,
        "openai_api": options.openai_api,
        "thinking_budget": options.thinking_budget,
        "reasoning_effort": options.reasoning_effort,
    }


def resolve_model(
    spec: str | None,
    *,
    base_url: str | None = None,
    read_timeout: float = 120.0,
    text_tool_calls: bool | str = "auto",
    env: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    openai_api: str = "responses",
    thinking_budget: int = 0,
    reasoning_effort: str | None = None,
) -> ResolvedModel:
    """A model string -> where its calls go, with which key (ModelNotUsable says what to set).

    Key origin (docs/configuration.md, "Keys and endpoints"): a provider's key goes only to
    the provider's own endpoint or to a base URL from the user's environment. `base_url`
    is the `baseUrl` setting; unless it equals TUNACODE_BASE_URL (the environment's), it may
    come from a workspace, so it is used only with `openai-compatible:` and that provider's
    own key (TUNACODE_API_KEY), never with another provider's.
    """

    env = os.environ if env is None else env
    spec = spec or default_model(env)
    provider_name, model_id = split_model_string(spec)
    provider = PROVIDERS.get(provider_name)
    if provider is None:
        known = ", ".join(PROVIDERS)
        raise ModelNotUsable(f"unknown provider {provider_name!r} in model {shown(spec)}; known providers: {known}")

    env_base = env.get("TUNACODE_BASE_URL", "").strip()
    base_url = (base_url or "").strip() or None
    from_settings = base_url is not None and base_url != env_base
    if from_settings and provider_name != "openai-compatible":
        where = f"set {provider.base_url_env} in your environment" if provider.base_url_env else "it has no base URL"
        raise ModelNotUsable(
            f"model {shown(spec)}: the baseUrl setting is used only with openai-compatible: models "
            f"(and TUNACODE_API_KEY), so that no provider's key goes to an address a workspace chose; "
            f"use openai-compatible:{model_id}, or to point {provider_name}: elsewhere {where}"
        )

    api = provider.api
    if provider_name == "openai" and openai_api == "chat":
        api = "openai-completions"
    url: str | None
    if provider_name in TUNACODE_ENV_PROVIDERS and (base_url or env_base):
        url = base_url or env_base
        if provider_name == "openai":
            api = "openai-completions"  # TUNACODE_BASE_URL names an OpenAI-compatible server
    elif provider.base_url_env and env.get(provider.base_url_env, "").strip():
        url = env[provider.base_url_env].strip()
    else:
        url = provider.url
    if provider_name == "azure" and url:
        url = url.rstrip("/") + "/openai/v1"  # Azure's v1 API: the OpenAI SDK as is
    if url is None and provider.extra is None:
        if provider_name == "azure":
            raise ModelNotUsable(f"model {shown(spec)} needs AZURE_OPENAI_ENDPOINT (https://<resource>.openai.azure.com)")
        raise ModelNotUsable(
            f"model {shown(spec)} needs a base URL: set tunacode.baseUrl (or TUNACODE_BASE_URL), "
            "e.g. http://127.0.0.1:11434/v1 for Ollama"
        )
    if api == "openai-completions" and url is not None:
        url = normalize_chat_url(url)

    if provider_name in TUNACODE_ENV_PROVIDERS:
        key = env.get("TUNACODE_API_KEY", "").strip() or (
            env.get(provider.key_env, "").strip() if provider.key_env else ""
        )
    else:
        key = env.get(provider.key_env, "").strip() if provider.key_env else ""
    if not key and provider.key_env is not None:
        if provider.url is None and provider_name != "azure" or (url is not None and _is_local(url)):
            key = LOCAL_PLACEHOLDER_KEY  # tinyagent and most servers want some key
        else:
            extra = " (or TUNACODE_API_KEY)" if provider_name in TUNACODE_ENV_PROVIDERS else ""
            raise ModelNotUsable(f"model {shown(spec)} needs an API key: set {provider.key_env}{extra}")

    merged_headers = dict(parse_headers(env["TUNACODE_HEADERS"])) if env.get("TUNACODE_HEADERS", "").strip() else {}
    merged_headers.update(parse_headers(headers) if headers else {})

    from tunacode_lsp.agent.provider.model import ProviderModel  # heavy (tinyagent): not at start-up

    model = ProviderModel(
        provider=provider_name,
        id=model_id,
        api=api,
        base_url=url or "",
        read_timeout=read_timeout,
        text_tool_calls=writes_text_tool_calls(text_tool_calls, provider_name, model_id),
        headers=merged_headers or None,
        thinking_budget=thinking_budget,
        reasoning_effort=reasoning_effort,
    )
    return ResolvedModel(spec, provider_name, model_id, url or "", key, model)


# Providers whose credentials the SDK finds itself: a sign in the environment that they are set.
CREDENTIAL_HINTS: dict[str, tuple[str, ...]] = {
    "bedrock": ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK", "AWS_WEB_IDENTITY_TOKEN_FILE"),
    "vertex": ("GOOGLE_APPLICATION_CREDENTIALS", "ANTHROPIC_VERTEX_PROJECT_ID"),
}


def provider_configured(provider: Provider, env: Mapping[str, str]) -> bool:
    if provider.key_env is None:
        return any(env.get(name) for name in CREDENTIAL_HINTS.get(provider.name, ()))
    if provider.name == "azure" and not env.get("AZURE_OPENAI_ENDPOINT"):
        return False
    tunacode_key = provider.name in TUNACODE_ENV_PROVIDERS and env.get("TUNACODE_API_KEY")
    return bool(tunacode_key or env.get(provider.key_env))


def list_models(env: Mapping[str, str] | None = None) -> list[ModelInfo]:
    """The models of each provider with whether each is usable now (its key is set): every
    catalogued model that calls tools for a configured provider, the examples for the others,
    each with the catalog's facts. Blocks on the catalog's first use: call it in a thread."""

    from tunacode_lsp.agent.catalog import card_of, cards_of

    env = os.environ if env is None else env
    out: list[ModelInfo] = []
    for provider in PROVIDERS.values():
        configured = provider_configured(provider, env)
        cards = cards_of(provider.name) if configured else []
        listed = [card.model_id for card in cards] or list(provider.example_models)
        for model_id in listed:
            out.append(model_info(provider.name, model_id, configured, card_of(provider.name, model_id)))
    return out


def model_info(provider: str, model_id: str, configured: bool, card: ModelCard | None) -> ModelInfo:
    if card is None:
        return ModelInfo(f"{provider}:{model_id}", provider, configured)
    cost = card.cost
    return ModelInfo(
        f"{provider}:{model_id}", provider, configured,
        context_window=card.context_window, max_output=card.max_output, input=list(card.input),
        reasoning=card.reasoning,
        cost=ModelCostInfo(cost.input, cost.output, cost.cache_read, cost.cache_write) if cost else None,
    )
