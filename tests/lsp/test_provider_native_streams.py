"""Recorded Anthropic, OpenAI Responses and Azure OpenAI streams replayed byte for byte through the real
server and the vendors' SDKs (tests/fixtures/provider_streams, sources in its README)."""

from __future__ import annotations

import json
from pathlib import Path

FIXTURES = Path(__file__).parent.parent / "fixtures" / "provider_streams"


def replay(name: str, *, keep: int | None = None) -> dict:
    """One JSON event a line, framed as the vendors send them: `event: <type>` and `data:`."""

    lines = [line for line in (FIXTURES / name).read_text().splitlines() if line.strip()]
    if keep is not None:
        lines = lines[:keep]
    return {"replay": "".join(f"event: {json.loads(line)['type']}\ndata: {line}\n\n" for line in lines)}


def anthropic_env(model) -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": "sk-ant-x", "ANTHROPIC_BASE_URL": model.base_url.removesuffix("/v1")}


def openai_env(model) -> dict[str, str]:
    return {"OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": model.base_url}


async def test_anthropic_thinking_with_its_signature_goes_back(lsp, model):
    model.set_script([replay("anthropic-reasoning.chunks.txt"), {"text": "again"}])
    await lsp.start(init_options={"model": "anthropic:claude-sonnet-5", "approval": "auto"}, env=anthropic_env(model))
    first = await lsp.command("tunacode.request", {"prompt": "gcd(1071, 462)?"})
    assert first["stopReason"] == "end_turn" and "**21**" in first["text"]
    assert first["usage"]["inputTokens"] == 47 and first["usage"]["outputTokens"] == 373
    thinking = [e for e in lsp.events_of(first["requestId"]) if e["type"] == "thinking_delta"]
    assert "".join(e["text"] for e in thinking).startswith("I'm working through the Euclidean algorithm")
    await lsp.command("tunacode.request", {"prompt": "thanks", "sessionId": first["sessionId"]})
    assistant = model.requests[1]["messages"][1]
    assert assistant["content"][0]["type"] == "thinking"
    assert assistant["content"][0]["signature"].startswith("EsECCokBCBAYAipA9i3HF1aHpQITkdN8")


async def test_anthropic_tool_call(lsp, model):
    model.set_script([replay("anthropic-tool-call.chunks.txt"), {"text": "ok"}])
    await lsp.start(init_options={"model": "anthropic:claude-haiku-4-5", "approval": "auto"}, env=anthropic_env(model))
    result = await lsp.command("tunacode.request", {"prompt": "weather?"})
    assert result["turns"] == 2
    tool_use = model.requests[1]["messages"][1]["content"][0]
    assert tool_use["type"] == "tool_use" and tool_use["id"] == "toolu_01KFbKqPYSuAKujiL6mTfzYA" and tool_use["name"] == "json"
    results = model.requests[1]["messages"][2]["content"]
    assert results[0]["type"] == "tool_result" and results[0]["tool_use_id"] == "toolu_01KFbKqPYSuAKujiL6mTfzYA"


async def test_anthropic_stream_cut_midway_is_an_error(lsp, model):
    model.set_script([replay("anthropic-reasoning.chunks.txt", keep=12)])
    await lsp.start(init_options={"model": "anthropic:claude-sonnet-5", "maxRetries": 0}, env=anthropic_env(model))
    result = await lsp.command("tunacode.request", {"prompt": "gcd?"})
    assert result["stopReason"] == "error" and "ended before the response was finished" in result["error"]["message"]


async def test_responses_encrypted_reasoning_and_function_call_output(lsp, model):
    model.set_script([replay("openai-responses-reasoning-tool-call.chunks.txt"), {"text": "190"}])
    await lsp.start(init_options={"model": "openai:gpt-5.1-codex-max", "approval": "auto"}, env=openai_env(model))
    result = await lsp.command("tunacode.request", {"prompt": "(12+7)*3*10"})
    assert result["turns"] == 2 and result["text"] == "190"
    items = model.requests[1]["input"]
    reasoning = next(i for i in items if i.get("type") == "reasoning")
    assert reasoning["id"] == "rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9"
    assert reasoning["encrypted_content"].startswith("gAAAAABpPDIVOKrsHNZ0Gwso")  # the done item's, unchanged
    output = next(i for i in items if i.get("type") == "function_call_output")
    assert output["call_id"] == "call_AB6AaRZ1FYZB2RwS6A5vbdqn"
    assert model.requests[0]["store"] is False and model.requests[0]["include"] == ["reasoning.encrypted_content"]


async def test_responses_error_event(lsp, model):
    model.set_script([replay("openai-responses-error.chunks.txt")])
    await lsp.start(init_options={"model": "openai:gpt-5-nano", "maxRetries": 0}, env=openai_env(model))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["stopReason"] == "error" and "quota" in result["error"]["message"]


def azure_env(model) -> dict[str, str]:
    return {
        "AZURE_OPENAI_API_KEY": "az-key",
        "AZURE_OPENAI_ENDPOINT": model.base_url.removesuffix("/v1"),
        "OPENAI_API_KEY": "sk-not-for-azure",
    }


async def test_azure_tool_call_then_text_from_recorded_streams(lsp, model):
    model.set_script([replay("azure-tool-call.chunks.txt"), replay("azure-text.chunks.txt")])
    await lsp.start(init_options={"model": "azure:my-deployment", "approval": "auto"}, env=azure_env(model))
    result = await lsp.command("tunacode.request", {"prompt": "weather in San Francisco?"})
    assert result["turns"] == 2 and result["text"] == "Hello"
    assert model.paths_seen == ["/openai/v1/responses"] * 2
    assert {h["authorization"] for h in model.headers_seen} == {"Bearer az-key"}
    assert model.requests[0]["model"] == "my-deployment"
    call = next(i for i in model.requests[1]["input"] if i.get("type") == "function_call")
    assert call["call_id"] == "call_H5DxLSFnsGhiROnUiDHmgyc8" and json.loads(call["arguments"]) == {"location": "San Francisco"}
    output = next(i for i in model.requests[1]["input"] if i.get("type") == "function_call_output")
    assert output["call_id"] == "call_H5DxLSFnsGhiROnUiDHmgyc8"
    assert result["usage"]["outputTokens"] == 24 + 11 and result["usage"]["inputTokens"] == 45 + 11


async def test_responses_stream_cut_midway_is_an_error(lsp, model):
    model.set_script([replay("openai-responses-reasoning-tool-call.chunks.txt", keep=20)])
    await lsp.start(init_options={"model": "openai:gpt-5.1-codex-max", "maxRetries": 0}, env=openai_env(model))
    result = await lsp.command("tunacode.request", {"prompt": "(12+7)*3*10"})
    assert result["stopReason"] == "error", result
    assert "ended before" in result["error"]["message"], result["error"]
