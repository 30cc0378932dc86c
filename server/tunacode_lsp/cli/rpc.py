"""A small JSON-RPC 2.0 peer over a child process's pipes, with LSP's `Content-Length` framing.

The headless client needs a handful of messages, not pygls's client and lsprotocol's
classes (about 0.6 s of imports): requests with a result or an error, notifications both
ways, and answers to the few requests a server sends its client. Messages are plain dicts
(orjson). Handlers run as each message is read, so notifications keep their order. When the
server's stdout ends, every pending request fails with `ConnectionLost`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson

MAX_HEADER_LINE = 4096  # a header line longer than this is not LSP framing
METHOD_NOT_FOUND = -32601


class RpcError(Exception):
    """A JSON-RPC error answer."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class ConnectionLost(Exception):
    """The server's stdout ended (it exited or closed it) before the answer came."""


NotificationHandler = Callable[[str, Any], None]
RequestHandler = Callable[[str, Any], Any]  # returns the result, or raises RpcError


def frame(message: dict[str, Any]) -> bytes:
    body = orjson.dumps(message)
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


async def read_frame(reader: asyncio.StreamReader) -> bytes | None:
    """One message body; None at the end of the stream. Header names are case-insensitive
    (the LSP base protocol allows any case) and headers other than Content-Length are skipped."""

    length: int | None = None
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError:
            return None
        except asyncio.LimitOverrunError as exc:
            raise ConnectionLost(f"a header line longer than {MAX_HEADER_LINE} bytes from the server") from exc
        line = line.strip()
        if not line:
            if length is not None:
                break
            continue
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                raise ConnectionLost(f"a bad Content-Length from the server: {value[:40]!r}") from None
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        return None


class RpcPeer:
    """The client end of one connection: `request`, `notify`, and a reader loop (`serve`)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        write: Callable[[bytes], None],
        *,
        on_notification: NotificationHandler,
        on_request: RequestHandler,
    ) -> None:
        self._reader = reader
        self._write = write
        self._on_notification = on_notification
        self._on_request = on_request
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self.closed = False
        self.close_reason = "the server closed its output"

    def _send(self, message: dict[str, Any]) -> None:
        if self.closed:
            raise ConnectionLost(self.close_reason)
        message["jsonrpc"] = "2.0"
        try:
            self._write(frame(message))
        except (OSError, RuntimeError) as exc:  # a closed pipe
            raise ConnectionLost(str(exc) or type(exc).__name__) from exc

    def request(self, method: str, params: Any = None) -> asyncio.Future[Any]:
        """Send a request; the future gets its result, an RpcError or ConnectionLost."""

        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.closed:
            future.set_exception(ConnectionLost(self.close_reason))
            return future
        self._next_id += 1
        msg_id = self._next_id
        message: dict[str, Any] = {"id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self._pending[msg_id] = future
        future.add_done_callback(lambda _: self._pending.pop(msg_id, None))
        try:
            self._send(message)
        except ConnectionLost as exc:
            future.set_exception(exc)
        return future

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = params
        self._send(message)

    async def serve(self) -> None:
        """Read and dispatch until the stream ends; then fail what is still pending."""

        try:
            while (body := await read_frame(self._reader)) is not None:
                self._dispatch(body)
        except ConnectionLost as exc:
            self.close_reason = str(exc)
        finally:
            self.closed = True
            for future in list(self._pending.values()):
                if not future.done():
                    future.set_exception(ConnectionLost(self.close_reason))
            self._pending.clear()

    def _dispatch(self, body: bytes) -> None:
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError:
            return  # not ours to fix; the answer we wait for will fail or time out
        if not isinstance(message, dict):
            return
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self._answer(message["id"], method, message.get("params"))
            else:
                self._on_notification(method, message.get("params"))
            return
        future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
        if future is None or future.done():
            return
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(RpcError(int(error.get("code", 0)), str(error.get("message", "")), error.get("data")))
        else:
            future.set_result(message.get("result"))

    def _answer(self, msg_id: Any, method: str, params: Any) -> None:
        try:
            result = self._on_request(method, params)
            reply: dict[str, Any] = {"id": msg_id, "result": result}
        except RpcError as exc:
            reply = {"id": msg_id, "error": {"code": exc.code, "message": exc.message}}
        try:
            self._send(reply)
        except ConnectionLost:
            pass
