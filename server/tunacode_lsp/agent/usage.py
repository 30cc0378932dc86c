"""Usage normalisation and cost: tinyagent's usage dict -> protocol Usage.

Cost comes from the provider when it reports one (OpenRouter does), else from the model's
prices: the `modelCost` setting, else the catalog's (agent/catalog.py). A model with neither
costs 0 (local models); docs/configuration.md says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tunacode_lsp.agent.catalog import ModelCost
from tunacode_lsp.contract.protocol import Usage


def _amount(value: Any) -> float:
    """A count or price as reported, when it is one: finite and not negative (a provider or a
    gateway that reports -5 dollars, NaN or an integer no float holds must neither defeat
    `maxCost` nor end the request with an internal error), else 0."""

    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    try:
        number = float(value)
    except OverflowError:  # a 400-digit integer in the provider's JSON: no amount either
        return 0.0
    return number if math.isfinite(number) and number >= 0 else 0.0


def _int(value: Any) -> int:
    return int(_amount(value))


def normalize_usage(raw: Mapping[str, Any] | None, cost: ModelCost | None = None) -> Usage:
    """tinyagent usage ({input, output, cache_read, cache_write, total_tokens, cost}) -> Usage.
    `input` counts the input tokens that were not read from the cache."""

    if not raw:
        return Usage()
    input_tokens = _int(raw.get("input"))
    output_tokens = _int(raw.get("output"))
    cache_read = _int(raw.get("cache_read"))
    cache_write = _int(raw.get("cache_write"))
    total = _int(raw.get("total_tokens")) or input_tokens + output_tokens + cache_read + cache_write
    cost_raw = raw.get("cost")
    reported = cost_raw.get("total") if isinstance(cost_raw, Mapping) else cost_raw
    amount = _amount(reported)
    if amount == 0.0 and cost is not None:
        amount = cost.of(input_tokens, output_tokens, cache_read, cache_write)
    return Usage(input_tokens, output_tokens, cache_read, cache_write, total, round(amount, 10))
