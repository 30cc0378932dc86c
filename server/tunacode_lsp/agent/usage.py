"""Usage normalisation and cost: tinyagent's usage dict -> protocol Usage.

Cost comes from the provider when it reports one (OpenRouter does), else from a small
price table of well-known models (USD per million tokens). A model with no known price
costs 0 (local models); docs/configuration.md says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tunacode_lsp.contract.protocol import Usage

# model id -> (input, cached input, output), USD per 1M tokens
PRICES: dict[str, tuple[float, float, float]] = {
    "gpt-4.1": (2.00, 0.50, 8.00),
    "gpt-4.1-mini": (0.40, 0.10, 1.60),
    "gpt-4.1-nano": (0.10, 0.025, 0.40),
    "gpt-4o": (2.50, 1.25, 10.00),
    "gpt-4o-mini": (0.15, 0.075, 0.60),
    "o3": (2.00, 0.50, 8.00),
    "o4-mini": (1.10, 0.275, 4.40),
    "gpt-5": (1.25, 0.125, 10.00),
    "gpt-5-mini": (0.25, 0.025, 2.00),
}


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def price_of(model_id: str) -> tuple[float, float, float] | None:
    return PRICES.get(model_id) or PRICES.get(model_id.rsplit("/", 1)[-1])


def normalize_usage(raw: Mapping[str, Any] | None, model_id: str = "") -> Usage:
    """tinyagent usage ({input, output, cache_read, cache_write, total_tokens, cost}) -> Usage."""

    if not raw:
        return Usage()
    input_tokens = _int(raw.get("input"))
    output_tokens = _int(raw.get("output"))
    cache_read = _int(raw.get("cache_read"))
    cache_write = _int(raw.get("cache_write"))
    total = _int(raw.get("total_tokens")) or input_tokens + output_tokens + cache_read + cache_write
    cost_raw = raw.get("cost")
    reported = cost_raw.get("total") if isinstance(cost_raw, Mapping) else cost_raw
    cost = float(reported) if isinstance(reported, int | float) and not isinstance(reported, bool) else 0.0
    if cost == 0.0 and (price := price_of(model_id)) is not None:
        per_input, per_cached, per_output = price
        cost = (input_tokens * per_input + cache_read * per_cached + output_tokens * per_output) / 1e6
    return Usage(input_tokens, output_tokens, cache_read, cache_write, total, round(cost, 10))
