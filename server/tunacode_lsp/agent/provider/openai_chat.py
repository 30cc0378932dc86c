"""Our OpenAI chat.completions streaming provider for tinyagent: httpx, async, abortable.

``stream_openai_chat`` implements tinyagent's ``StreamFn`` for OpenAI-compatible servers
(local servers, OpenRouter, ``openai:`` with ``openaiApi: "chat"``). Unlike tinyagent's Rust
binding it closes the HTTP connection the moment the abort signal is set, has a read
timeout (a stalled stream becomes an error), and exposes the HTTP status and Retry-After
for the retry layer. Three parts: the request (openai_request.py), the SSE decoding
(sse.py), and this module, which drives the connection and turns chat-completions chunks
into the shared stream state machine (assembly.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import weakref
from collections.abc import AsyncIterator
from typing import Any, Literal

import httpx
from tinyagent import Context, Model, SimpleStreamOptions, TextContent, ToolCallContent

from tunacode_lsp.agent.provider.assembly import (
    OVERSIZE_PREFIX,
    AssembledStream,
    ErrorKind,
    new_call_id,
    next_chunk,
    oversize_marker,
)
from tunacode_lsp.agent.provider.assembly import Aborted as _Aborted
from tunacode_lsp.agent.provider.cache_breakpoints import same_head_cut
from tunacode_lsp.agent.provider.http_errors import error_detail, error_detail_from_body, parse_retry_after
from tunacode_lsp.agent.provider.model import OpenAICompatModel
from tunacode_lsp.agent.provider.openai_request import (
    THOUGHT_SIGNATURE,
    EncodedBody,
    build_headers,
    build_request_body,
    convert_messages,
    convert_usage,
    encode_request_body,
    sends_reasoning_back,
)
from tunacode_lsp.agent.provider.sse import SSEDecoder, SSEEventTooLarge, stacked_encodings
from tunacode_lsp.agent.provider.text_tool_calls import extract_text_tool_calls
from tunacode_lsp.core.abort import race_abort
from tunacode_lsp.core.text import loads_text

__all__ = [
    "OVERSIZE_PREFIX",
    "EncodedBody",
    "ErrorKind",
    "OpenAIChatStream",
    "OpenAICompatModel",
    "SSEDecoder",
    "build_headers",
    "build_request_body",
    "close_shared_client",
    "convert_messages",
    "convert_usage",
    "encode_request_body",
    "oversize_marker",
    "parse_retry_after",
    "sends_reasoning_back",
    "shared_client",
    "stream_openai_chat",
]

ERROR_BODY_READ_LIMIT = 64 * 1024
AFTER_DONE_DRAIN_SECONDS = 1.0  # a server that holds the body open after [DONE] is not waited on

# ---------------------------------------------------------------- shared client

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


def shared_client() -> httpx.AsyncClient:
    """The AsyncClient of the running event loop (created on first use, reused after)."""

    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        from tunacode_lsp.agent.provider.tls import lazy_trust_context

        # its certificate store loads with the first TLS connection (provider/tls.py): an http://
        # endpoint never pays for it
        client = httpx.AsyncClient(timeout=None, limits=httpx.Limits(max_keepalive_connections=20),
                                   verify=lazy_trust_context())
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
            context, messages=same_head_cut(context.messages, list(context.messages)), tools=None if context.tools is None else list(context.tools)
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



def thought_signature_of(piece: dict[str, Any]) -> str | None:
    extra = piece.get("extra_content")
    google = extra.get("google") if isinstance(extra, dict) else None
    signature = google.get(THOUGHT_SIGNATURE) if isinstance(google, dict) else None
    return signature if isinstance(signature, str) and signature else None


_FINISH_REASONS: dict[str, Literal["stop", "tool_calls", "length"]] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
}


class OpenAIChatStream(AssembledStream):
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
        super().__init__(model=model, signal=signal)
        self._quotable = quotable or []  # earlier texts the model did not write (text_tool_calls.py)
        self._partial.usage = convert_usage(None)
        self._body = body
        self._content = content
        self._headers = headers
        self._client = client
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None  # the response body
        self._decoder = SSEDecoder()
        self._finish_reason: str | None = None
        self._saw_done = False
        self._raw_usage: dict[str, Any] | None = None

    def _usage(self) -> dict[str, Any]:
        return convert_usage(self._raw_usage)

    async def _close(self) -> None:
        response, self._response = self._response, None
        if response is not None:
            await response.aclose()

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
        refused = stacked_encodings(self._response.headers.get("content-encoding", ""))
        if refused:  # before any body is read, an error's too
            await self._fail(f"model stream failed: {refused}", "malformed")
            return
        if self._response.status_code >= 400:
            await self._http_error(self._response)
            return
        self._phase = "stream"

    async def _read(self) -> None:
        assert self._chunks is not None
        if self._saw_done:
            await self._drain_after_done()
            return
        chunk = await self._race(next_chunk(self._chunks))
        if chunk is None:
            await self._stream_ended()
            return
        try:
            payloads = self._decoder.feed(chunk)
        except SSEEventTooLarge as exc:  # an endless line from a gateway: not the server's memory
            await self._fail(f"model stream failed: {exc}", "malformed")
            return
        self._on_payloads(payloads)
        if self._final is not None:
            await self._release()  # a malformed or error chunk ended the stream

    async def _drain_after_done(self) -> None:
        """Read the body's end after [DONE] so the connection can be reused; the message is
        complete, so nothing that happens here (error, abort, a server that keeps the body
        open) turns it into an error."""

        assert self._chunks is not None
        try:
            while await self._race(next_chunk(self._chunks), AFTER_DONE_DRAIN_SECONDS) is not None:
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


    # ------------------------------------------------------------ chunks -> events

    def _decoded_chunk(self, data: str) -> dict[str, Any] | None:
        """One event's JSON object; None (the stream fails as malformed) when it is not one."""

        try:
            chunk = loads_text(data)
        except ValueError:
            chunk = None
        if not isinstance(chunk, dict):
            self._schedule_fail(f"malformed stream chunk: {data[:200]}", "malformed")
            return None
        return chunk

    def _on_data(self, data: str) -> None:
        if self._saw_done:
            return
        if data.strip() == "[DONE]":
            self._saw_done = True
            self._end_blocks()
            return
        chunk = self._decoded_chunk(data)
        if chunk is None:
            return
        if isinstance(chunk.get("usage"), dict):
            self._raw_usage = chunk["usage"]  # also when the chunk carries an error (OpenRouter)
        if chunk.get("error"):
            self._schedule_fail(f"model error in stream: {error_detail(chunk)}", "provider")
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


    def _tool_call_piece(self, position: int, piece: dict[str, Any]) -> None:
        index = piece.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            index = position
        function = piece.get("function")
        if not isinstance(function, dict):
            function = {}
        call_id, name = piece.get("id"), function.get("name")
        open_id = self._open_call_id(index)
        # a provider that reuses index 0 for every call: a new id starts a new call
        new = open_id is not None and isinstance(call_id, str) and bool(call_id) and open_id != call_id
        arguments = function.get("arguments")
        self._tool_call(index, call_id, name, arguments if isinstance(arguments, str) else None, new=new)
        signature = thought_signature_of(piece)
        if signature is not None:
            self._set_tool_call_field(index, THOUGHT_SIGNATURE, signature)

    # ------------------------------------------------------------ endings

    async def _http_error(self, response: httpx.Response) -> None:
        self.status = response.status_code
        self.retry_after = parse_retry_after(response.headers.get("retry-after"))
        assert self._chunks is not None
        body = bytearray()
        while len(body) < ERROR_BODY_READ_LIMIT:
            chunk = await self._race(next_chunk(self._chunks))
            if chunk is None:
                break
            body += chunk
        detail = error_detail_from_body(bytes(body)) or response.reason_phrase
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

    def _take_text_tool_calls(self) -> bool:
        """Turn tool calls written at the end of the text into structured ones (the text before
        them kept), unless quoted from an earlier input (provenance: text_tool_calls.py)."""

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
            found.extend(ToolCallContent(id=new_call_id(), name=c.name, arguments=c.arguments) for c in calls)
        for call in found:
            content.append(call)
            position = sum(block is not None for block in content) - 1  # as snapshots count
            self._push("tool_call_start", content_index=position)
            self._push("tool_call_end", content_index=position, tool_call=call)
        self.text_tool_calls = len(found)
        return bool(found)


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
