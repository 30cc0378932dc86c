"""The tinyagent Model every adapter receives: where to send the call and how.

One class for every wire API (`api` names it, see registry.py): the endpoint, the extra
HTTP headers, the timeouts, and the provider settings an adapter may read (thinking
budget, reasoning effort, text tool calls). It imports no SDK: adapters do, on first use.
"""

from __future__ import annotations

from tinyagent import Model


class ProviderModel(Model):
    """A model endpoint (extra fields allowed, like tinyagent's)."""

    provider: str = "openai-compatible"
    api: str = "openai-completions"
    base_url: str  # chat completions: the full URL; SDK adapters: the SDK's base URL ("" = the SDK's own)
    headers: dict[str, str] | None = None
    read_timeout: float = 120.0
    connect_timeout: float = 30.0
    max_tokens: int | None = None
    text_tool_calls: bool = True  # parse tool calls the model wrote as text (textToolCalls)
    thinking_budget: int = 0  # Anthropic extended thinking: budget_tokens (0 = off)
    reasoning_effort: str | None = None  # OpenAI Responses: reasoning.effort (None = the model's default)


OpenAICompatModel = ProviderModel  # the name the chat-completions streamer has always used
