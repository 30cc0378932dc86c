"""Anthropic Messages through the official SDK against the scripted model on 127.0.0.1:
text, thinking with its signature sent back, tool calls, cache breakpoints, usage with
cache reads, overloaded errors retried, abort closing the stream at once."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tinyagent import AgentTool, Context, SimpleStreamOptions, TextContent, ToolResultMessage, UserMessage

from tunacode_lsp.agent.models import resolve_model
from tunacode_lsp.agent.provider.stream import make_stream_fn

TOOL = AgentTool(name="read_file", description="Read a file", parameters={"type": "object", "properties": {"filepath": {"type": "string"}}})


def anthropic_model(server: Any, **kw: Any) -> Any:
    env = {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": server.base_url.removesuffix("/v1")}
    return resolve_model("anthropic:claude-sonnet-5-5", env=env, **kw)


async def run(resolved: Any, context: Context, signal: asyncio.Event | None = None, notes: list[str] | None = None) -> tuple[list[Any], Any]:
    fn = make_stream_fn(signal=signal or asyncio.Event(), max_retries=2, notify=(notes if notes is not None else []).append, on_model_call=lambda: None)
    stream = await fn(resolved.model, context, SimpleStreamOptions(api_key=resolved.api_key))
    events = [event async for event in stream]
    return events, await stream.result()


async def test_text_thinking_tool_call_and_usage(serve) -> None:
    server = serve([
        {"steps": [{"thinking": "let me look", "chunks": 2}, {"text": "Reading.", "chunks": 2},
                   {"tool_call": {"id": "toolu_1", "name": "read_file", "arguments": {"filepath": "a.py"}}, "chunks": 3},
                   {"usage": {"prompt_tokens": 1000, "completion_tokens": 20, "cached_tokens": 900}}]},
        {"text": "done"},
    ])
    resolved = anthropic_model(server, thinking_budget=2048)
    context = Context(system_prompt="You are helpful.", messages=[UserMessage(content=[TextContent(text="read a.py")])], tools=[TOOL])
    events, final = await run(resolved, context)
    assert final.stop_reason == "tool_calls"
    kinds = [block.type for block in final.content]
    assert kinds == ["thinking", "text", "tool_call"]
    thinking, text, call = final.content
    assert (thinking.thinking, thinking.thinking_signature) == ("let me look", "scripted-signature-1")
    assert text.text == "Reading." and (call.id, call.name, call.arguments) == ("toolu_1", "read_file", {"filepath": "a.py"})
    assert final.usage["cache_read"] == 900 and final.usage["input"] == 100 and final.usage["output"] == 20
    assert "thinking_delta" in [e.type for e in events] and "tool_call_end" in [e.type for e in events]

    body = server.requests[0]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048} and body["max_tokens"] > 2048
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    headers = server.headers_seen[0]
    assert "sk-ant-test" in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))

    # the next call sends the thinking back unchanged, with its signature, and the tool result
    context.messages.append(final)
    context.messages.append(ToolResultMessage(tool_call_id="toolu_1", tool_name="read_file", content=[TextContent(text="x = 1")]))
    _, second = await run(resolved, context)
    assert second.stop_reason == "stop" and second.content[0].text == "done"
    assistant, results = server.requests[1]["messages"][1:]
    assert assistant["content"][0] == {"type": "thinking", "thinking": "let me look", "signature": "scripted-signature-1"}
    assert assistant["content"][2] == {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"filepath": "a.py"}}
    assert results["content"][0]["type"] == "tool_result" and results["content"][0]["tool_use_id"] == "toolu_1"
    assert results["content"][-1]["cache_control"] == {"type": "ephemeral"}  # the latest turn


async def test_overloaded_and_429_are_retried_then_a_401_names_the_variable(serve) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server = serve([
        {"error": {"status": 529, "body": overloaded, "headers": {"Retry-After": "0"}}},
        {"error": {"status": 429, "body": {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}, "headers": {"Retry-After": "0"}}},
        {"text": "fine"},
        {"error": {"status": 401, "body": {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}}},
    ])
    resolved = anthropic_model(server)
    context = Context(messages=[UserMessage(content=[TextContent(text="hi")])])
    notes: list[str] = []
    _, final = await run(resolved, context, notes=notes)
    assert final.content[0].text == "fine" and len(notes) == 2 and "Overloaded" in notes[0]
    _, failed = await run(resolved, context)
    assert failed.stop_reason == "error" and "ANTHROPIC_API_KEY" in (failed.error_message or "")


async def test_an_overloaded_error_inside_the_stream_is_retried(serve) -> None:
    event = 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    server = serve([{"steps": [{"raw": event}]}, {"text": "ok"}])
    notes: list[str] = []
    _, final = await run(anthropic_model(server), Context(messages=[UserMessage(content=[TextContent(text="hi")])]), notes=notes)
    assert final.content[0].text == "ok" and len(notes) == 1


async def test_abort_closes_the_stream_at_once(serve) -> None:
    server = serve([{"steps": [{"text": "partial"}, {"stall": 3600}]}])
    signal = asyncio.Event()
    fn = make_stream_fn(signal=signal, max_retries=0, notify=lambda _: None, on_model_call=lambda: None)
    resolved = anthropic_model(server)
    stream = await fn(resolved.model, Context(messages=[UserMessage(content=[TextContent(text="hi")])]), SimpleStreamOptions(api_key=resolved.api_key))
    async for event in stream:
        if event.type == "text_delta":
            break
    started = time.perf_counter()
    signal.set()
    final = await stream.result()
    assert final.stop_reason == "aborted" and time.perf_counter() - started < 0.5
    assert await asyncio.to_thread(server.wait_for_closed, 5.0)


async def test_a_stream_cut_midway_is_an_error(serve) -> None:
    server = serve([{"steps": [{"text": "half"}, {"drop": True}]}])
    _, final = await run(anthropic_model(server), Context(messages=[UserMessage(content=[TextContent(text="hi")])]))
    assert final.stop_reason == "error" and final.content[0].text == "half"


async def test_an_endless_event_from_a_gateway_is_an_error_not_the_servers_memory() -> None:
    """A hostile gateway (ANTHROPIC_BASE_URL) starts an event and never ends it: the SDK's decoder
    kept every byte (re-copying them per line) until the gateway stopped; now the shared client
    stops at sse.MAX_EVENT_BYTES with a clear error and closes the connection."""
    from tunacode_lsp.agent.provider.sse import MAX_EVENT_BYTES

    piece = b"a" * (1024 * 1024)
    sent = 0
    stopped_by_client = asyncio.Event()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal sent
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                     b"event: message_start\ndata: ")
        try:
            while sent < 4 * MAX_EVENT_BYTES:
                writer.write(piece + b"\n")  # lines, but never the blank one that ends the event
                await writer.drain()
                sent += len(piece)
        except (ConnectionError, OSError):
            stopped_by_client.set()
        finally:
            writer.close()

    listener = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        env = {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"}
        resolved = resolve_model("anthropic:claude-sonnet-5-5", env=env)
        context = Context(messages=[UserMessage(content=[TextContent(text="hi")])])
        _, final = await asyncio.wait_for(run(resolved, context), 60)
        await asyncio.wait_for(stopped_by_client.wait(), 30)
    finally:
        listener.close()
        await listener.wait_closed()
    assert final.stop_reason == "error"
    assert "one server-sent event is over 16 MB" in (final.error_message or ""), final.error_message
    assert sent < 4 * MAX_EVENT_BYTES


async def test_a_stacked_gzip_bomb_from_a_gateway_is_refused() -> None:
    """The same bomb through the SDK's client (httpx2 inflates every layer of each chunk)."""
    import resource
    import zlib

    def gz(data: bytes) -> bytes:
        packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return packer.compress(data) + packer.flush()

    body = gz(gz(b"event: message_start\ndata: " + b"a" * (256 * 1024 * 1024)))

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip, gzip\r\n"
                     b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
        await writer.drain()
        writer.close()

    listener = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        env = {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"}
        resolved = resolve_model("anthropic:claude-sonnet-5-5", env=env)
        _, final = await asyncio.wait_for(run(resolved, Context(messages=[UserMessage(content=[TextContent(text="hi")])])), 60)
    finally:
        listener.close()
        await listener.wait_closed()
    assert final.stop_reason == "error"
    assert "stacked encodings (gzip, gzip)" in (final.error_message or ""), final.error_message
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 1024  # KB
