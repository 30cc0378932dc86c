"""Red team (v3): a Google OAuth access token (`ya29.`) is minted at run time by the Vertex
client from a service account; it is in no environment variable, so the redaction registry
(core/redact.py) did not know it. A gateway or proxy (ANTHROPIC_VERTEX_BASE_URL) that echoes
the bearer token in its 401 body put it in the request's error, its events and the stored
session (and a CI log through `tunacode-lsp run`)."""

from __future__ import annotations

import json

import pytest

from tests.lsp import provider_replay
from tests.lsp.provider_replay import ReplayServer, Reply
from tests.lsp.test_provider_bedrock_vertex import vertex_env

pytest.importorskip("google.auth")

MINTED = "ya29.a0AfB_byDX3kq9Lr7pZx0Y1c2V3b4N5m6Q7w8E9r0T1y2U3i4O5p6A7s8D9f0G1h2J3k4L5"


@pytest.fixture
def replay(monkeypatch):
    monkeypatch.setattr(provider_replay, "FAKE_ACCESS_TOKEN", MINTED)
    with ReplayServer() as server:
        yield server


async def test_a_minted_google_token_echoed_in_an_error_reaches_no_client_and_no_store(lsp, replay, home):
    body = {"error": {"code": 401, "message": f"Request had invalid authentication credentials: token {MINTED} expired",
                      "status": "UNAUTHENTICATED"}}
    replay.replies.append(Reply(json.dumps(body).encode(), status=401))
    await lsp.start(init_options={"model": "vertex:claude-sonnet-5", "maxRetries": 0}, env=vertex_env(replay, home))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert replay.requests and replay.requests[0].headers["authorization"] == f"Bearer {MINTED}"  # it was sent
    assert result["stopReason"] == "error" and "HTTP 401" in result["error"]["message"], result
    shown = json.dumps([result, lsp.events_of(result["requestId"])])
    stored = json.dumps(await lsp.command("tunacode.session.get", {"sessionId": result["sessionId"], "events": True}))
    assert "ya29." not in shown and "ya29." not in stored
    assert "[redacted]" in result["error"]["message"]
