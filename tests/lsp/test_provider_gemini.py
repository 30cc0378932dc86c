"""Gemini on its own API (`streamGenerateContent?alt=sse`) through the real server, answered by
recorded Gemini 3 streams on 127.0.0.1 (tests/fixtures/provider_streams, sources in its README):
a function call signed with a thought signature that goes back with the call on the next
request, a signed text answer whose signature goes back too, usage with thoughts, abort
mid-stream, an HTTP error."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lsp.provider_replay import ReplayServer, Reply

FIXTURES = Path(__file__).parent.parent / "fixtures" / "provider_streams"
SSE = "text/event-stream"
MODEL = "gemini:gemini-3-pro-preview"


def _is(type_: str, **fields):
    return lambda e: e["type"] == type_ and all(e.get(k) == v for k, v in fields.items())


def chunks(name: str) -> list[str]:
    return [line for line in (FIXTURES / name).read_text().splitlines() if line.strip()]


def sse(lines: list[str]) -> bytes:
    """One recorded GenerateContentResponse a line, framed as the endpoint sends them."""

    return "".join(f"data: {line}\r\n\r\n" for line in lines).encode()


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    with ReplayServer() as server:
        yield server


def gemini_env(replay: ReplayServer) -> dict[str, str]:
    return {"GEMINI_API_KEY": "AIza-loopback-key", "GOOGLE_GEMINI_BASE_URL": f"{replay.base_url}/v1beta"}


async def test_gemini_function_call_signature_and_text_signature_go_back(lsp, replay):
    tool_call, answer = chunks("gemini-tool-call-gemini3.chunks.txt"), chunks("gemini-reasoning-gemini3.chunks.txt")
    call_signature = json.loads(tool_call[0])["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    text_signature = json.loads(answer[-1])["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    replay.replies += [Reply(sse(tool_call), SSE), Reply(sse(answer), SSE), Reply(sse(answer), SSE)]
    await lsp.start(init_options={"model": MODEL, "approval": "auto"}, env=gemini_env(replay))
    result = await lsp.command("tunacode.request", {"prompt": "weather in San Francisco?"})
    assert result["stopReason"] == "end_turn" and result["turns"] == 2, result
    assert result["text"] == 'There are **3** "r"s in strawberry.\n\nSt**r**awbe**rr**y'
    assert result["usage"]["inputTokens"] == 29 + 9 and result["usage"]["outputTokens"] == 15 + 804 + 23 + 302

    first, second = replay.requests[0], replay.requests[1]
    assert first.path == "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
    assert first.headers["x-goog-api-key"] == "AIza-loopback-key" and "authorization" not in first.headers
    assert {"name", "description", "parametersJsonSchema"} <= set(first.json()["tools"][0]["functionDeclarations"][0])
    user, model_turn, results = second.json()["contents"]
    assert user["role"] == "user" and model_turn["role"] == "model" and results["role"] == "user"
    assert model_turn["parts"] == [
        {"functionCall": {"name": "weather", "args": {"location": "San Francisco"}}, "thoughtSignature": call_signature}
    ]
    assert results["parts"][0]["functionResponse"]["name"] == "weather"

    await lsp.command("tunacode.request", {"prompt": "thanks", "sessionId": result["sessionId"]})
    last_answer = replay.requests[2].json()["contents"][3]
    assert last_answer["role"] == "model"
    assert last_answer["parts"][-1]["thoughtSignature"] == text_signature
    assert last_answer["parts"][-1]["text"].endswith("St**r**awbe**rr**y")


async def test_gemini_abort_mid_stream_closes_the_connection(lsp, replay):
    replay.replies.append(Reply(sse(chunks("gemini-reasoning-gemini3.chunks.txt")[:1]), SSE, stall=True))
    await lsp.start(init_options={"model": MODEL, "approval": "auto"}, env=gemini_env(replay))
    pending = lsp.send_command("tunacode.request", {"prompt": "r in strawberry?"})
    first = await lsp.wait_for_event(_is("text_delta"))
    started = time.monotonic()
    await lsp.command("tunacode.abort", {"requestId": first["requestId"]})
    result = await asyncio.wait_for(pending, 1.0)
    assert result["stopReason"] == "cancelled" and time.monotonic() - started < 1.0
    assert result["text"].startswith("There are **3**")
    assert await asyncio.to_thread(replay.wait_for_closed, 2.0), "the Gemini connection was not closed"


async def test_gemini_stream_cut_before_its_finish_is_an_error(lsp, replay):
    replay.replies.append(Reply(sse(chunks("gemini-reasoning-gemini3.chunks.txt")[:2]), SSE))
    await lsp.start(init_options={"model": MODEL, "maxRetries": 0}, env=gemini_env(replay))
    result = await lsp.command("tunacode.request", {"prompt": "r in strawberry?"})
    assert result["stopReason"] == "error" and "ended before the response was finished" in result["error"]["message"]


async def test_gemini_error_status(lsp, replay):
    body = {"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED"}}
    replay.replies.append(Reply(json.dumps(body).encode(), status=429))
    await lsp.start(init_options={"model": MODEL, "maxRetries": 0}, env=gemini_env(replay))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["stopReason"] == "error"
    assert "HTTP 429" in result["error"]["message"] and "Resource has been exhausted" in result["error"]["message"]


async def test_gemini_thoughts_and_a_signed_call_without_arguments(lsp, replay):
    lines = chunks("gemini-thought-no-args-call.chunks.txt")
    signature = json.loads(lines[1])["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    replay.replies += [Reply(sse(lines), SSE), Reply(sse(chunks("gemini-reasoning-gemini3.chunks.txt")), SSE)]
    await lsp.start(init_options={"model": "gemini:gemini-3-flash-preview", "approval": "auto"}, env=gemini_env(replay))
    result = await lsp.command("tunacode.request", {"prompt": "read the theme"})
    assert result["turns"] == 2 and result["stopReason"] == "end_turn"
    thinking = "".join(e["text"] for e in lsp.events_of(result["requestId"]) if e["type"] == "thinking_delta")
    assert thinking.startswith("**Processing User Requests**")
    model_turn = replay.requests[1].json()["contents"][1]
    assert model_turn["parts"] == [{"functionCall": {"name": "read_theme", "args": {}}, "thoughtSignature": signature}]
    assert result["usage"]["outputTokens"] == 58 + 183 + 23 + 302  # candidates and thoughts, both calls


async def test_gemini_usage_with_cached_content(lsp, replay):
    # the recorded answer, its last chunk carrying a live usage record that read 4 tokens from the cache
    answer = chunks("gemini-reasoning-gemini3.chunks.txt")
    usage = json.loads(chunks("gemini-usage-cached.chunks.txt")[0])["usageMetadata"]
    last = json.loads(answer[-1])
    last["usageMetadata"] = usage
    replay.replies.append(Reply(sse([*answer[:-1], json.dumps(last)]), SSE))
    await lsp.start(init_options={"model": MODEL}, env=gemini_env(replay))
    result = await lsp.command("tunacode.request", {"prompt": "r in strawberry?"})
    assert result["stopReason"] == "end_turn", result
    assert result["usage"]["cacheReadTokens"] == 4 and result["usage"]["inputTokens"] == 12 - 4
    assert result["usage"]["outputTokens"] == 71 + 89
