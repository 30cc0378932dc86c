"""One provider interface: a model's wire API -> the adapter that streams it.

Every adapter is a tinyagent StreamFn `(model, context, options) -> StreamResponse` over
the shared stream state machine (assembly.py); the retry layer (stream.py) wraps whichever
runs. `agent/models.py` maps a model string's provider prefix to a wire API; this module
maps the wire API to its adapter module, imported on first use (the SDKs are not loaded
at start-up: tests/unit/test_startup_imports.py).
"""

from __future__ import annotations

import importlib
from typing import Any

from tinyagent import Context, Model, SimpleStreamOptions

# wire API (ProviderModel.api) -> "module:function" of its adapter
ADAPTERS: dict[str, str] = {
    "openai-completions": "tunacode_lsp.agent.provider.openai_chat:stream_openai_chat",
    "anthropic-messages": "tunacode_lsp.agent.provider.anthropic_messages:stream_anthropic",
    "openai-responses": "tunacode_lsp.agent.provider.openai_responses:stream_openai_responses",
    "gemini-generate": "tunacode_lsp.agent.provider.gemini_generate:stream_gemini",
}


def adapter_for(api: str) -> Any:
    """The StreamFn of a wire API (its module imported now)."""

    target = ADAPTERS.get(api) or ADAPTERS["openai-completions"]
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


async def stream_model(model: Model, context: Context, options: SimpleStreamOptions) -> Any:
    """tinyagent StreamFn: stream one assistant message through the model's adapter."""

    return await adapter_for(model.api)(model, context, options)
