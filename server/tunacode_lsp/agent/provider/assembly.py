"""The stream state machine every adapter shares: wire deltas -> tinyagent events.

`AssembledStream` is a tinyagent StreamResponse. An adapter subclass reads its wire API
(`_advance`: connect, then read one piece at a time) and reports what it decoded through
`_block_delta` (text, thinking), `_tool_call` (a call's id, name and argument pieces),
`_end_blocks` and `_finish`/`_fail`; this class builds the partial message, the
start/delta/end events and the final `done` or `error` event.

Every wait goes through `_race`, which raises `Aborted` the moment the abort signal is
set and cancels the wait, so the adapter closes its connection at once (`_close`).
Errors never raise out of the stream: they end it with an `error` event whose message
has `stop_reason` `error` or `aborted` and the content so far.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Hashable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from tinyagent import AssistantMessage, AssistantMessageEvent, TextContent, ToolCallContent
from tinyagent.agent_types import ThinkingContent

from tunacode_lsp.agent.provider.model import ProviderModel
from tunacode_lsp.core.text import loads_text
from tunacode_lsp.tools.limits import MAX_ARGS_BYTES

T = TypeVar("T")

# Why a stream ended in error, for the retry layer. "connect": no connection was made;
# "reset": the connection closed before the response finished; "stall": no data for
# read_timeout; "http": an HTTP error status (see `status`); "malformed": a chunk that is
# not JSON; "provider": an error sent inside the stream; "closed": aclose() by the caller.
ErrorKind = Literal[
    "connect", "reset", "stall", "http", "malformed", "provider", "closed", "aborted", "other"
]
StopReason = Literal["stop", "tool_calls", "length", "error", "aborted"]

OVERSIZE_PREFIX = "[tool call arguments of "


class Aborted(Exception):
    """The abort signal was set while we waited."""


@dataclass
class OpenToolCall:
    content_index: int
    pieces: list[str] = field(default_factory=list)

    @property
    def raw(self) -> str:
        return "".join(self.pieces)


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """The arguments as a JSON object, or None when the text is not one."""

    if not raw.strip():
        return {}
    try:
        parsed = loads_text(raw)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def oversize_marker(size: int) -> str:
    """What a call's `partial_json` holds when its arguments were too large to take."""

    return f"{OVERSIZE_PREFIX}{size:,} characters: over the {MAX_ARGS_BYTES // 1024} KB limit]"


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


MAX_REPORTED_TOKENS = 10 ** 15  # a token count above this is a provider's nonsense, held at this


def bounded_usage(usage: dict[str, Any]) -> dict[str, Any]:
    """A call's usage with every token count an int in [0, MAX_REPORTED_TOKENS]: a provider
    or gateway that reports a 400-digit count (JSON allows it) ended the request with an
    internal error (no float holds it; the session store refuses ints over 64 bits). Held at
    the bound, it still prices the call high enough for `maxCost` to stop the next one."""

    for name in ("input", "output", "cache_read", "cache_write", "total_tokens"):
        value = usage.get(name)
        count = value if isinstance(value, int) and not isinstance(value, bool) else 0
        usage[name] = min(max(count, 0), MAX_REPORTED_TOKENS)
    return usage


def empty_usage() -> dict[str, Any]:
    return {
        "input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "total_tokens": 0,
        "cost": {"input": 0.0, "output": 0.0, "cache_read": 0.0, "cache_write": 0.0, "total": 0.0},
    }


class AssembledStream:
    """The partial message, its events and the abortable waits of one model call."""

    def __init__(self, *, model: ProviderModel, signal: asyncio.Event | None) -> None:
        self.status: int | None = None
        self.retry_after: float | None = None
        self.received_content = False
        self.error_kind: ErrorKind | None = None
        self.text_tool_calls = 0  # tool calls found in the text of the final message
        self._model = model
        self._signal = signal
        self._partial = AssistantMessage(
            content=[],
            api=model.api,
            provider=model.provider,
            model=model.id,
            usage=empty_usage(),
            timestamp=int(time.time() * 1000),
        )
        self._events: deque[AssistantMessageEvent] = deque()
        self._phase: Literal["new", "connect", "stream", "final"] = "new"
        self._final: AssistantMessage | None = None
        self._open_block: int | None = None  # index of the text/thinking block being streamed
        self._open_calls: dict[Hashable, OpenToolCall] = {}
        self._abort_waiter: asyncio.Future[Any] | None = None

    # ------------------------------------------------------------ StreamResponse

    def __aiter__(self) -> AssembledStream:
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

    # ------------------------------------------------------------ for the adapter

    async def _advance(self) -> None:
        raise NotImplementedError

    async def _close(self) -> None:
        """Close the adapter's connection (idempotent)."""

    def _usage(self) -> dict[str, Any]:
        """The final message's usage (tinyagent's usage dict)."""

        return empty_usage()

    async def _race(self, awaitable: Awaitable[T], timeout: float | None = None) -> T:
        """Await `awaitable`, but raise Aborted as soon as the abort signal is set."""

        if self._signal is None and timeout is None:
            return await awaitable
        if self._signal is not None and self._signal.is_set():
            discard(awaitable)
            raise Aborted()
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
                await close_unclaimed(task)
        if self._signal is not None and self._signal.is_set():
            raise Aborted()
        if task.cancelled():
            raise TimeoutError()
        return task.result()

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

    def _open_block_content(self) -> TextContent | ThinkingContent | None:
        """The text or thinking block being streamed (an adapter adds its signature)."""

        if self._open_block is None:
            return None
        block = self._partial.content[self._open_block]
        return block if isinstance(block, TextContent | ThinkingContent) else None

    def _add_block(self, block: ThinkingContent | TextContent) -> None:
        """A whole block that arrives in one piece (Anthropic's redacted thinking)."""

        self.received_content = True
        self._end_open_block()
        self._partial.content.append(block)
        index = len(self._partial.content) - 1
        kind = "text" if isinstance(block, TextContent) else "thinking"
        self._push(f"{kind}_start", content_index=index)
        self._push(f"{kind}_end", content_index=index, content=getattr(block, kind))

    def _set_tool_call_field(self, key: Hashable, field: str, value: str) -> None:
        """A provider's own field of the open tool call `key`, kept with the stored call (the
        message model allows extra fields) so the adapter can send it back."""

        open_call = self._open_calls.get(key)
        if open_call is not None:
            setattr(self._partial.content[open_call.content_index], field, value)

    def _tool_call(
        self, key: Hashable, call_id: str | None, name: str | None, arguments: str | None, *, new: bool = False
    ) -> None:
        """A piece of the tool call `key` (its id and name arrive once, its arguments in pieces).

        `new`: the piece starts a new call even if `key` is open (a provider that reuses
        index 0 for every call)."""

        self.received_content = True
        if new:
            self._end_tool_calls(key)
        open_call = self._open_calls.get(key)
        if open_call is None:
            self._end_open_block()
            self._partial.content.append(
                ToolCallContent(
                    id=call_id if isinstance(call_id, str) and call_id else new_call_id(),
                    name=name if isinstance(name, str) else "",
                    arguments={},
                    partial_json="",
                )
            )
            open_call = OpenToolCall(content_index=len(self._partial.content) - 1)
            self._open_calls[key] = open_call
            self._push("tool_call_start", content_index=open_call.content_index)
        call = self._partial.content[open_call.content_index]
        assert isinstance(call, ToolCallContent)
        if isinstance(name, str) and name and not call.name:
            call.name = name
        if isinstance(arguments, str) and arguments:
            open_call.pieces.append(arguments)
            call.partial_json = (call.partial_json or "") + arguments
            self._push("tool_call_delta", content_index=open_call.content_index, delta=arguments)

    def _open_call_id(self, key: Hashable) -> str | None:
        open_call = self._open_calls.get(key)
        if open_call is None:
            return None
        call = self._partial.content[open_call.content_index]
        return call.id if isinstance(call, ToolCallContent) else None

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

    def _end_tool_calls(self, key: Hashable | None = None) -> None:
        """End every open call (or only `key`): parse its arguments."""

        keys = list(self._open_calls) if key is None else [key] if key in self._open_calls else []
        for open_call in sorted((self._open_calls[k] for k in keys), key=lambda c: c.content_index):
            call = self._partial.content[open_call.content_index]
            assert isinstance(call, ToolCallContent)
            raw = open_call.raw
            if len(raw) > MAX_ARGS_BYTES:  # never parsed on the event loop, never stored whole
                call.arguments, call.partial_json = {}, oversize_marker(len(raw))
                self._push("tool_call_end", content_index=open_call.content_index, tool_call=call)
                continue
            parsed = parse_arguments(raw)
            # Invalid JSON keeps the raw text so a hook can tell the model what it sent.
            call.arguments, call.partial_json = (parsed, None) if parsed is not None else ({}, raw)
            self._push("tool_call_end", content_index=open_call.content_index, tool_call=call)
        for k in keys:
            del self._open_calls[k]

    def _has_tool_calls(self) -> bool:
        return any(isinstance(block, ToolCallContent) for block in self._partial.content)

    # ------------------------------------------------------------ endings

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

    async def _finish(self, stop_reason: StopReason, error_message: str | None) -> None:
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
        self._partial.usage = bounded_usage(self._usage())
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
            parsed = parse_arguments(open_call.raw) if open_call.raw.strip() else None
            if isinstance(call, ToolCallContent) and parsed is not None:
                call.arguments, call.partial_json = parsed, None
            else:
                content[open_call.content_index] = None
        self._open_calls.clear()

    async def _release(self) -> None:
        if self._abort_waiter is not None:
            self._abort_waiter.cancel()
            self._abort_waiter = None
        await self._close()

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


async def next_chunk(chunks: AsyncIterator[bytes]) -> bytes | None:
    """The next bytes of the body, or None at its end."""

    try:
        return await anext(chunks)
    except StopAsyncIteration:
        return None


async def close_unclaimed(task: asyncio.Future[Any]) -> None:
    """Close what a finished task returned (a response or an SDK stream) when nobody will read it."""

    if not task.done() or task.cancelled() or task.exception() is not None:
        return
    result = task.result()
    close = getattr(result, "aclose", None) or getattr(result, "close", None)
    if close is not None:
        closing = close()
        if asyncio.iscoroutine(closing):
            await asyncio.shield(closing)


def discard(awaitable: Awaitable[Any]) -> None:
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()  # a coroutine never awaited would warn
