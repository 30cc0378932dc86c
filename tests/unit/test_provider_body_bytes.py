"""The request body built off the event loop is byte for byte what httpx's `json=` sent before.

A raw HTTP server on loopback keeps the bytes each request carried; the expected bytes are
httpx's own encoding (`httpx.Request(json=...)`, the path the provider took before the body
moved to a worker thread) of `build_request_body` for the same context. Several turns with
tool calls, tool results, an image, thinking, non-ASCII text, cache hints and options.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from tinyagent import (
    AgentTool,
    AssistantMessage,
    Context,
    ImageContent,
    SimpleStreamOptions,
    TextContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)
from tinyagent.agent_types import ThinkingContent

from tunacode_lsp.agent.provider.openai_chat import (
    OpenAICompatModel,
    build_request_body,
    close_shared_client,
    stream_openai_chat,
)
from tunacode_lsp.core.history import pruned_marker

SSE_ANSWER = (
    b'data: {"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)
TOOLS = [
    AgentTool(name="read_file", description="Read a file.",
              parameters={"type": "object", "properties": {"filepath": {"type": "string"}}, "required": ["filepath"]}),
    AgentTool(name="bash", description="Run a command — carefully.", parameters=None),
]


class RawRecorder:
    """An HTTP/1.1 server that keeps each request's headers and body bytes and answers one SSE stream."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.headers: list[dict[str, str]] = []
        self.server: asyncio.base_events.Server | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")[1:]
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines if line)}
        self.headers.append(headers)
        self.bodies.append(await reader.readexactly(int(headers["content-length"])))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"
                     + f"Content-Length: {len(SSE_ANSWER)}\r\n\r\n".encode() + SSE_ANSWER)
        await writer.drain()
        writer.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1/chat/completions"


@pytest.fixture
async def recorder() -> AsyncIterator[RawRecorder]:
    rec = RawRecorder()
    rec.server = await asyncio.start_server(rec.handle, "127.0.0.1", 0)
    try:
        yield rec
    finally:
        rec.server.close()
        await rec.server.wait_closed()
        await close_shared_client()


def session(turns: int) -> list[Any]:
    """A multi-turn session with tools: prompts, thinking, tool calls, results (one pruned), an image."""
    messages: list[Any] = [UserMessage(content=[TextContent(text="Lies die Datei — bitte 🙂"),
                                                ImageContent(url="iVBORw0KGgo=", mime_type="image/png")])]
    for n in range(turns):
        messages.append(AssistantMessage(
            content=[ThinkingContent(thinking=f"think {n} «»"), TextContent(text=f"Reading f{n}.py"),
                     ToolCallContent(id=f"call_{n}", name="read_file", arguments={"filepath": f"f{n}.py", "note": "ü\n\"q\""})],
            stop_reason="tool_calls"))
        output = pruned_marker(9000) if n == 1 else f"def f{n}():\n    return '{n}\\t✓'\n"
        messages.append(ToolResultMessage(tool_call_id=f"call_{n}", tool_name="read_file", content=[TextContent(text=output)]))
        if n % 2:
            messages.append(UserMessage(content=[TextContent(text=f"and then {n}")]))
    messages.append(AssistantMessage(content=[TextContent(text="Done: nothing to change.")], stop_reason="stop"))
    messages.append(UserMessage(content=[TextContent(text="one more")]))
    return messages


CASES = [
    ("openai-compatible", "scripted", SimpleStreamOptions(api_key="k")),
    ("openai-compatible", "deepseek-reasoner", SimpleStreamOptions(api_key="k", temperature=0.2)),  # reasoning sent back
    ("openrouter", "anthropic/claude-sonnet-4.5", SimpleStreamOptions(api_key="k", max_tokens=512)),  # cache hints
]


@pytest.mark.parametrize(("provider", "model_id", "options"), CASES, ids=[c[1] for c in CASES])
async def test_request_bytes_are_what_httpx_json_encoding_gave(recorder: RawRecorder, provider, model_id, options) -> None:
    model = OpenAICompatModel(provider=provider, id=model_id, base_url=recorder.url)
    expected: list[bytes] = []
    for turns in (1, 3, 6):  # a growing session, one call per size
        context = Context(system_prompt="You are TunaCode. Ünïcode too.", messages=session(turns), tools=TOOLS)
        stream = await stream_openai_chat(model, context, options)
        final = await stream.result()
        assert final.stop_reason == "stop", final.error_message
        expected.append(httpx.Request("POST", recorder.url, json=build_request_body(model, context, options)).content)
    assert recorder.bodies == expected
    assert all(h["content-type"] == "application/json" for h in recorder.headers)
    assert all("bitte 🙂".encode() in body for body in recorder.bodies)  # UTF-8, not ASCII-escaped


async def test_a_model_header_still_overrides_the_content_type(recorder: RawRecorder) -> None:
    model = OpenAICompatModel(id="m", base_url=recorder.url, headers={"Content-Type": "application/json; charset=utf-8"})
    context = Context(system_prompt="s", messages=session(1), tools=TOOLS)
    await (await stream_openai_chat(model, context, SimpleStreamOptions(api_key="k"))).result()
    assert recorder.headers[0]["content-type"] == "application/json; charset=utf-8"
    assert recorder.bodies[0] == httpx.Request("POST", recorder.url, json=build_request_body(model, context, SimpleStreamOptions(api_key="k"))).content


async def test_an_abort_before_the_call_sends_nothing(recorder: RawRecorder) -> None:
    signal = asyncio.Event()
    signal.set()
    model = OpenAICompatModel(id="m", base_url=recorder.url)
    context = Context(system_prompt="s", messages=session(2), tools=TOOLS)
    final = await (await stream_openai_chat(model, context, SimpleStreamOptions(api_key="k", signal=signal))).result()
    assert final.stop_reason == "aborted"
    assert recorder.bodies == []


async def test_a_body_that_cannot_be_encoded_ends_the_stream_with_an_error(recorder: RawRecorder) -> None:
    """httpx refused NaN (allow_nan=False) inside the stream; the thread's error ends it the same way."""
    model = OpenAICompatModel(id="m", base_url=recorder.url)
    options = SimpleStreamOptions(api_key="k", temperature=float("nan"))
    with pytest.raises(ValueError):
        httpx.Request("POST", recorder.url, json=build_request_body(model, Context(messages=session(1)), options))
    final = await (await stream_openai_chat(model, Context(messages=session(1)), options)).result()
    assert final.stop_reason == "error"
    assert "ValueError" in (final.error_message or "")
    assert recorder.bodies == []
