"""The model catalog over the real server: `tunacode.models.list` carries the catalog's facts,
a catalogued model's usage is priced from the catalog (cache reads and writes included) and its
window reaches `turn_end`, an unknown model says once what was assumed, and `modelCost` wins."""

from __future__ import annotations

from tunacode_lsp.agent.catalog import card_of

ANTHROPIC = "claude-sonnet-4-5"


def _anthropic_env(model) -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": "sk-ant-x", "ANTHROPIC_BASE_URL": model.base_url.removesuffix("/v1")}


async def test_models_list_carries_the_catalogs_facts(lsp, model):
    await lsp.start(env=_anthropic_env(model))
    listed = await lsp.command("tunacode.models.list", {})
    by_id = {m["id"]: m for m in listed["models"]}
    sonnet, card = by_id[f"anthropic:{ANTHROPIC}"], card_of("anthropic", ANTHROPIC)
    assert sonnet["configured"] is True
    assert (sonnet["contextWindow"], sonnet["maxOutput"]) == (card.context_window, card.max_output)
    assert sonnet["input"] == ["text", "image"] and sonnet["reasoning"] is True
    assert sonnet["cost"] == {"input": card.cost.input, "output": card.cost.output,
                              "cacheRead": card.cost.cache_read, "cacheWrite": card.cost.cache_write}


async def test_a_catalogued_models_usage_is_priced_from_the_catalog(lsp, model):
    model.set_script([{"steps": [{"text": "Hello."}, {"usage": {"prompt_tokens": 3_000, "completion_tokens": 200,
                                                                "cached_tokens": 1_000}}]}])
    await lsp.start(init_options={"model": f"anthropic:{ANTHROPIC}"}, env=_anthropic_env(model))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    usage, prices = result["usage"], card_of("anthropic", ANTHROPIC).cost
    assert usage["cacheReadTokens"] == 1_000 and usage["inputTokens"] == 2_000
    expected = (2_000 * prices.input + 200 * prices.output + 1_000 * prices.cache_read) / 1e6
    assert abs(usage["cost"] - expected) < 1e-9 and usage["cost"] > 0
    turn_end = [e for e in lsp.events if e["type"] == "turn_end"][-1]
    assert turn_end["contextWindow"] == card_of("anthropic", ANTHROPIC).context_window
    assert not [e for e in lsp.events if e["type"] == "notice" and "catalog" in e["message"]]


MILLION_EACH = {"steps": [{"text": "ok"}, {"usage": {"prompt_tokens": 1_000_000, "completion_tokens": 1_000_000}}]}


def _catalog_notices(lsp) -> list[str]:
    return [e["message"] for e in lsp.events if e["type"] == "notice" and "not in the model catalog" in e["message"]]


async def test_an_uncatalogued_model_of_a_catalogued_provider_says_what_was_assumed_once_per_session(lsp, model):
    model.set_script([MILLION_EACH, MILLION_EACH])
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": model.base_url}
    await lsp.start(init_options={"model": "openai:gpt-9-not-yet"}, env=env)
    first = await lsp.command("tunacode.request", {"prompt": "hi"})
    await lsp.command("tunacode.request", {"prompt": "again", "sessionId": first["sessionId"]})
    notices = _catalog_notices(lsp)
    assert len(notices) == 1 and "contextWindow" in notices[0] and "modelCost" in notices[0]
    assert first["usage"]["cost"] == 0.0


async def test_a_local_servers_model_gets_the_defaults_without_a_notice(lsp, model):
    model.set_script([MILLION_EACH])
    await lsp.start(init_options={"model": "openai-compatible:scripted", "baseUrl": model.chat_url})
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["usage"]["cost"] == 0.0 and _catalog_notices(lsp) == []
    assert [e for e in lsp.events if e["type"] == "turn_end"][-1]["contextWindow"] == 128_000


async def test_model_cost_and_context_window_settings_price_an_unknown_model(lsp, model):
    model.set_script([MILLION_EACH])
    await lsp.start(init_options={"model": "openai-compatible:scripted", "baseUrl": model.chat_url,
                                  "modelCost": {"input": 1.5, "output": 2.5}, "contextWindow": 32_768})
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert abs(result["usage"]["cost"] - 4.0) < 1e-9
    assert [e for e in lsp.events if e["type"] == "turn_end"][-1]["contextWindow"] == 32_768
    assert _catalog_notices(lsp) == []
