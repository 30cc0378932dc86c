"""Newline-delimited JSON-RPC on stdio, checked before the SDK sees a message.

The SDK's own stdio transport logs and skips a line that is not JSON, and a message that
is not an object (or has an id that is not a string or number) breaks its receive loop.
Here such a line is answered as JSON-RPC 2.0 asks (-32700 parse error, -32600 invalid
request, id null when it cannot be known) and the connection goes on.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from tunacode_lsp.core.redact import redact_message

log = logging.getLogger(__name__)

UNREDACTED_METHODS = frozenset({"fs/write_text_file"})  # the text of the user's own file
MAX_LINE_BYTES = 50 * 1024 * 1024  # a prompt may carry images
PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def error_response(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def _usable_id(value: Any) -> bool:
    return value is None or (isinstance(value, int | str) and not isinstance(value, bool))


def check_message(message: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the message, None) when the SDK can take it, else (None, the error answer to send, or
    None when the offending message was a response or notification and gets no answer)."""

    if not isinstance(message, dict):
        return None, error_response(None, INVALID_REQUEST, f"Invalid request: expected a JSON object, got {type(message).__name__}")
    msg_id = message.get("id")
    answerable = _usable_id(msg_id)
    if "id" in message and not answerable:
        return None, error_response(None, INVALID_REQUEST, "Invalid request: id must be a string, a number or null")
    method = message.get("method")
    if "method" in message and not isinstance(method, str):
        return None, error_response(msg_id, INVALID_REQUEST, "Invalid request: method must be a string")
    if "method" in message and "params" in message and not isinstance(message["params"], dict | list | type(None)):
        if "id" in message:
            return None, error_response(msg_id, INVALID_REQUEST, "Invalid request: params must be an object")
        return None, None
    if "method" not in message and "id" not in message:
        return None, error_response(None, INVALID_REQUEST, "Invalid request: neither a method nor an id")
    return message, None


def encode_line(message: dict[str, Any]) -> bytes:
    """One JSON line, valid UTF-8 always: text with a lone surrogate (a hostile model can send
    one) is written with \\u escapes instead of bytes no decoder accepts."""

    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


class CheckedStdioTransport:
    """The SDK's `Transport` (send/receive/close of decoded messages) over byte streams."""

    def __init__(self, reader: asyncio.StreamReader, writer: Any) -> None:
        """`writer`: an asyncio.StreamWriter, or anything with write / async drain / close."""

        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()
        self._closed = False
        self._open_requests: set[Any] = set()  # ids of the client's requests not answered yet
        self._all_answered = asyncio.Event()
        self._all_answered.set()

    async def send(self, message: dict[str, Any]) -> None:
        # the one choke point of this channel: no secret in any update, answer or question
        data = encode_line(redact_message(message, keep=UNREDACTED_METHODS))
        async with self._lock:  # one whole line at a time
            if self._closed:
                raise ConnectionError("the connection is closed")
            self._writer.write(data)
            await self._writer.drain()
        if "method" not in message and ("result" in message or "error" in message):
            self._open_requests.discard(message.get("id"))
            if not self._open_requests:
                self._all_answered.set()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if line is None:
                return None
            line = line.strip()
            if not line:
                continue
            try:
                decoded = json.loads(line)
            except (ValueError, UnicodeDecodeError) as exc:
                log.warning("a line that is not JSON: %s", exc)
                await self._answer(error_response(None, PARSE_ERROR, f"Parse error: {exc}"))
                continue
            message, error = check_message(decoded)
            if error is not None:
                await self._answer(error)
            if message is not None:
                if "method" in message and "id" in message:
                    self._open_requests.add(message["id"])
                    self._all_answered.clear()
                return message

    async def _answer(self, payload: dict[str, Any]) -> None:
        try:
            await self.send(payload)
        except (ConnectionError, OSError) as exc:
            log.info("could not answer a bad message: %s", exc)

    async def _read_line(self) -> bytes | None:
        """One line; an over-long line is skipped to its end and answered -32600."""

        try:
            return await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:  # the last line, without a newline
            return exc.partial or None
        except asyncio.LimitOverrunError:
            while True:  # drop the rest of this line
                try:
                    await self._reader.readuntil(b"\n")
                    break
                except asyncio.LimitOverrunError as exc:
                    await self._reader.readexactly(exc.consumed)
                except asyncio.IncompleteReadError:
                    return None
            await self._answer(error_response(None, INVALID_REQUEST, f"Invalid request: a message over {MAX_LINE_BYTES} bytes"))
            return b""

    async def answered(self, timeout: float) -> bool:
        """Wait (bounded) until every request the client sent has been answered."""

        try:
            await asyncio.wait_for(self._all_answered.wait(), timeout)
            return True
        except TimeoutError:
            return False

    async def close(self) -> None:
        async with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._writer.close()
            except (OSError, RuntimeError):
                pass
