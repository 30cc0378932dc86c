"""Our OpenAI streaming provider (and tinyagent's Rust one) against the real scripted server."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from tinyagent import (
    Agent,
    AgentOptions,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    AssistantMessageEvent,
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
    OpenAIChatStream,
    OpenAICompatModel,
    SSEDecoder,
    build_headers,
    close_shared_client,
    convert_usage,
    parse_retry_after,
    stream_openai_chat,
)
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

ECHO_TOOL = AgentTool(
    name="echo",
    description="Echo the text back.",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)


@pytest.fixture(autouse=True)
async def shared_client_closed() -> AsyncIterator[None]:
    yield
    await close_shared_client()


def model_for(server: ScriptedModelServer, **fields: Any) -> OpenAICompatModel:
    return OpenAICompatModel(provider="openai-compatible", id="scripted", base_url=server.chat_url, **fields)


def user_context(text: str = "hi", **fields: Any) -> Context:
    return Context(messages=[UserMessage(content=[TextContent(text=text)])], **fields)


async def run_stream(
    model: OpenAICompatModel,
    context: Context | None = None,
    signal: asyncio.Event | None = None,
    **options: Any,
) -> tuple[OpenAIChatStream, list[AssistantMessageEvent], AssistantMessage]:
    stream = await stream_openai_chat(
        model, context or user_context(), SimpleStreamOptions(api_key="test-key", signal=signal, **options)
    )
    events = [event async for event in stream]
    return stream, events, await stream.result()


def texts(message: AssistantMessage) -> list[str]:
    return [block.text or "" for block in message.content if isinstance(block, TextContent)]


def tool_calls(message: AssistantMessage) -> list[ToolCallContent]:
    return [block for block in message.content if isinstance(block, ToolCallContent)]


# ---------------------------------------------------------------- content


async def test_text_deltas_add_up_and_each_event_carries_a_snapshot(serve) -> None:
    server = serve([{"text": "The quick brown fox", "chunks": 5}])
    stream, events, final = await run_stream(model_for(server))

    types = [event.type for event in events]
    assert types == ["start", "text_start"] + ["text_delta"] * 5 + ["text_end", "done"]
    text_deltas = [event.delta for event in events if event.type == "text_delta"]
    assert "".join(text_deltas) == "The quick brown fox"
    # Each partial is the message as it was at that event, not one shared object.
    seen = [texts(event.partial)[0] for event in events if event.type == "text_delta"]
    assert seen == ["".join(text_deltas[: i + 1]) for i in range(5)]
    assert events[-1].message is final
    assert final.stop_reason == "stop"
    assert texts(final) == ["The quick brown fox"]
    assert (final.provider, final.model, final.api) == ("openai-compatible", "scripted", "openai-completions")
    assert final.timestamp and final.timestamp > 1_600_000_000_000
    assert final.error_message is None
    assert stream.received_content and stream.status is None and stream.error_kind is None


async def test_thinking_from_reasoning_content_and_reasoning(serve) -> None:
    server = serve(
        [
            {"steps": [{"thinking": "step one", "chunks": 2}, {"text": "answer"}]},
            {"steps": [{"thinking": "openrouter style", "field": "reasoning"}, {"text": "ok"}]},
        ]
    )
    _, events, final = await run_stream(model_for(server))
    assert [type(block) for block in final.content] == [ThinkingContent, TextContent]
    assert final.content[0].thinking == "step one"
    assert [e.type for e in events][:5] == [
        "start", "thinking_start", "thinking_delta", "thinking_delta", "thinking_end"
    ]
    _, _, second = await run_stream(model_for(server))
    assert second.content[0].thinking == "openrouter style"


async def test_several_tool_calls_with_arguments_in_many_pieces(serve) -> None:
    server = serve(
        [
            {
                "steps": [
                    {"text": "Reading both."},
                    {"tool_call": {"id": "call_1", "name": "read_file",
                                   "arguments": {"filepath": "a.py", "offset": 10}}, "chunks": 7},
                    {"tool_call": {"id": "call_2", "name": "bash",
                                   "arguments": {"command": "echo \"é\" && ls"}}, "chunks": 9},
                ]
            }
        ]
    )
    _, events, final = await run_stream(model_for(server))
    calls = tool_calls(final)
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_1", "read_file", {"filepath": "a.py", "offset": 10}),
        ("call_2", "bash", {"command": 'echo "é" && ls'}),
    ]
    assert all(c.partial_json is None for c in calls)
    assert final.stop_reason == "tool_calls"
    assert sum(e.type == "tool_call_delta" for e in events) == 16
    ended = [e.tool_call for e in events if e.type == "tool_call_end"]
    assert [c.id for c in ended] == ["call_1", "call_2"]
    assert texts(final) == ["Reading both."]


async def test_invalid_tool_arguments_keep_the_raw_text(serve) -> None:
    server = serve([{"tool_call": {"id": "call_x", "name": "bash", "arguments": "{\"command\": ls"},
                     "chunks": 3}])
    _, _, final = await run_stream(model_for(server))
    (call,) = tool_calls(final)
    assert call.arguments == {}
    assert call.partial_json == '{"command": ls'
    assert final.stop_reason == "tool_calls"


async def test_usage_with_cached_tokens_and_cost(serve) -> None:
    server = serve(
        [
            {"steps": [{"text": "hi"},
                       {"usage": {"prompt_tokens": 1000, "completion_tokens": 50,
                                  "cached_tokens": 600, "cost": 0.0123}}]},
            {"text": "no cost"},
        ]
    )
    _, _, final = await run_stream(model_for(server))
    assert final.usage == {
        "input": 400,
        "output": 50,
        "cache_read": 600,
        "cache_write": 0,
        "total_tokens": 1050,
        "cost": {"input": 0.0, "output": 0.0, "cache_read": 0.0, "cache_write": 0.0, "total": 0.0123},
    }
    _, _, second = await run_stream(model_for(server))
    assert second.usage["cost"]["total"] == 0.0
    assert second.usage["output"] >= 1 and second.usage["input"] >= 1


def test_usage_conversion_of_odd_input() -> None:
    zero = convert_usage(None)
    assert zero["total_tokens"] == 0 and zero["cost"]["total"] == 0.0
    odd = convert_usage({"prompt_tokens": 10, "completion_tokens": "5", "cost": True,
                         "prompt_tokens_details": None})
    assert (odd["input"], odd["output"], odd["total_tokens"], odd["cost"]["total"]) == (10, 0, 10, 0.0)


async def test_finish_length_and_a_stop_after_tool_calls(serve) -> None:
    server = serve(
        [
            {"steps": [{"text": "cut off"}, {"finish": "length"}]},
            {"steps": [{"tool_call": {"name": "echo", "arguments": {"text": "x"}}}, {"finish": "stop"}]},
        ]
    )
    _, _, first = await run_stream(model_for(server))
    assert first.stop_reason == "length"
    _, _, second = await run_stream(model_for(server))
    assert second.stop_reason == "tool_calls"  # servers that say "stop" after tool calls


# ---------------------------------------------------------------- the request


async def test_request_body_and_message_conversion(serve) -> None:
    server = serve([{"text": "ok"}])
    context = Context(
        system_prompt="You are terse.",
        messages=[
            UserMessage(content=[TextContent(text="look"), ImageContent(url="iVBOR", mime_type="image/png")]),
            AssistantMessage(
                content=[
                    ThinkingContent(thinking="private"),
                    TextContent(text="Echoing."),
                    ToolCallContent(id="call_9", name="echo", arguments={"text": "a"}),
                ],
                stop_reason="tool_calls",
            ),
            ToolResultMessage(tool_call_id="call_9", tool_name="echo", content=[TextContent(text="a")]),
            UserMessage(content=[TextContent(text="thanks")]),
        ],
        tools=[ECHO_TOOL],
    )
    await run_stream(model_for(server, max_tokens=256), context, temperature=0.2)
    (body,) = server.requests
    assert body["model"] == "scripted"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 256 and body["temperature"] == 0.2
    assert body["tools"] == [{"type": "function", "function": {
        "name": "echo", "description": "Echo the text back.", "parameters": ECHO_TOOL.parameters}}]
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
        ]},
        {"role": "assistant", "content": "Echoing.", "tool_calls": [
            {"id": "call_9", "type": "function", "function": {"name": "echo", "arguments": '{"text": "a"}'}}
        ]},
        {"role": "tool", "tool_call_id": "call_9", "content": "a"},
        {"role": "user", "content": "thanks"},
    ]


async def test_a_bare_request_has_no_optional_fields(serve) -> None:
    server = serve([{"text": "ok"}])
    await run_stream(model_for(server))
    (body,) = server.requests
    assert set(body) == {"model", "messages", "stream", "stream_options"}


def test_headers_carry_the_key_and_the_models_headers() -> None:
    model = OpenAICompatModel(id="m", base_url="http://127.0.0.1:1/v1/chat/completions",
                              headers={"X-Title": "TunaCode"})
    assert build_headers(model, SimpleStreamOptions(api_key="sk-1")) == {
        "Accept": "text/event-stream", "Authorization": "Bearer sk-1", "X-Title": "TunaCode"}
    assert "Authorization" not in build_headers(model, SimpleStreamOptions())


async def test_streams_reuse_one_connection(serve) -> None:
    server = serve([{"text": "one"}, {"text": "two"}, {"text": "three"}])
    for _ in range(3):
        _, _, final = await run_stream(model_for(server))
        assert final.stop_reason == "stop"
    assert server.accepted_connections == 1


# ---------------------------------------------------------------- errors


async def test_http_500_is_an_error_message_with_the_status(serve) -> None:
    server = serve([{"error": {"status": 500, "body": {"error": {"message": "boom", "type": "server"}}}}])
    stream, events, final = await run_stream(model_for(server))
    assert [e.type for e in events] == ["start", "error"]
    assert events[-1].error is final and events[-1].reason == "error"
    assert final.stop_reason == "error"
    assert final.error_message == "HTTP 500: boom"
    assert stream.status == 500 and stream.retry_after is None and stream.error_kind == "http"
    assert not stream.received_content


async def test_http_429_exposes_retry_after(serve) -> None:
    server = serve(
        [
            {"error": {"status": 429, "headers": {"Retry-After": "1.5"}, "body": "rate limited"}},
            {"error": {"status": 400, "body": "x" * 10_000}},
        ]
    )
    stream, _, final = await run_stream(model_for(server))
    assert (stream.status, stream.retry_after) == (429, 1.5)
    assert final.error_message == "HTTP 429: rate limited"
    stream, _, final = await run_stream(model_for(server))
    assert stream.status == 400
    assert final.error_message.startswith("HTTP 400: xxx") and len(final.error_message) < 2100


def test_retry_after_as_seconds_or_an_http_date() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= parse_retry_after(later) <= 30
    past = format_datetime(datetime.now(UTC) - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(past) == 0.0


async def test_a_dropped_connection_keeps_the_content_so_far(serve) -> None:
    server = serve([{"steps": [{"text": "half an ans", "chunks": 2},
                               {"tool_call": {"name": "echo", "arguments": "{\"te"}}, {"drop": True}]}])
    stream, events, final = await run_stream(model_for(server))
    assert events[-1].type == "error"
    assert final.stop_reason == "error"
    assert "closed unexpectedly" in final.error_message
    assert stream.error_kind == "reset"
    assert texts(final) == ["half an ans"]
    assert tool_calls(final) == []  # its arguments never finished
    assert stream.received_content


async def test_a_stall_past_the_read_timeout_is_an_error(serve) -> None:
    server = serve([{"steps": [{"text": "waiting"}, {"stall": 30}]}])
    stream, _, final = await run_stream(model_for(server, read_timeout=0.2))
    assert final.stop_reason == "error" and stream.error_kind == "stall"
    assert final.error_message == "model stream stalled: no data for 0.2 s"
    assert texts(final) == ["waiting"]
    assert await asyncio.to_thread(server.wait_for_closed, 5)


async def test_a_malformed_chunk_is_an_error(serve) -> None:
    server = serve([{"steps": [{"text": "fine so far"}, {"raw": "data: {not json\n\n"}, {"text": "lost"}]}])
    stream, _, final = await run_stream(model_for(server))
    assert final.stop_reason == "error" and stream.error_kind == "malformed"
    assert final.error_message == "malformed stream chunk: {not json"
    assert texts(final) == ["fine so far"]


async def test_an_error_chunk_mid_stream_is_an_error(serve) -> None:
    error = json.dumps({"error": {"message": "provider overloaded", "code": 502}})
    server = serve([{"steps": [{"text": "so"}, {"raw": f"data: {error}\n\n"}]}])
    stream, _, final = await run_stream(model_for(server))
    assert final.error_message == "model error in stream: provider overloaded"
    assert stream.error_kind == "provider"
    assert texts(final) == ["so"]


async def test_a_clean_close_before_the_finish_is_an_error() -> None:
    """A server without chunked framing that closes early looks like a clean end of body."""

    chunk = json.dumps({"choices": [{"index": 0, "delta": {"content": "cut"}, "finish_reason": None}]})

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
        writer.write(f"data: {chunk}\n\n".encode())
        await writer.drain()
        writer.close()

    listener = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        model = OpenAICompatModel(id="m", base_url=f"http://127.0.0.1:{port}/v1/chat/completions")
        stream, _, final = await run_stream(model)
    finally:
        listener.close()
        await listener.wait_closed()
    assert final.stop_reason == "error" and stream.error_kind == "reset"
    assert final.error_message == "model stream ended before the response was finished"
    assert texts(final) == ["cut"]


async def test_a_drop_after_done_keeps_the_complete_message(serve) -> None:
    server = serve([{"steps": [{"text": "complete"}, {"finish": "stop"},
                               {"raw": "data: [DONE]\n\n"}, {"drop": True}]}])
    stream, events, final = await run_stream(model_for(server))
    assert events[-1].type == "done"
    assert final.stop_reason == "stop" and final.error_message is None
    assert texts(final) == ["complete"] and stream.error_kind is None


async def test_connect_failure_is_an_error_message() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens here once closed
    model = OpenAICompatModel(id="m", base_url=f"http://127.0.0.1:{port}/v1/chat/completions")
    stream, events, final = await run_stream(model)
    assert [e.type for e in events] == ["start", "error"]
    assert final.stop_reason == "error"
    assert final.error_message.startswith(f"cannot connect to http://127.0.0.1:{port}")
    assert stream.status is None and stream.error_kind == "connect"
    assert not stream.received_content


def test_sse_decoder_handles_split_lines_crlf_comments_and_multiline_data() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b": keep-alive\r\n\r\ndata: {\"a\"") == []
    assert decoder.feed(b": 1}\r\n\r\ndata: x\ndata: y\n\nevent: ping\n\ndata: [DO") == ['{"a": 1}', "x\ny"]
    assert decoder.feed("NE]\n\ndata: é".encode()[:-1]) == ["[DONE]"]
    assert decoder.flush() == ["\ufffd"]  # a torn multi-byte char at EOF decodes with a marker


# ---------------------------------------------------------------- abort


async def test_abort_while_the_server_stalls(serve) -> None:
    server = serve([{"steps": [{"thinking": "hmm"}, {"text": "partial answer"},
                               {"tool_call": {"name": "echo", "arguments": "{\"text\": \"unfin"}},
                               {"stall": 30}, {"text": "never sent"}]}])
    signal = asyncio.Event()
    stream = await stream_openai_chat(model_for(server), user_context(), SimpleStreamOptions(signal=signal))
    events: list[AssistantMessageEvent] = []
    aborted_at = None
    async for event in stream:
        events.append(event)
        if event.type == "tool_call_delta":
            # Runs once __anext__ waits on the silent server.
            asyncio.get_running_loop().call_soon(signal.set)
            aborted_at = time.monotonic()
    final = await stream.result()
    elapsed = time.monotonic() - aborted_at

    assert elapsed < 0.5  # the server would stay silent for 30 s
    assert events[-1].type == "error" and events[-1].reason == "aborted"
    assert final.stop_reason == "aborted" and final.error_message == "aborted"
    assert stream.error_kind == "aborted"
    assert texts(final) == ["partial answer"]
    assert final.content[0].thinking == "hmm"
    assert tool_calls(final) == []  # incomplete arguments dropped
    assert await asyncio.to_thread(server.wait_for_closed, 5)  # the server saw the connection close


async def test_abort_keeps_a_tool_call_whose_arguments_are_complete(serve) -> None:
    server = serve([{"steps": [{"tool_call": {"id": "call_done", "name": "echo", "arguments": {"text": "a"}}},
                               {"stall": 30}]}])
    signal = asyncio.Event()
    stream = await stream_openai_chat(model_for(server), user_context(), SimpleStreamOptions(signal=signal))
    async for event in stream:
        if event.type == "tool_call_delta":
            asyncio.get_running_loop().call_soon(signal.set)
    final = await stream.result()
    assert final.stop_reason == "aborted"
    kept = [(c.id, c.arguments, c.partial_json) for c in tool_calls(final)]
    assert kept == [("call_done", {"text": "a"}, None)]


async def test_abort_before_connect_sends_nothing(serve) -> None:
    server = serve([{"text": "never"}])
    signal = asyncio.Event()
    signal.set()
    _, events, final = await run_stream(model_for(server), signal=signal)
    assert [e.type for e in events] == ["start", "error"]
    assert final.stop_reason == "aborted" and final.content == []
    assert server.requests == []


async def test_aclose_mid_stream_closes_the_connection(serve) -> None:
    server = serve([{"steps": [{"text": "hello"}, {"stall": 30}]}])
    stream = await stream_openai_chat(model_for(server), user_context(), SimpleStreamOptions())
    async for event in stream:
        if event.type == "text_delta":
            break
    await stream.aclose()
    final = await stream.result()
    assert final.stop_reason == "error" and texts(final) == ["hello"]
    assert stream.error_kind == "closed"
    assert await asyncio.to_thread(server.wait_for_closed, 5)


async def test_result_without_iterating(serve) -> None:
    server = serve([{"text": "direct", "chunks": 3}])
    stream = await stream_openai_chat(model_for(server), user_context(), SimpleStreamOptions())
    final = await stream.result()
    assert texts(final) == ["direct"]


# ---------------------------------------------------------------- a real tinyagent Agent


async def echo(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> AgentToolResult:
    return AgentToolResult(content=[TextContent(text=f"echo: {args['text']}")])


async def test_a_tinyagent_agent_runs_two_turns_over_our_provider(serve) -> None:
    server = serve(
        [
            {"steps": [{"text": "Echoing."},
                       {"tool_call": {"id": "call_e", "name": "echo", "arguments": {"text": "ping"}},
                        "chunks": 3}]},
            {"text": "The tool said ping.", "chunks": 4},
        ]
    )
    agent = Agent(AgentOptions(stream_fn=stream_openai_chat, get_api_key=lambda provider: "local"))
    agent.set_model(model_for(server))
    agent.set_system_prompt("Be brief.")
    agent.set_tools([AgentTool(**vars(ECHO_TOOL) | {"execute": echo})])

    reply = await agent.prompt("say ping")

    messages = agent.state.messages
    assert [m.role for m in messages] == ["user", "assistant", "tool_result", "assistant"]
    assert tool_calls(messages[1])[0].arguments == {"text": "ping"}
    assert messages[2].tool_call_id == "call_e" and messages[2].content[0].text == "echo: ping"
    assert reply is messages[3] and texts(reply) == ["The tool said ping."]
    assert reply.stop_reason == "stop"
    second = server.requests[1]["messages"]
    assert second[0] == {"role": "system", "content": "Be brief."}
    assert second[-1] == {"role": "tool", "tool_call_id": "call_e", "content": "echo: ping"}
    assert second[-2]["tool_calls"][0]["function"] == {"name": "echo", "arguments": '{"text": "ping"}'}


# ---------------------------------------------------------------- tinyagent's Rust provider


async def rust_stream(server: ScriptedModelServer) -> tuple[list[str], AssistantMessage]:
    from tinyagent.alchemy_provider import OpenAICompatModel as RustModel
    from tinyagent.alchemy_provider import stream_alchemy_openai_completions

    model = RustModel(provider="openai", id="scripted", base_url=server.chat_url)
    stream = await stream_alchemy_openai_completions(
        model, user_context(tools=[ECHO_TOOL]), SimpleStreamOptions(api_key="local")
    )
    types = [event.type async for event in stream]
    return types, await stream.result()


async def test_rust_provider_streams_text_and_usage_from_the_scripted_server(serve) -> None:
    server = serve([{"steps": [{"text": "Hello from the script", "chunks": 4},
                               {"usage": {"prompt_tokens": 30, "completion_tokens": 5,
                                          "cached_tokens": 10}}]}])
    types, final = await rust_stream(server)
    assert types.count("text_delta") == 4 and types[-1] == "done"
    assert texts(final) == ["Hello from the script"]
    assert final.stop_reason == "stop"
    # Unlike ours (input = prompt - cached = 20), the Rust provider leaves cached tokens in input.
    assert (final.usage["input"], final.usage["output"], final.usage["cache_read"]) == (30, 5, 10)
    assert server.requests[0]["stream_options"] == {"include_usage": True}


async def test_rust_provider_streams_a_tool_call_from_the_scripted_server(serve) -> None:
    server = serve([{"tool_call": {"id": "call_r", "name": "echo", "arguments": {"text": "hi"}},
                     "chunks": 5}])
    types, final = await rust_stream(server)
    assert "tool_call_end" in types
    assert [(c.id, c.name, c.arguments) for c in tool_calls(final)] == [("call_r", "echo", {"text": "hi"})]
    assert final.stop_reason == "tool_calls"


# ---------------------------------------------------------------- prompt caching


async def test_cache_hints_mark_system_prompt_and_last_message_for_anthropic_on_openrouter(serve) -> None:
    server = serve([{"text": "ok"}, {"text": "ok"}])
    context = user_context("the question", system_prompt="You are helpful.")
    anthropic = OpenAICompatModel(provider="openrouter", id="anthropic/claude-sonnet-4.5", base_url=server.chat_url)
    await run_stream(anthropic, context)
    await run_stream(model_for(server), context)  # openai-compatible: caches by itself, no marker
    marked, plain = server.requests
    assert marked["messages"][0]["content"] == [
        {"type": "text", "text": "You are helpful.", "cache_control": {"type": "ephemeral"}}
    ]
    assert marked["messages"][-1]["content"] == [
        {"type": "text", "text": "the question", "cache_control": {"type": "ephemeral"}}
    ]
    assert "cache_control" not in json.dumps(plain)
    assert plain["messages"][0]["content"] == "You are helpful."


def test_usage_reports_cache_writes_apart_from_input() -> None:
    openrouter = convert_usage({"prompt_tokens": 1000, "completion_tokens": 5,
                                "prompt_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 300}})
    assert (openrouter["input"], openrouter["cache_read"], openrouter["cache_write"]) == (100, 600, 300)
    anthropic = convert_usage({"prompt_tokens": 1000, "completion_tokens": 5, "cache_creation_input_tokens": 400})
    assert (anthropic["input"], anthropic["cache_read"], anthropic["cache_write"]) == (600, 0, 400)


async def test_an_endless_sse_line_from_a_gateway_is_an_error_not_the_servers_memory() -> None:
    """A hostile gateway sends `data: ` and then never a newline: the stream stops at the
    decoder's bound (MAX_EVENT_BYTES) with a clear error and closes the connection; before, every
    byte was kept (and rescanned for a newline on each chunk) until the server chose to stop."""

    from tunacode_lsp.agent.provider.sse import MAX_EVENT_BYTES

    piece = b"a" * (1024 * 1024)
    sent = 0
    stopped_by_client = asyncio.Event()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal sent
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: ")
        try:
            while sent < 4 * MAX_EVENT_BYTES:
                writer.write(piece)
                await writer.drain()
                sent += len(piece)
        except (ConnectionError, OSError):
            stopped_by_client.set()
        finally:
            writer.close()

    listener = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        model = OpenAICompatModel(id="m", base_url=f"http://127.0.0.1:{port}/v1/chat/completions")
        stream, _, final = await asyncio.wait_for(run_stream(model), 60)
        await asyncio.wait_for(stopped_by_client.wait(), 30)
    finally:
        listener.close()
        await listener.wait_closed()
    assert final.stop_reason == "error" and stream.error_kind == "malformed"
    assert "one server-sent event is over 16 MB" in (final.error_message or "")
    assert sent < 4 * MAX_EVENT_BYTES


def test_sse_decoder_bounds_one_event_across_lines_and_chunks() -> None:
    from tunacode_lsp.agent.provider.sse import MAX_EVENT_BYTES, SSEEventTooLarge

    decoder = SSEDecoder()
    line = b"data: " + b"x" * (1024 * 1024) + b"\n"
    with pytest.raises(SSEEventTooLarge):
        for _ in range(MAX_EVENT_BYTES // (1024 * 1024) + 2):  # many data lines, never a blank one
            assert decoder.feed(line) == []
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a") == [] and decoder.feed(b"b\n") == [] and decoder.feed(b"\ndata: c\n\n") == ["ab", "c"]


async def test_a_stacked_gzip_bomb_from_a_gateway_is_refused_before_it_is_read() -> None:
    """`Content-Encoding: gzip, gzip`: about a kilobyte that httpx inflates to 256 MB in one
    step; refused with a clear error before the body is read."""
    import resource
    import zlib

    def gz(data: bytes) -> bytes:
        packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return packer.compress(data) + packer.flush()

    body = gz(gz(b"data: " + b"a" * (256 * 1024 * 1024)))

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
        model = OpenAICompatModel(id="m", base_url=f"http://127.0.0.1:{port}/v1/chat/completions")
        stream, _, final = await asyncio.wait_for(run_stream(model), 60)
    finally:
        listener.close()
        await listener.wait_closed()
    assert final.stop_reason == "error" and stream.error_kind == "malformed"
    assert "stacked encodings (gzip, gzip)" in (final.error_message or "")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 1024  # KB
