"""Claude on Bedrock and on Vertex through the real server and the `anthropic` SDK's own
clients (AnthropicBedrock, AnthropicVertex), answered by recorded streams on 127.0.0.1.

Bedrock: `POST /model/<id>/invoke-with-response-stream`, SigV4-signed with static fake keys,
answered in `application/vnd.amazon.eventstream` binary frames. Vertex: `POST .../models/<id>:streamRawPredict`
with a bearer token that google-auth mints from a fake service account whose `token_uri`
is the loopback server, answered in Anthropic's SSE. Sources of the
recordings: tests/fixtures/provider_streams/README.md.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lsp.provider_replay import (
    FAKE_ACCESS_TOKEN,
    ReplayServer,
    Reply,
    bedrock_chunk,
    eventstream_events,
    service_account_file,
)

pytest.importorskip("botocore")
pytest.importorskip("google.auth")

FIXTURES = Path(__file__).parent.parent / "fixtures" / "provider_streams"
EVENTSTREAM = "application/vnd.amazon.eventstream"
BEDROCK_MODEL = "anthropic.claude-sonnet-4-20250514-v1:0"
AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example keys: nothing real
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def _is(type_: str, **fields):
    return lambda e: e["type"] == type_ and all(e.get(k) == v for k, v in fields.items())


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    with ReplayServer() as server:
        yield server


def bedrock_env(replay: ReplayServer, home: Path) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": AWS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
        "AWS_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(home / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "no-aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "ANTHROPIC_BEDROCK_BASE_URL": replay.base_url,
    }


def vertex_env(replay: ReplayServer, home: Path) -> dict[str, str]:
    credentials = home / "service-account.json"
    service_account_file(credentials, f"{replay.base_url}/token")
    return {
        "GOOGLE_APPLICATION_CREDENTIALS": str(credentials),
        "ANTHROPIC_VERTEX_PROJECT_ID": "p1",
        "CLOUD_ML_REGION": "us-east5",
        "ANTHROPIC_VERTEX_BASE_URL": f"{replay.base_url}/v1",
        "GCE_METADATA_HOST": "127.0.0.1:9",  # never the metadata server, whatever happens
        "NO_GCE_CHECK": "True",
    }


def bedrock_recording() -> bytes:
    return (FIXTURES / "bedrock-text.eventstream").read_bytes()


def bedrock_framed(name: str) -> bytes:
    """A recorded Anthropic stream (one event's JSON a line) in Bedrock's frames."""

    lines = [line for line in (FIXTURES / name).read_text().splitlines() if line.strip()]
    return b"".join(bedrock_chunk(line) for line in lines)


def sse_framed(name: str) -> bytes:
    lines = [line for line in (FIXTURES / name).read_text().splitlines() if line.strip()]
    return "".join(f"event: {json.loads(line)['type']}\ndata: {line}\n\n" for line in lines).encode()


def vertex_recording(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


# ---------------------------------------------------------------- Bedrock


async def test_bedrock_text_and_usage_from_a_recorded_stream(lsp, replay, home):
    replay.replies.append(Reply(bedrock_recording(), EVENTSTREAM))
    env = bedrock_env(replay, home)
    await lsp.start(init_options={"model": f"bedrock:{BEDROCK_MODEL}", "approval": "auto"}, env=env)
    result = await lsp.command("tunacode.request", {"prompt": "what are cache tokens?"})
    assert result["stopReason"] == "end_turn", result
    assert result["text"].startswith("Hello! Cache tokens are a feature") and result["text"].endswith("platform?")
    assert result["usage"]["inputTokens"] == 17 and result["usage"]["outputTokens"] == 322
    [call] = replay.requests
    assert call.path == f"/model/{BEDROCK_MODEL}/invoke-with-response-stream"
    assert call.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={AWS_KEY_ID}/")
    assert "/us-east-1/bedrock/aws4_request" in call.headers["authorization"]
    assert "x-api-key" not in call.headers
    body = call.json()
    assert body["anthropic_version"] and "model" not in body and "stream" not in body  # the path says both
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


async def test_bedrock_tool_call_and_its_result_on_the_next_call(lsp, replay, home, workspace):
    (workspace / "notes.txt").write_text("hello\n")
    replay.replies += [Reply(bedrock_framed("anthropic-tool-call.chunks.txt"), EVENTSTREAM), Reply(bedrock_recording(), EVENTSTREAM)]
    await lsp.start(init_options={"model": f"bedrock:{BEDROCK_MODEL}", "approval": "auto"}, env=bedrock_env(replay, home))
    result = await lsp.command("tunacode.request", {"prompt": "weather?"})
    assert result["turns"] == 2 and result["stopReason"] == "end_turn"
    second = replay.requests[1].json()
    tool_use = second["messages"][1]["content"][0]
    assert tool_use["type"] == "tool_use" and tool_use["id"] == "toolu_01KFbKqPYSuAKujiL6mTfzYA"
    answer = second["messages"][2]["content"][0]
    assert answer["type"] == "tool_result" and answer["tool_use_id"] == "toolu_01KFbKqPYSuAKujiL6mTfzYA"


async def test_bedrock_abort_mid_stream_closes_the_connection(lsp, replay, home):
    first_frames = b"".join(eventstream_events(bedrock_recording())[:6])  # message_start .. a few deltas
    replay.replies.append(Reply(first_frames, EVENTSTREAM, stall=True))
    await lsp.start(init_options={"model": f"bedrock:{BEDROCK_MODEL}", "approval": "auto"}, env=bedrock_env(replay, home))
    pending = lsp.send_command("tunacode.request", {"prompt": "what are cache tokens?"})
    first = await lsp.wait_for_event(_is("text_delta"))
    started = time.monotonic()
    await lsp.command("tunacode.abort", {"requestId": first["requestId"]})
    result = await asyncio.wait_for(pending, 1.0)
    assert result["stopReason"] == "cancelled" and time.monotonic() - started < 1.0
    assert result["text"].startswith("Hello! Cache")
    assert await asyncio.to_thread(replay.wait_for_closed, 2.0), "the Bedrock connection was not closed"


async def test_bedrock_error_status_is_a_clear_error(lsp, replay, home):
    body = b'{"message":"Too many requests, please wait before trying again."}'
    amz = {"x-amzn-ErrorType": "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"}
    replay.replies.append(Reply(body, status=429, headers=amz))
    options = {"model": f"bedrock:{BEDROCK_MODEL}", "maxRetries": 0}
    await lsp.start(init_options=options, env=bedrock_env(replay, home))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["stopReason"] == "error"
    assert "HTTP 429" in result["error"]["message"] and "Too many requests" in result["error"]["message"]


async def test_bedrock_access_denied_names_the_credentials_to_check(lsp, replay, home):
    body = b'{"message":"The security token included in the request is invalid."}'
    replay.replies.append(Reply(body, status=403, headers={"x-amzn-ErrorType": "UnrecognizedClientException"}))
    await lsp.start(init_options={"model": f"bedrock:{BEDROCK_MODEL}", "maxRetries": 0}, env=bedrock_env(replay, home))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    message = result["error"]["message"]
    assert "HTTP 403" in message and "security token" in message
    assert "AWS_ACCESS_KEY_ID" in message and "AWS_PROFILE" in message  # what to set, as for every provider


async def test_bedrock_exception_frame_mid_stream_is_an_error(lsp, replay, home):
    error_frame = base64.b64decode((FIXTURES / "bedrock-model-stream-error.eventstream.base64.txt").read_text())
    head = b"".join(eventstream_events(bedrock_recording())[:4])
    replay.replies.append(Reply(head + error_frame, EVENTSTREAM))
    await lsp.start(init_options={"model": f"bedrock:{BEDROCK_MODEL}", "maxRetries": 0}, env=bedrock_env(replay, home))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["stopReason"] == "error", result
    assert "Model Stream Error" in result["error"]["message"]
    assert result["text"].startswith("Hello! Cache")  # what came before the error is kept


async def test_bedrock_thinking_with_its_signature_goes_back(lsp, replay, home):
    replay.replies += [Reply(bedrock_framed("anthropic-reasoning.chunks.txt"), EVENTSTREAM), Reply(bedrock_recording(), EVENTSTREAM)]
    options = {"model": f"bedrock:{BEDROCK_MODEL}", "approval": "auto", "thinkingBudget": 1024}
    await lsp.start(init_options=options, env=bedrock_env(replay, home))
    first = await lsp.command("tunacode.request", {"prompt": "gcd(1071, 462)?"})
    assert first["stopReason"] == "end_turn" and "**21**" in first["text"]
    thinking = [e for e in lsp.events_of(first["requestId"]) if e["type"] == "thinking_delta"]
    assert "".join(e["text"] for e in thinking).startswith("I'm working through the Euclidean algorithm")
    await lsp.command("tunacode.request", {"prompt": "thanks", "sessionId": first["sessionId"]})
    sent = replay.requests[1].json()
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    block = sent["messages"][1]["content"][0]
    assert block["type"] == "thinking" and block["signature"].startswith("EsECCokBCBAYAipA9i3HF1aHpQITkdN8")


async def test_bedrock_stream_cut_midway_is_an_error(lsp, replay, home):
    head = b"".join(eventstream_events(bedrock_recording())[:20])  # no message_stop: the body just ends
    replay.replies.append(Reply(head, EVENTSTREAM))
    await lsp.start(init_options={"model": f"bedrock:{BEDROCK_MODEL}", "maxRetries": 0}, env=bedrock_env(replay, home))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["stopReason"] == "error" and "ended before the response was finished" in result["error"]["message"]


# ---------------------------------------------------------------- Vertex


async def test_vertex_text_and_cache_usage_over_two_turns(lsp, replay, home):
    replay.replies += [
        Reply(vertex_recording("vertex-cache-write.sse"), "text/event-stream"),
        Reply(vertex_recording("vertex-cache-read.sse"), "text/event-stream"),
    ]
    await lsp.start(init_options={"model": "vertex:claude-sonnet-5", "approval": "auto"}, env=vertex_env(replay, home))
    first = await lsp.command("tunacode.request", {"prompt": "ack?"})
    assert first["stopReason"] == "end_turn" and first["text"] == "ack"
    assert first["usage"]["cacheWriteTokens"] == 28804 and first["usage"]["inputTokens"] == 10
    second = await lsp.command("tunacode.request", {"prompt": "again", "sessionId": first["sessionId"]})
    assert second["usage"]["cacheReadTokens"] == 28804 and second["usage"]["outputTokens"] == 4
    call = replay.requests[0]
    assert call.path == "/v1/projects/p1/locations/us-east5/publishers/anthropic/models/claude-sonnet-5:streamRawPredict"
    assert call.headers["authorization"] == f"Bearer {FAKE_ACCESS_TOKEN}" and "x-api-key" not in call.headers
    body = call.json()
    assert body["anthropic_version"] and "model" not in body and body["stream"] is True
    assert replay.token_requests and b"jwt-bearer" in replay.token_requests[0].body  # the service account's exchange
    assert replay.requests[1].json()["messages"][1] == {"role": "assistant", "content": [{"type": "text", "text": "ack"}]}
    # one token for both calls: the client (and its credentials) is kept, not rebuilt per call
    assert len(replay.token_requests) == 1


async def test_vertex_tool_call(lsp, replay, home):
    replay.replies += [
        Reply(sse_framed("anthropic-tool-call.chunks.txt"), "text/event-stream"),
        Reply(vertex_recording("vertex-cache-read.sse"), "text/event-stream"),
    ]
    await lsp.start(init_options={"model": "vertex:claude-sonnet-5", "approval": "auto"}, env=vertex_env(replay, home))
    result = await lsp.command("tunacode.request", {"prompt": "weather?"})
    assert result["turns"] == 2 and result["text"] == "ack"
    second = replay.requests[1].json()
    assert second["messages"][1]["content"][0]["id"] == "toolu_01KFbKqPYSuAKujiL6mTfzYA"
    assert second["messages"][2]["content"][0]["tool_use_id"] == "toolu_01KFbKqPYSuAKujiL6mTfzYA"


async def test_vertex_abort_mid_stream_closes_the_connection(lsp, replay, home):
    head = vertex_recording("vertex-cache-write.sse").split(b"\n\n")[:3]  # up to the "ack" delta
    replay.replies.append(Reply(b"\n\n".join(head) + b"\n\n", "text/event-stream", stall=True))
    await lsp.start(init_options={"model": "vertex:claude-sonnet-5", "approval": "auto"}, env=vertex_env(replay, home))
    pending = lsp.send_command("tunacode.request", {"prompt": "ack?"})
    first = await lsp.wait_for_event(_is("text_delta"))
    started = time.monotonic()
    await lsp.command("tunacode.abort", {"requestId": first["requestId"]})
    result = await asyncio.wait_for(pending, 1.0)
    assert result["stopReason"] == "cancelled" and result["text"] == "ack" and time.monotonic() - started < 1.0
    assert await asyncio.to_thread(replay.wait_for_closed, 2.0), "the Vertex connection was not closed"


async def test_vertex_error_status_names_the_credentials_to_check(lsp, replay, home):
    body = {"error": {"code": 403, "message": "Permission 'aiplatform.endpoints.predict' denied", "status": "PERMISSION_DENIED"}}
    replay.replies.append(Reply(json.dumps(body).encode(), status=403))
    await lsp.start(init_options={"model": "vertex:claude-sonnet-5", "maxRetries": 0}, env=vertex_env(replay, home))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    message = result["error"]["message"]
    assert result["stopReason"] == "error" and "HTTP 403" in message and "aiplatform.endpoints.predict" in message
    assert "GOOGLE_APPLICATION_CREDENTIALS" in message


async def test_vertex_thinking_and_a_stream_cut_midway(lsp, replay, home):
    cut = sse_framed("anthropic-reasoning.chunks.txt").split(b"\n\n")[:12]
    replay.replies += [
        Reply(sse_framed("anthropic-reasoning.chunks.txt"), "text/event-stream"),
        Reply(b"\n\n".join(cut) + b"\n\n", "text/event-stream"),
    ]
    options = {"model": "vertex:claude-sonnet-5", "approval": "auto", "thinkingBudget": 1024, "maxRetries": 0}
    await lsp.start(init_options=options, env=vertex_env(replay, home))
    first = await lsp.command("tunacode.request", {"prompt": "gcd(1071, 462)?"})
    assert first["stopReason"] == "end_turn" and "**21**" in first["text"]
    assert any(e["type"] == "thinking_delta" for e in lsp.events_of(first["requestId"]))
    second = await lsp.command("tunacode.request", {"prompt": "again", "sessionId": first["sessionId"]})
    assert second["stopReason"] == "error" and "ended before the response was finished" in second["error"]["message"]
    assert replay.requests[1].json()["messages"][1]["content"][0]["signature"].startswith("EsECCokBCBAYAipA9i3HF1aHpQITkdN8")
