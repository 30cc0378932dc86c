"""The stream of an adapter built on a vendor SDK (anthropic, openai): the shared part.

The SDK opens the call and decodes its events; this class races every wait against the
abort signal (assembly.py), closes the SDK's stream the moment it is set, maps the SDK's
errors to the retry layer's status/kind, and says which variable to check on 401/403.
The SDK's own retries are off (`max_retries=0`): stream.py retries every provider alike.
The SDKs speak httpx2; one AsyncClient per event loop is shared by every SDK client. Its
event streams are bounded per event (sse.MAX_EVENT_BYTES, `bounded_events`): the SDKs' own
decoders keep an event's bytes whole (and re-copy them per line) until its blank line comes.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from tunacode_lsp.agent.provider.assembly import Aborted, AssembledStream
from tunacode_lsp.agent.provider.http_errors import ERROR_DETAIL_LIMIT, parse_retry_after
from tunacode_lsp.agent.provider.model import ProviderModel
from tunacode_lsp.agent.provider.sse import MAX_EVENT_BYTES, SSEEventTooLarge, StreamRefused, stacked_encodings

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()


def shared_http_client() -> Any:
    """The running loop's httpx2.AsyncClient for SDK clients (created on first use)."""

    import httpx2

    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        client = httpx2.AsyncClient(
            timeout=None, limits=httpx2.Limits(max_keepalive_connections=20),
            event_hooks={"response": [bounded_events]},
        )
        _clients[loop] = client
    return client


_EVENT_ENDS = (b"\n\n", b"\r\r", b"\r\n\r\n")


def _bounded_event_stream(inner: Any, refused: str | None = None) -> Any:
    """A response's raw bytes, passed on as they come, that fail with SSEEventTooLarge once
    MAX_EVENT_BYTES arrive without the blank line that ends an event."""

    import httpx2

    class BoundedEventStream(httpx2.AsyncByteStream):
        async def __aiter__(self) -> Any:
            async for chunk in _bounded_chunks(inner, refused):
                yield chunk

        async def aclose(self) -> None:
            await inner.aclose()

    return BoundedEventStream()


async def _bounded_chunks(inner: Any, refused: str | None = None) -> Any:
    if refused:
        raise StreamRefused(refused)
    pending = 0  # bytes since the last blank line
    tail = b""  # the previous chunk's last bytes: a blank line may straddle two chunks
    async for chunk in inner:
        window = tail + chunk
        end = max(window.rfind(marker) + len(marker) if marker in window else -1 for marker in _EVENT_ENDS)
        pending = len(window) - end if end >= 0 else pending + len(chunk)
        if pending > MAX_EVENT_BYTES:
            raise SSEEventTooLarge(
                f"one server-sent event is over {MAX_EVENT_BYTES // (1024 * 1024)} MB: the stream was stopped"
            )
        tail = window[-3:]
        yield chunk


async def bounded_events(response: Any) -> None:
    """httpx2 response hook: an event stream's body is read through _bounded_event_stream."""

    refused = stacked_encodings(response.headers.get("content-encoding", ""))
    if refused or response.headers.get("content-type", "").lower().startswith("text/event-stream"):
        response.stream = _bounded_event_stream(response.stream, refused)


async def close_shared_http_client() -> None:
    client = _clients.pop(asyncio.get_running_loop(), None)
    if client is not None:
        await client.aclose()


def sdk_timeout(model: ProviderModel) -> Any:
    import httpx2

    return httpx2.Timeout(
        connect=model.connect_timeout, read=model.read_timeout, write=model.read_timeout, pool=model.connect_timeout
    )


class MissingExtra(Exception):
    """A provider's optional SDK dependency is not installed."""


class SdkStream(AssembledStream):
    """A StreamResponse over an SDK's async event stream; subclasses decode its events."""

    def __init__(
        self,
        *,
        model: ProviderModel,
        signal: asyncio.Event | None,
        open_stream: Callable[[], Awaitable[Any]],
        key_hint: str | None,
    ) -> None:
        super().__init__(model=model, signal=signal)
        self._open_stream = open_stream
        self._key_hint = key_hint
        self._sdk: Any = None
        self._events_iter: Any = None

    async def _close(self) -> None:
        sdk, self._sdk = self._sdk, None
        if sdk is not None:
            await sdk.close()

    def _on_event(self, event: Any) -> None:
        raise NotImplementedError

    async def _stream_ended(self) -> None:
        raise NotImplementedError

    async def _advance(self) -> None:
        try:
            if self._phase == "new":
                self._phase = "connect"
                self._push("start")
            elif self._phase == "connect":
                self._sdk = await self._race(self._open_stream())
                self._events_iter = self._sdk.__aiter__()
                self._phase = "stream"
            elif self._phase == "stream":
                try:
                    event = await self._race(anext(self._events_iter))
                except StopAsyncIteration:
                    await self._stream_ended()
                    return
                self._on_event(event)
                if self._final is not None:
                    await self._release()
        except Aborted:
            self.error_kind = "aborted"
            await self._finish("aborted", "aborted")
        except asyncio.CancelledError:
            await self._release()
            raise
        except MissingExtra as exc:
            await self._fail(str(exc), "other")
        except Exception as exc:  # noqa: BLE001 - errors are data across the agent boundary
            await self._sdk_error(exc)

    async def _sdk_error(self, exc: Exception) -> None:
        """An SDK or transport error -> the retry layer's status/kind and a readable line."""

        name = type(exc).__name__
        status = getattr(exc, "status_code", None)
        if isinstance(status, int) and status >= 400:
            self.status = status
            response = getattr(exc, "response", None)
            headers = getattr(response, "headers", None)
            self.retry_after = parse_retry_after(headers.get("retry-after") if headers is not None else None)
            detail = sdk_error_detail(exc)
            if status in (401, 403) and self._key_hint:
                detail += f" (check {self._key_hint})"
            await self._fail(f"HTTP {status}: {detail}", "http")
            return
        if isinstance(exc, StreamRefused):  # an endless line or a bomb from a gateway: not the server's memory
            await self._fail(f"model stream failed: {exc}", "malformed")
            return
        kind_of_body = error_type(exc)
        if kind_of_body in ("overloaded_error", "rate_limit_error", "api_error"):
            # an error event inside a 200 stream: retried like its HTTP status when no content came
            self.status = {"overloaded_error": 529, "rate_limit_error": 429}.get(kind_of_body, 500)
            await self._fail(f"model error in stream: {sdk_error_detail(exc)}", "provider")
            return
        if "Timeout" in name:
            await self._fail(f"model stream stalled: no data for {self._model.read_timeout:g} s", "stall")
        elif name in ("APIConnectionError", "ConnectError") and self._phase != "stream":
            cause = exc.__cause__ or exc
            await self._fail(f"cannot connect to {self._model.base_url or self._model.provider}: {cause}", "connect")
        elif name in ("APIConnectionError", "RemoteProtocolError", "ReadError") or (
            self._phase == "stream" and "Connection" in name
        ):
            await self._fail(f"model connection closed unexpectedly: {exc or name}", "reset")
        elif isinstance(exc, ImportError):
            await self._fail(f"model client failed to load: {exc}", "other")
        else:
            await self._fail(f"model stream failed: {name}: {str(exc)[:ERROR_DETAIL_LIMIT]}", "other")


def error_type(exc: Exception) -> str | None:
    """The `error.type` of an SDK error's body (`overloaded_error`, `rate_limit_error`...)."""

    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("type"), str):
            return str(error["type"])
    return None


def sdk_error_detail(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])[:ERROR_DETAIL_LIMIT]
    return (str(getattr(exc, "message", "") or exc) or type(exc).__name__)[:ERROR_DETAIL_LIMIT]
