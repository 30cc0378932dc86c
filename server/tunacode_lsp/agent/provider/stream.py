"""The stream function we give tinyagent: our abortable provider, plus retry.

Provider errors do not raise: they end the stream with an assistant message whose
`stop_reason` is "error". So retry looks at that message: a 429, a 5xx or a failed
connection that happens before any token arrived is retried with exponential backoff
(honouring Retry-After), each retry announced through `notify`. Once content has arrived
the stream is committed and passes through untouched. The backoff wait is abortable.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

from tinyagent import AssistantMessage, AssistantMessageEvent, Context, Model, SimpleStreamOptions, TextContent
from tinyagent.agent_types import ZERO_USAGE

from tunacode_lsp.agent.provider.registry import stream_model
from tunacode_lsp.core.abort import race_abort

RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
CONTENT_EVENTS = frozenset(
    {"text_start", "text_delta", "thinking_start", "thinking_delta", "tool_call_start", "tool_call_delta"}
)
FINAL_EVENTS = frozenset({"done", "error"})
BASE_DELAY = 0.5
MAX_DELAY = 30.0
MAX_RETRY_AFTER = 120.0

CONTEXT_LENGTH_MARKERS = (
    "context length",
    "context_length",
    "maximum context",
    "context window",
    "too many tokens",
    "prompt is too long",
    "reduce the length",
)

ProviderFn = Callable[[Model, Context, SimpleStreamOptions], Awaitable[Any]]


def backoff_delay(attempt: int, retry_after: float | None) -> float:
    if retry_after is not None and retry_after >= 0:
        return min(retry_after, MAX_RETRY_AFTER)
    delay = min(BASE_DELAY * (2**attempt), MAX_DELAY)
    return delay * (0.8 + 0.4 * random.random())


def is_retryable(stream: Any, final: AssistantMessage) -> bool:
    if final.stop_reason != "error" or getattr(stream, "received_content", False):
        return False
    status = getattr(stream, "status", None)
    if status is not None:
        return status in RETRYABLE_STATUSES
    return getattr(stream, "error_kind", None) in {"connect", "reset"}


def explain_error(message: str | None) -> str:
    """Make a provider error readable; say plainly when the context window is full."""

    text = (message or "the model provider returned an error").strip()
    if any(marker in text.lower() for marker in CONTEXT_LENGTH_MARKERS):
        return (
            "The conversation no longer fits the model's context window. Start a new session, "
            f"or fork this one from an earlier message (tunacode.session.fork). Provider said: {text}"
        )
    return text


class _StaticStream:
    """A finished stream: used when an abort lands during a retry wait."""

    def __init__(self, message: AssistantMessage) -> None:
        self._events = [
            AssistantMessageEvent(type="start", partial=message),
            AssistantMessageEvent(type="error", reason="aborted", error=message, partial=message),
        ]
        self._message = message

    def __aiter__(self) -> _StaticStream:
        return self

    async def __anext__(self) -> AssistantMessageEvent:
        if not self._events:
            raise StopAsyncIteration
        return self._events.pop(0)

    async def result(self) -> AssistantMessage:
        return self._message


def aborted_message(model: Model) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text="")],
        stop_reason="aborted",
        error_message="aborted",
        api=model.api,
        provider=model.provider,
        model=model.id,
        usage=ZERO_USAGE,
        timestamp=int(time.time() * 1000),
    )


class RetryingStream:
    """tinyagent StreamResponse that retries the provider until content arrives."""

    def __init__(
        self,
        provider: ProviderFn,
        model: Model,
        context: Context,
        options: SimpleStreamOptions,
        *,
        max_retries: int,
        notify: Callable[[str], None],
        on_text_tool_calls: Callable[[], None] | None = None,
    ) -> None:
        self._on_text_tool_calls = on_text_tool_calls
        self._provider = provider
        self._model = model
        self._context = context
        self._options = options
        self._max_retries = max_retries
        self._notify = notify
        self._inner: Any = None
        self._buffer: list[AssistantMessageEvent] = []
        self._opened = False

    async def _wait_or_abort(self, delay: float) -> bool:
        """Sleep for a backoff delay; True when an abort arrived first."""

        return (await race_abort(asyncio.sleep(delay), self._options.signal)).aborted

    async def _open(self) -> None:
        self._opened = True
        attempt = 0
        while True:
            inner = await self._provider(self._model, self._context, self._options)
            buffered: list[AssistantMessageEvent] = []
            last_type = None
            async for event in inner:
                buffered.append(event)
                last_type = event.type
                if last_type in CONTENT_EVENTS or last_type in FINAL_EVENTS:
                    break
            if last_type == "error":
                final = await inner.result()
                signal = self._options.signal
                aborted = signal is not None and signal.is_set()
                if not aborted and attempt < self._max_retries and is_retryable(inner, final):
                    delay = backoff_delay(attempt, getattr(inner, "retry_after", None))
                    attempt += 1
                    self._notify(
                        f"Model request failed ({explain_error(final.error_message)[:200]}); "
                        f"retrying in {delay:.1f} s (retry {attempt} of {self._max_retries})"
                    )
                    await _close(inner)
                    if await self._wait_or_abort(delay):
                        self._inner = _StaticStream(aborted_message(self._model))
                        return
                    continue
                if final.stop_reason == "error":
                    final.error_message = explain_error(final.error_message)
            self._inner = inner
            self._buffer = buffered
            return

    def __aiter__(self) -> RetryingStream:
        return self

    async def __anext__(self) -> AssistantMessageEvent:
        if not self._opened:
            await self._open()
        event = self._buffer.pop(0) if self._buffer else await self._inner.__anext__()
        if event.type == "done" and getattr(self._inner, "text_tool_calls", 0) and self._on_text_tool_calls:
            self._on_text_tool_calls()
        return event

    async def result(self) -> AssistantMessage:
        if not self._opened:
            await self._open()
        return await self._inner.result()


async def _close(stream: Any) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()


def make_stream_fn(
    *,
    signal: asyncio.Event,
    max_retries: int,
    notify: Callable[[str], None],
    on_model_call: Callable[[], None],
    on_text_tool_calls: Callable[[], None] | None = None,
    provider: ProviderFn = stream_model,
) -> Callable[[Model, Context, SimpleStreamOptions], Awaitable[RetryingStream]]:
    """A tinyagent StreamFn bound to one request's abort signal and retry policy."""

    async def stream_fn(model: Model, context: Context, options: SimpleStreamOptions) -> RetryingStream:
        on_model_call()
        options = options.model_copy(update={"signal": signal})
        return RetryingStream(
            provider, model, context, options,
            max_retries=max_retries, notify=notify, on_text_tool_calls=on_text_tool_calls,
        )

    return stream_fn
