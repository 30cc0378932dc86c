"""Our OpenAI chat.completions streaming provider for tinyagent: httpx, async, abortable.

``stream_openai_chat`` implements tinyagent's ``StreamFn``. Unlike tinyagent's Rust
binding it closes the HTTP connection the moment the abort signal is set, has a read
timeout (a stalled stream becomes an error), and exposes the HTTP status and Retry-After
for the retry layer. Errors never raise out of the stream: they end it with an ``error``
event whose message has ``stop_reason`` ``error`` or ``aborted`` and the content so far.
"""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import json
import time
import uuid
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

import httpx
from tinyagent import (
    AgentTool,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    ImageContent,
    Model,
    SimpleStreamOptions,
    TextContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)
from tinyagent.agent_types import ThinkingContent

from tunacode_lsp.agent.provider.text_tool_calls import extract_text_tool_calls
from tunacode_lsp.core.abort import race_abort
from tunacode_lsp.core.codec import bulk_decoding
from tunacode_lsp.core.history import PRUNED_MARK_PREFIX
from tunacode_lsp.core.text import loads_text
from tunacode_lsp.tools.limits import MAX_ARGS_BYTES

ERROR_DETAIL_LIMIT = 2000
ERROR_BODY_READ_LIMIT = 64 * 1024
AFTER_DONE_DRAIN_SECONDS = 1.0  # a server that holds the body open after [DONE] is not waited on

T = TypeVar("T")

# Why a stream ended in error, for the retry layer. "connect": no connection was made;
# "reset": the connection closed before the response finished; "stall": no data for
# read_timeout; "http": an HTTP error status (see `status`); "malformed": a chunk that is
# not JSON; "provider": an error sent inside the stream; "closed": aclose() by the caller.
ErrorKind = Literal[
    "connect", "reset", "stall", "http", "malformed", "provider", "closed", "aborted", "other"
]


class OpenAICompatModel(Model):
    """An OpenAI-compatible chat-completions endpoint (extra fields allowed, like tinyagent's)."""

    provider: str = "openai-compatible"
    api: str = "openai-completions"
    base_url: str  # the full chat-completions URL, e.g. http://127.0.0.1:PORT/v1/chat/completions
    headers: dict[str, str] | None = None
    read_timeout: float = 120.0
    connect_timeout: float = 30.0
    max_tokens: int | None = None
    text_tool_calls: bool = True  # parse tool calls the model wrote as text (textToolCalls)


# ---------------------------------------------------------------- shared client

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


def shared_client() -> httpx.AsyncClient:
    """The AsyncClient of the running event loop (created on first use, reused after)."""

    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        client = httpx.AsyncClient(timeout=None, limits=httpx.Limits(max_keepalive_connections=20))
        _clients[loop] = client
    return client


async def close_shared_client() -> None:
    """Close the running loop's shared client (call before the loop closes)."""

    client = _clients.pop(asyncio.get_running_loop(), None)
    if client is not None:
        await client.aclose()


# ---------------------------------------------------------------- the StreamFn


async def stream_openai_chat(
    model: Model, context: Context, options: SimpleStreamOptions
) -> OpenAIChatStream:
    """tinyagent StreamFn: stream one assistant message from an OpenAI-compatible endpoint.

    The request body (every message converted, then JSON-encoded) is built on a worker
    thread from a snapshot of the context: for a long session it is hundreds of ms of CPU,
    during which the event loop must keep answering (abort, status, $/cancelRequest). An
    abort during it ends the stream as aborted without waiting for the thread.
    """

    if not isinstance(model, OpenAICompatModel):
        model = OpenAICompatModel.model_validate(model.model_dump())
    signal = options.signal
    encoded: EncodedBody | BaseException | None = None
    if signal is None or not signal.is_set():
        snapshot = dataclasses.replace(  # the thread reads copies of the lists, never tinyagent's
            context, messages=list(context.messages), tools=None if context.tools is None else list(context.tools)
        )
        raced = await race_abort(asyncio.to_thread(encode_request_body, model, snapshot, options), signal)
        if raced.finished:
            error = raced.task.exception()
            encoded = error if error is not None else raced.result()
    return OpenAIChatStream(
        model=model,
        body=encoded.body if isinstance(encoded, EncodedBody) else {},
        content=encoded if encoded is not None else None,
        quotable=encoded.quotable if isinstance(encoded, EncodedBody) else [],
        headers=build_headers(model, options),
        signal=signal,
        client=shared_client(),
    )


@dataclass(frozen=True)
class EncodedBody:
    """A request body's bytes on the wire, and the body without its messages (the stream
    reads the tool names from it; the converted messages are dropped once encoded)."""

    body: dict[str, Any]
    content: bytes
    quotable: list[str] = dataclasses.field(default_factory=list)  # texts the model did not write (provenance)


def encode_request_body(
    model: OpenAICompatModel, context: Context, options: SimpleStreamOptions
) -> EncodedBody:
    """The request body's bytes, exactly as httpx's `json=` encodes them (pure: it reads
    the context and builds new objects, so it runs on a worker thread).

    The cyclic garbage collector is paused meanwhile (`bulk_decoding`): converting a long
    history allocates a container per message and block, which would start collections
    that scan the whole heap while holding the GIL (hundreds of ms at 30k messages, the
    event loop stalled with them); all of it is freed by reference counting right after.
    """

    with bulk_decoding():
        body = build_request_body(model, context, options)
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
        quotable = _not_the_models(body)  # the same strings, referenced: no copy
        del body["messages"]
    return EncodedBody(body, content, quotable)


def build_headers(model: OpenAICompatModel, options: SimpleStreamOptions) -> dict[str, str]:
    headers = {"Accept": "text/event-stream"}
    if options.api_key:
        headers["Authorization"] = f"Bearer {options.api_key}"
    headers.update(model.headers or {})
    return headers


def build_request_body(
    model: OpenAICompatModel, context: Context, options: SimpleStreamOptions
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(context, reasoning_back=sends_reasoning_back(model.id)),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if context.tools:
        body["tools"] = [_tool_json(tool) for tool in context.tools]
    if wants_cache_hints(model):
        add_cache_hints(body["messages"])
    max_tokens = options.max_tokens if options.max_tokens is not None else model.max_tokens
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    return body


# Providers that cache a prompt's prefix only where the request marks it: Anthropic models
# (and Gemini) through OpenRouter. OpenAI, DeepSeek and most others cache automatically and
# get no marker (docs/configuration.md, "Prompt caching").
CACHE_HINT_PREFIXES = ("anthropic/", "google/gemini")
CACHE_CONTROL = {"type": "ephemeral"}


def wants_cache_hints(model: OpenAICompatModel) -> bool:
    return model.provider == "openrouter" and model.id.startswith(CACHE_HINT_PREFIXES)


def add_cache_hints(messages: list[dict[str, Any]]) -> None:
    """Mark the system prompt, the last pruned tool output and the last message as cache
    breakpoints (in place).

    Everything up to a marked block is cached; the next call, which appends to this
    input, reads it back. Three markers of Anthropic's four: the system prompt (stable for
    the whole session), the last pruned output (pruning goes on after it, so the input up
    to it stays the same through the next pruning step, whose call reads it back instead
    of nothing: Anthropic looks back only ~20 blocks from a breakpoint), and the end of
    this call's input.
    """

    last_pruned = next((i for i in range(len(messages) - 1, 0, -1) if _is_pruned_output(messages[i])), None)
    for position in {0, len(messages) - 1, last_pruned}:
        if position is not None and 0 <= position < len(messages):
            _mark(messages[position])


def _is_pruned_output(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return message.get("role") == "tool" and isinstance(content, str) and content.startswith(PRUNED_MARK_PREFIX)


def _mark(message: dict[str, Any]) -> None:
    content = message.get("content")
    if isinstance(content, str) and content:
        message["content"] = [{"type": "text", "text": content, "cache_control": CACHE_CONTROL}]
    elif isinstance(content, list) and content and isinstance(content[-1], dict):
        content[-1] = {**content[-1], "cache_control": CACHE_CONTROL}


def convert_messages(context: Context, *, reasoning_back: bool = False) -> list[dict[str, Any]]:
    """tinyagent messages -> OpenAI chat messages. Thinking is sent back only with
    `reasoning_back` (as `reasoning_content` of assistant turns that made tool calls)."""

    messages: list[dict[str, Any]] = []
    if context.system_prompt:
        messages.append({"role": "system", "content": context.system_prompt})
    for message in context.messages:
        if isinstance(message, UserMessage):
            messages.append({"role": "user", "content": _user_content(message)})
        elif isinstance(message, AssistantMessage):
            messages.append(_assistant_json(message, reasoning_back=reasoning_back))
        elif isinstance(message, ToolResultMessage):
            text = "".join(part.text or "" for part in message.content if isinstance(part, TextContent))
            messages.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": text})
    return messages


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    if all(isinstance(part, TextContent) for part in message.content):
        return "\n".join(part.text or "" for part in message.content if isinstance(part, TextContent))
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, TextContent):
            parts.append({"type": "text", "text": part.text or ""})
        elif isinstance(part, ImageContent) and part.url:
            parts.append({"type": "image_url", "image_url": {"url": _image_url(part)}})
    return parts


def _image_url(image: ImageContent) -> str:
    url = image.url or ""
    if url.startswith(("data:", "http://", "https://")) or not image.mime_type:
        return url
    return f"data:{image.mime_type};base64,{url}"  # bare base64 payload


def _assistant_json(message: AssistantMessage, *, reasoning_back: bool = False) -> dict[str, Any]:
    text = "".join(
        block.text or "" for block in message.content if isinstance(block, TextContent)
    )
    tool_calls = [
        {
            "id": block.id,
            "type": "function",
            "function": {"name": block.name, "arguments": json.dumps(block.arguments)},
        }
        for block in message.content
        if isinstance(block, ToolCallContent)
    ]
    result: dict[str, Any] = {"role": "assistant", "content": text or (None if tool_calls else "")}
    if tool_calls:
        result["tool_calls"] = tool_calls
        if reasoning_back:
            result["reasoning_content"] = "".join(
                block.thinking or "" for block in message.content if isinstance(block, ThinkingContent)
            )
    return result


def sends_reasoning_back(model_id: str | None) -> bool:
    """DeepSeek's thinking models require the reasoning of an assistant turn that made tool
    calls to come back with it (HTTP 400 "Missing `reasoning_content` field" otherwise);
    other providers do not take the field, so it is sent to DeepSeek models only."""

    return "deepseek" in (model_id or "").lower()


def _tool_json(tool: AgentTool) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters or {"type": "object", "properties": {}},
        },
    }


# ---------------------------------------------------------------- usage


def convert_usage(raw: dict[str, Any] | None) -> dict[str, Any]:
    """OpenAI usage -> tinyagent usage. Cost is only what the provider reports (OpenRouter)."""

    raw = raw or {}
    prompt = _int(raw.get("prompt_tokens"))
    completion = _int(raw.get("completion_tokens"))
    details = raw.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    # Cache writes: OpenRouter's prompt_tokens_details.cache_write_tokens, or Anthropic's
    # cache_creation_input_tokens passed through; both are part of prompt_tokens.
    written = _int(details.get("cache_write_tokens")) if isinstance(details, dict) else 0
    written = written or _int(raw.get("cache_creation_input_tokens"))
    total = _int(raw.get("total_tokens")) or prompt + completion
    cost = raw.get("cost")
    cost_total = float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else 0.0
    return {
        "input": max(0, prompt - cached - written),
        "output": completion,
        "cache_read": cached,
        "cache_write": written,
        "total_tokens": total,
        "cost": {"input": 0.0, "output": 0.0, "cache_read": 0.0, "cache_write": 0.0, "total": cost_total},
    }


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


# ---------------------------------------------------------------- SSE decoding


class SSEDecoder:
    """Bytes -> the data payloads of server-sent events (comments and other fields ignored)."""

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[str]:
        self._buffer += chunk
        events: list[str] = []
        start = 0
        while (newline := self._buffer.find(b"\n", start)) >= 0:
            line = self._buffer[start:newline].rstrip(b"\r")
            start = newline + 1
            if not line:
                if self._data:
                    events.append("\n".join(self._data))
                    self._data = []
                continue
            name, _, value = line.partition(b":")
            if name == b"data":
                self._data.append(value.removeprefix(b" ").decode("utf-8", errors="replace"))
        self._buffer = self._buffer[start:]
        return events

    def flush(self) -> list[str]:
        """At end of stream: an event whose closing blank line never came."""

        events = self.feed(b"\n\n") if self._buffer or self._data else []
        return events


# ---------------------------------------------------------------- the stream


class _Aborted(Exception):
    """The abort signal was set while we waited."""


@dataclass
class _OpenToolCall:
    content_index: int
    pieces: list[str] = field(default_factory=list)

    @property
    def raw(self) -> str:
        return "".join(self.pieces)


def _parse_arguments(raw: str) -> dict[str, Any] | None:
    """The arguments as a JSON object, or None when the text is not one."""

    if not raw.strip():
        return {}
    try:
        parsed = loads_text(raw)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


_FINISH_REASONS: dict[str, Literal["stop", "tool_calls", "length"]] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
}


class OpenAIChatStream:
    """tinyagent StreamResponse over one chat-completions request (pull-driven: each
    ``__anext__`` reads from the connection only as far as the next event needs)."""

    def __init__(
        self,
        *,
        model: OpenAICompatModel,
        body: dict[str, Any],
        headers: dict[str, str],
        signal: asyncio.Event | None,
        client: httpx.AsyncClient,
        content: EncodedBody | BaseException | None = None,
        quotable: list[str] | None = None,
    ) -> None:
        self._quotable = quotable or []  # earlier texts the model did not write (text_tool_calls.py)
        self.status: int | None = None
        self.retry_after: float | None = None
        self.received_content = False
        self.error_kind: ErrorKind | None = None
        self._model = model
        self._body = body
        self._content = content
        self._headers = headers
        self._signal = signal
        self._client = client
        self._partial = AssistantMessage(
            content=[],
            api=model.api,
            provider=model.provider,
            model=model.id,
            usage=convert_usage(None),
            timestamp=int(time.time() * 1000),
        )
        self._events: deque[AssistantMessageEvent] = deque()
        self._phase: Literal["new", "connect", "stream", "final"] = "new"
        self._final: AssistantMessage | None = None
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None  # the response body
        self._decoder = SSEDecoder()
        self._open_block: int | None = None  # index of the text/thinking block being streamed
        self._open_calls: dict[int, _OpenToolCall] = {}
        self._finish_reason: str | None = None
        self._saw_done = False
        self._raw_usage: dict[str, Any] | None = None
        self._abort_waiter: asyncio.Future[Any] | None = None
        self.text_tool_calls = 0  # tool calls found in the text of the final message

    # ------------------------------------------------------------ StreamResponse

    def __aiter__(self) -> OpenAIChatStream:
        return self

    async def __anext__(self) -> AssistantMessageEvent:
        while not self._events:
            if self._phase == "final":
                raise StopAsyncIteration
            await self._advance()
        return self._events.popleft()

    async def result(self) -> AssistantMessage:
        while self._final is None:
            await self._advance()
        return self._final

    async def aclose(self) -> None:
        """Close the connection; an unfinished stream ends with an error."""

        if self._final is None:
            await self._fail("stream closed before it finished", "closed")
        await self._release()

    # ------------------------------------------------------------ driving

    async def _advance(self) -> None:
        try:
            if self._phase == "new":
                self._phase = "connect"
                self._push("start")
            elif self._phase == "connect":
                await self._connect()
            elif self._phase == "stream":
                await self._read()
        except _Aborted:
            self.error_kind = "aborted"
            await self._finish("aborted", "aborted")
        except asyncio.CancelledError:
            await self._release()
            raise
        except httpx.ReadTimeout:
            await self._fail(
                f"model stream stalled: no data for {self._model.read_timeout:g} s", "stall"
            )
        except httpx.ConnectTimeout:
            await self._fail(
                f"cannot connect to {self._model.base_url}: "
                f"timed out after {self._model.connect_timeout:g} s",
                "connect",
            )
        except httpx.ConnectError as exc:
            await self._fail(f"cannot connect to {self._model.base_url}: {exc}", "connect")
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            await self._fail(
                f"model connection closed unexpectedly: {exc or type(exc).__name__}", "reset"
            )
        except httpx.HTTPError as exc:
            await self._fail(f"model request failed: {type(exc).__name__}: {exc}", "other")
        except Exception as exc:  # noqa: BLE001 - errors are data across the agent boundary
            await self._fail(f"model stream failed: {type(exc).__name__}: {exc}", "other")

    async def _connect(self) -> None:
        timeout = httpx.Timeout(
            connect=self._model.connect_timeout,
            read=self._model.read_timeout,
            write=self._model.read_timeout,
            pool=self._model.connect_timeout,
        )
        content = self._content
        if isinstance(content, BaseException):
            raise content  # building the body failed on its thread: an error event, as before
        if content is None:
            request = self._client.build_request(
                "POST", self._model.base_url, json=self._body, headers=self._headers, timeout=timeout
            )
        else:  # encoded off the event loop (stream_openai_chat); the same bytes `json=` gives
            headers = httpx.Headers(self._headers)
            headers.setdefault("Content-Type", "application/json")
            request = self._client.build_request(
                "POST", self._model.base_url, content=content.content, headers=headers, timeout=timeout
            )
        self._response = await self._race(self._client.send(request, stream=True))
        self._chunks = self._response.aiter_bytes()
        if self._response.status_code >= 400:
            await self._http_error(self._response)
            return
        self._phase = "stream"

    async def _read(self) -> None:
        assert self._chunks is not None
        if self._saw_done:
            await self._drain_after_done()
            return
        chunk = await self._race(_next_chunk(self._chunks))
        if chunk is None:
            await self._stream_ended()
            return
        self._on_payloads(self._decoder.feed(chunk))
        if self._final is not None:
            await self._release()  # a malformed or error chunk ended the stream

    async def _drain_after_done(self) -> None:
        """Read the body's end after [DONE] so the connection can be reused; the message is
        complete, so nothing that happens here (error, abort, a server that keeps the body
        open) turns it into an error."""

        assert self._chunks is not None
        try:
            while await self._race(_next_chunk(self._chunks), AFTER_DONE_DRAIN_SECONDS) is not None:
                pass
        except (TimeoutError, _Aborted, httpx.HTTPError):
            pass  # the connection is closed instead of reused
        await self._finish_normally()

    async def _stream_ended(self) -> None:
        self._on_payloads(self._decoder.flush())
        if self._final is not None:
            await self._release()
        elif self._saw_done or self._finish_reason is not None:
            await self._finish_normally()
        else:
            await self._fail("model stream ended before the response was finished", "reset")

    def _on_payloads(self, payloads: list[str]) -> None:
        for data in payloads:
            self._on_data(data)
            if self._final is not None:
                return

    async def _race(self, awaitable: Awaitable[T], timeout: float | None = None) -> T:
        """Await `awaitable`, but raise _Aborted as soon as the abort signal is set."""

        if self._signal is None and timeout is None:
            return await awaitable
        if self._signal is not None and self._signal.is_set():
            _discard(awaitable)
            raise _Aborted()
        task = asyncio.ensure_future(awaitable)
        waiters: set[asyncio.Future[Any]] = {task}
        if self._signal is not None:
            if self._abort_waiter is None:
                self._abort_waiter = asyncio.ensure_future(self._signal.wait())
            waiters.add(self._abort_waiter)
        waited = False
        try:
            await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            waited = True
        finally:
            if not task.done():
                task.cancel()
                await asyncio.wait({task})  # let the cancelled read unwind and close the connection
            if not waited or (self._signal is not None and self._signal.is_set()):
                # The awaited work may have finished in the same loop turn as the abort or
                # the caller's cancellation (a response whose headers just arrived): what it
                # gave is never read, so close it, or its connection stays open.
                await _close_unclaimed(task)
        if self._signal is not None and self._signal.is_set():
            raise _Aborted()
        if task.cancelled():
            raise TimeoutError()
        return task.result()

    # ------------------------------------------------------------ chunks -> events

    def _on_data(self, data: str) -> None:
        if self._saw_done:
            return
        if data.strip() == "[DONE]":
            self._saw_done = True
            self._end_blocks()
            return
        try:
            chunk = loads_text(data)
        except ValueError:
            self._schedule_fail(f"malformed stream chunk: {data[:200]}", "malformed")
            return
        if not isinstance(chunk, dict):
            self._schedule_fail(f"malformed stream chunk: {data[:200]}", "malformed")
            return
        if isinstance(chunk.get("usage"), dict):
            self._raw_usage = chunk["usage"]  # also when the chunk carries an error (OpenRouter)
        if chunk.get("error"):
            self._schedule_fail(f"model error in stream: {_error_detail(chunk)}", "provider")
            return
        choices = chunk.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            self._on_choice(choices[0])

    def _on_choice(self, choice: dict[str, Any]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                self._block_delta("thinking", reasoning)
            content = delta.get("content")
            if isinstance(content, str) and content:
                self._block_delta("text", content)
            elif isinstance(content, list):  # Mistral's Magistral: a list of typed parts
                for kind, text in _content_parts(content):
                    self._block_delta(kind, text)
            refusal = delta.get("refusal")
            if isinstance(refusal, str) and refusal:  # OpenAI: the refusal is the answer
                self._block_delta("text", refusal)
            tool_calls = delta.get("tool_calls")
            if isinstance(tool_calls, list):
                for position, piece in enumerate(tool_calls):
                    if isinstance(piece, dict):
                        self._tool_call_piece(position, piece)
        finish_reason = choice.get("finish_reason")
        if isinstance(finish_reason, str) and finish_reason:
            self._finish_reason = finish_reason
            self._end_blocks()

    def _block_delta(self, kind: Literal["text", "thinking"], delta: str) -> None:
        self.received_content = True
        content = self._partial.content
        block = content[self._open_block] if self._open_block is not None else None
        if not isinstance(block, TextContent if kind == "text" else ThinkingContent):
            self._end_open_block()
            self._end_tool_calls()
            block = TextContent(text="") if kind == "text" else ThinkingContent(thinking="")
            content.append(block)
            self._open_block = len(content) - 1
            self._push(f"{kind}_start", content_index=self._open_block)
        if isinstance(block, TextContent):
            block.text = (block.text or "") + delta
        else:
            block.thinking = (block.thinking or "") + delta
        self._push(f"{kind}_delta", content_index=self._open_block, delta=delta)

    def _tool_call_piece(self, position: int, piece: dict[str, Any]) -> None:
        self.received_content = True
        index = piece.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            index = position
        function = piece.get("function")
        if not isinstance(function, dict):
            function = {}
        call_id, name = piece.get("id"), function.get("name")
        arguments = function.get("arguments")
        open_call = self._open_calls.get(index)
        if open_call is not None and isinstance(call_id, str) and call_id:
            existing = self._partial.content[open_call.content_index]
            if isinstance(existing, ToolCallContent) and existing.id and existing.id != call_id:
                open_call = None  # a provider that reuses index 0 for every call
        if open_call is None:
            self._end_open_block()
            self._partial.content.append(
                ToolCallContent(
                    id=call_id if isinstance(call_id, str) and call_id else _new_call_id(),
                    name=name if isinstance(name, str) else "",
                    arguments={},
                    partial_json="",
                )
            )
            open_call = _OpenToolCall(content_index=len(self._partial.content) - 1)
            self._open_calls[index] = open_call
            self._push("tool_call_start", content_index=open_call.content_index)
        call = self._partial.content[open_call.content_index]
        assert isinstance(call, ToolCallContent)
        if isinstance(name, str) and name and not call.name:
            call.name = name
        if isinstance(arguments, str) and arguments:
            open_call.pieces.append(arguments)
            call.partial_json = (call.partial_json or "") + arguments
            self._push("tool_call_delta", content_index=open_call.content_index, delta=arguments)

    def _end_blocks(self) -> None:
        self._end_open_block()
        self._end_tool_calls()

    def _end_open_block(self) -> None:
        if self._open_block is None:
            return
        index, self._open_block = self._open_block, None
        block = self._partial.content[index]
        if isinstance(block, TextContent):
            self._push("text_end", content_index=index, content=block.text)
        elif isinstance(block, ThinkingContent):
            self._push("thinking_end", content_index=index, content=block.thinking)

    def _end_tool_calls(self) -> None:
        for open_call in sorted(self._open_calls.values(), key=lambda c: c.content_index):
            call = self._partial.content[open_call.content_index]
            assert isinstance(call, ToolCallContent)
            raw = open_call.raw
            if len(raw) > MAX_ARGS_BYTES:  # never parsed on the event loop, never stored whole
                call.arguments, call.partial_json = {}, oversize_marker(len(raw))
                self._push("tool_call_end", content_index=open_call.content_index, tool_call=call)
                continue
            parsed = _parse_arguments(raw)
            # Invalid JSON keeps the raw text so a hook can tell the model what it sent.
            call.arguments, call.partial_json = (parsed, None) if parsed is not None else ({}, raw)
            self._push("tool_call_end", content_index=open_call.content_index, tool_call=call)
        self._open_calls.clear()

    # ------------------------------------------------------------ endings

    async def _http_error(self, response: httpx.Response) -> None:
        self.status = response.status_code
        self.retry_after = parse_retry_after(response.headers.get("retry-after"))
        assert self._chunks is not None
        body = bytearray()
        while len(body) < ERROR_BODY_READ_LIMIT:
            chunk = await self._race(_next_chunk(self._chunks))
            if chunk is None:
                break
            body += chunk
        detail = _error_detail_from_body(bytes(body)) or response.reason_phrase
        await self._fail(f"HTTP {response.status_code}: {detail}", "http")

    async def _finish_normally(self) -> None:
        self._end_blocks()
        reason = _FINISH_REASONS.get(self._finish_reason or "", "stop")
        has_calls = any(isinstance(block, ToolCallContent) for block in self._partial.content)
        if not has_calls and self._model.text_tool_calls and self._finish_reason != "length":
            has_calls = self._take_text_tool_calls()
        if reason == "stop" and has_calls:
            reason = "tool_calls"  # some servers say "stop" after tool calls
        if self._finish_reason == "content_filter":
            self.error_kind = "provider"
            await self._finish("error", "the provider stopped the response: content_filter")
            return
        await self._finish(reason, None)

    def _take_text_tool_calls(self) -> bool:  # provenance rules: text_tool_calls.py
        """Turn tool calls written in the text into structured ones (the text around them kept)."""

        tools = frozenset(
            t["function"]["name"] for t in self._body.get("tools", []) if isinstance(t.get("function"), dict)
        )
        content = self._partial.content
        found: list[ToolCallContent] = []
        for index, block in enumerate(content):
            if not isinstance(block, TextContent) or not block.text:
                continue
            remaining, calls = extract_text_tool_calls(block.text, tools, earlier=self._quotable)
            if not calls:
                continue
            content[index] = TextContent(text=remaining) if remaining else None
            found.extend(ToolCallContent(id=_new_call_id(), name=c.name, arguments=c.arguments) for c in calls)
        for call in found:
            content.append(call)
            position = sum(block is not None for block in content) - 1  # as snapshots count
            self._push("tool_call_start", content_index=position)
            self._push("tool_call_end", content_index=position, tool_call=call)
        self.text_tool_calls = len(found)
        return bool(found)

    def _schedule_fail(self, message: str, kind: ErrorKind) -> None:
        """A failure found while decoding (sync): finish now, close the connection after."""

        if self._final is None:
            self.error_kind = kind
        self._drop_incomplete_tool_calls()
        self._set_final("error", message)

    async def _fail(self, message: str, kind: ErrorKind) -> None:
        if self._final is None:
            self.error_kind = kind
        await self._finish("error", message)

    async def _finish(
        self,
        stop_reason: Literal["stop", "tool_calls", "length", "error", "aborted"],
        error_message: str | None,
    ) -> None:
        if self._final is not None:
            return
        if stop_reason in ("error", "aborted"):
            self._drop_incomplete_tool_calls()
        self._set_final(stop_reason, error_message)
        await self._release()

    def _set_final(self, stop_reason: Any, error_message: str | None) -> None:
        if self._final is not None:
            return
        self._open_block = None
        self._partial.stop_reason = stop_reason
        self._partial.error_message = error_message
        self._partial.usage = convert_usage(self._raw_usage)
        final = self._partial.model_copy(
            update={"content": [block for block in self._partial.content if block is not None]}
        )
        self._final = final
        self._phase = "final"
        if stop_reason in ("error", "aborted"):
            reason = "aborted" if stop_reason == "aborted" else "error"
            self._events.append(
                AssistantMessageEvent(type="error", reason=reason, error=final, partial=final)
            )
        else:
            self._events.append(
                AssistantMessageEvent(type="done", reason=stop_reason, message=final, partial=final)
            )

    def _drop_incomplete_tool_calls(self) -> None:
        """Keep a tool call still streaming only if its arguments already form a JSON object."""

        content = self._partial.content
        for open_call in self._open_calls.values():
            call = content[open_call.content_index]
            parsed = _parse_arguments(open_call.raw) if open_call.raw.strip() else None
            if isinstance(call, ToolCallContent) and parsed is not None:
                call.arguments, call.partial_json = parsed, None
            else:
                content[open_call.content_index] = None
        self._open_calls.clear()

    async def _release(self) -> None:
        if self._abort_waiter is not None:
            self._abort_waiter.cancel()
            self._abort_waiter = None
        response, self._response = self._response, None
        if response is not None:
            await response.aclose()

    # ------------------------------------------------------------ helpers

    def _push(self, event_type: str, **fields: Any) -> None:
        self._events.append(
            AssistantMessageEvent(type=event_type, partial=self._snapshot(), **fields)  # type: ignore[arg-type]
        )

    def _snapshot(self) -> AssistantMessage:
        return self._partial.model_copy(
            update={
                "content": [
                    block.model_copy() for block in self._partial.content if block is not None
                ]
            }
        )


async def _next_chunk(chunks: AsyncIterator[bytes]) -> bytes | None:
    """The next bytes of the body, or None at its end."""

    try:
        return await anext(chunks)
    except StopAsyncIteration:
        return None


async def _close_unclaimed(task: asyncio.Future[Any]) -> None:
    """Close what a finished task returned (an httpx.Response) when nobody will read it."""

    if not task.done() or task.cancelled() or task.exception() is not None:
        return
    close = getattr(task.result(), "aclose", None)
    if close is not None:
        await asyncio.shield(close())


def _discard(awaitable: Awaitable[Any]) -> None:
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()  # a coroutine never awaited would warn


def _content_parts(parts: list[Any]) -> list[tuple[Literal["text", "thinking"], str]]:
    """`delta.content` as a list: `{"type": "text", "text"}` and `{"type": "thinking",
    "thinking": str | [{"type": "text", "text"}]}` parts, in order."""

    out: list[tuple[Literal["text", "thinking"], str]] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and isinstance(part.get("text"), str) and part["text"]:
            out.append(("text", part["text"]))
        elif part.get("type") == "thinking":
            inner = part.get("thinking")
            pieces = [inner] if isinstance(inner, str) else [
                p.get("text") for p in inner if isinstance(p, dict)
            ] if isinstance(inner, list) else []
            text = "".join(p for p in pieces if isinstance(p, str))
            if text:
                out.append(("thinking", text))
    return out


OVERSIZE_PREFIX = "[tool call arguments of "


def oversize_marker(size: int) -> str:
    """What a call's `partial_json` holds when its arguments were too large to take."""

    return f"{OVERSIZE_PREFIX}{size:,} characters: over the {MAX_ARGS_BYTES // 1024} KB limit]"


def _new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds from now: a number of seconds or an HTTP date."""

    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _error_detail_from_body(body: bytes) -> str:
    text = body.decode("utf-8", errors="replace").strip()
    try:
        payload = json.loads(text)
    except ValueError:
        return text[:ERROR_DETAIL_LIMIT]
    detail = _error_detail(payload) if isinstance(payload, dict) else None
    return (detail or text)[:ERROR_DETAIL_LIMIT]


def _error_detail(payload: dict[str, Any]) -> str | None:
    error = payload.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"][:ERROR_DETAIL_LIMIT]
    if isinstance(error, str):
        return error[:ERROR_DETAIL_LIMIT]
    if isinstance(payload.get("message"), str):
        return payload["message"][:ERROR_DETAIL_LIMIT]
    return json.dumps(payload)[:ERROR_DETAIL_LIMIT] if error else None


def _not_the_models(body: dict[str, Any]) -> list[str]:
    """The texts of the request's messages the model did not write (system, user, tool)."""

    texts: list[str] = []
    for message in body.get("messages", []):
        if not isinstance(message, dict) or message.get("role") == "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return texts
