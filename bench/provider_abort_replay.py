"""The wires of bench/provider_abort.py that the scripted model does not speak: Claude on
Bedrock (binary event stream, SigV4 with AWS's documented example keys), Claude on Vertex
(`:streamRawPredict`, a token minted on loopback from a throwaway service account) and
Gemini (`streamGenerateContent?alt=sse`). Each request is answered by the tests' loopback
replay server (tests/lsp/provider_replay.py) with the start of a stream, one text delta, and
then nothing until the client closes the connection: the abort races a pending read, as
it does mid-stream on the scripted model. The server runs in a process of its own (as the
scripted model does), so its threads do not share the measuring process's GIL.
"""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.lsp.provider_replay import ReplayServer, Reply, bedrock_chunk, service_account_file

_ANTHROPIC_HEAD = [
    {"type": "message_start", "message": {"id": "msg_bench", "type": "message", "role": "assistant", "model": "claude",
                                          "content": [], "stop_reason": None, "stop_sequence": None,
                                          "usage": {"input_tokens": 10, "output_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "word "}},
]
_GEMINI_HEAD = {"candidates": [{"content": {"parts": [{"text": "word "}], "role": "model"}, "index": 0}]}


def _sse(events: list[dict]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def heads() -> dict[str, tuple[bytes, str]]:
    """wire name -> (the bytes sent before the stall, their content type)."""

    return {
        "bedrock": (b"".join(bedrock_chunk(json.dumps(e)) for e in _ANTHROPIC_HEAD), "application/vnd.amazon.eventstream"),
        "vertex": (_sse(_ANTHROPIC_HEAD), "text/event-stream"),
        "gemini": (f"data: {json.dumps(_GEMINI_HEAD)}\r\n\r\n".encode(), "text/event-stream"),
    }


@contextmanager
def stalled_provider(wire: str, requests: int, folder: Path) -> Iterator[tuple[str, dict, dict[str, str]]]:
    """(name, initialization options, environment) of a provider whose every call stalls after a delta."""

    context = multiprocessing.get_context("spawn")
    urls: multiprocessing.Queue[str] = context.Queue()
    stop = context.Event()
    process = context.Process(target=_serve, args=(wire, requests, urls, stop), daemon=True)
    process.start()
    try:
        yield _provider(wire, urls.get(timeout=30), folder)
    finally:
        stop.set()
        process.join(10)
        if process.is_alive():
            process.kill()


def _serve(wire: str, requests: int, urls: multiprocessing.Queue[str], stop: object) -> None:
    body, content_type = heads()[wire]
    with ReplayServer() as replay:
        replay.replies += [Reply(body, content_type, stall=True) for _ in range(requests)]
        urls.put(replay.base_url)
        stop.wait()  # type: ignore[attr-defined]


def _provider(wire: str, base_url: str, folder: Path) -> tuple[str, dict, dict[str, str]]:
    if wire == "bedrock":
        return "Claude on Bedrock (anthropic SDK, event stream)", {"model": "bedrock:anthropic.claude-sonnet-4-5-v1:0"}, {
            "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
            "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "AWS_REGION": "us-east-1",
            "AWS_CONFIG_FILE": str(folder / "none"),
            "AWS_SHARED_CREDENTIALS_FILE": str(folder / "none"),
            "AWS_EC2_METADATA_DISABLED": "true",
            "ANTHROPIC_BEDROCK_BASE_URL": base_url,
        }
    if wire == "vertex":
        credentials = folder / "service-account.json"
        service_account_file(credentials, f"{base_url}/token")
        return "Claude on Vertex (anthropic SDK)", {"model": "vertex:claude-sonnet-4-5"}, {
            "GOOGLE_APPLICATION_CREDENTIALS": str(credentials),
            "ANTHROPIC_VERTEX_PROJECT_ID": "p1",
            "CLOUD_ML_REGION": "us-east5",
            "ANTHROPIC_VERTEX_BASE_URL": f"{base_url}/v1",
            "GCE_METADATA_HOST": "127.0.0.1:9",
        }
    return "Gemini (streamGenerateContent)", {"model": "gemini:gemini-2.5-flash"}, {
        "GEMINI_API_KEY": "bench", "GOOGLE_GEMINI_BASE_URL": f"{base_url}/v1beta",
    }
