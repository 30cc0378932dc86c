"""The LSP base protocol on a byte stream: frames in, JSON-RPC 2.0 checks, never deaf.

`FrameReader` cuts a stream into message bodies. It is lenient where clients differ and
strict where a mistake would wedge the server:

- header names are case-insensitive, whitespace around the value is ignored, and lines may
  end in CRLF or a bare LF (the LSP base protocol asks for CRLF; some clients send LF);
- a header block that cannot be used (`Content-Length: abc`, no Content-Length) is skipped, and reading resynchronises on the next `Content-Length`
  header, wherever it starts (after a body sent a few bytes short, the rest of it is
  skipped the same way);
- a header block longer than MAX_HEADER (a 70 MB line without a newline) is dropped as it
  arrives: memory stays bounded;
- a body over MAX_BODY is read through without being kept (its first and last
  EDGE_KEPT bytes aside) and comes out as an `OversizedMessage` naming its top-level `id`
  when one can be found there (the tail's id among its last TAIL_ID_SCANNED bytes: a
  tail built to make the search backtrack cost minutes of CPU), so the request is answered
  with an error instead of never;
  a header found inside it (a length that lied: raw line breaks never occur inside compact
  JSON) ends the skip and reading resynchronises there.

`check_message` applies JSON-RPC 2.0 to a body: not JSON is -32700 (ParseError), not an
object, no `"jsonrpc": "2.0"` or an `id` that is neither string, number nor null is -32600
(InvalidRequest). Error responses carry no `data` (never a traceback on the wire).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

MAX_HEADER = 8 * 1024  # bytes of one header block
MAX_BODY = 64 * 1024 * 1024  # bytes of one message body
READ_CHUNK = 256 * 1024
EDGE_KEPT = 256 * 1024  # bytes kept of each end of an oversized body, to find its id
HEADER_HOLD = 64  # bytes held back while skipping, so a header split across reads is still seen
TAIL_ID_SCANNED = 4 * 1024  # last bytes searched for a closing `id` (the search is quadratic in them)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600

_CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_HEADER_END = re.compile(rb"\r?\n\r?\n")
_LENGTH_VALUE = re.compile(rb"(?im)^content-length[ \t]*:[ \t]*([0-9]{1,12})[ \t]*\r?$")
_HEADER_LINE = re.compile(rb"(?i)content-length[ \t]*:[ \t]*[0-9]{1,12}[ \t]*\r?\n")
_JSON_STRING = rb'"(?:[^"\\]|\\.)*"'
_ID_VALUE = rb'(-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|' + _JSON_STRING + rb"|null)"
_HEAD_TOKEN = re.compile(_JSON_STRING + rb'|"|[{}\[\]]', re.S)
_AFTER_KEY = re.compile(rb"\s*:\s*" + _ID_VALUE)
_SCALAR = _JSON_STRING + rb"|[-+.\w]+"
_TAIL_ID = re.compile(
    rb'"id"\s*:\s*' + _ID_VALUE + rb"\s*(?:,\s*" + _JSON_STRING + rb"\s*:\s*(?:" + _SCALAR + rb")\s*)*\}\s*$", re.S
)


class OversizedMessage:
    """A message body over MAX_BODY, read through and dropped: its length and its `id`."""

    def __init__(self, length: int, msg_id: Any, id_found: bool) -> None:
        self.length = length
        self.msg_id = msg_id
        self.id_found = id_found

    def error(self) -> dict[str, Any]:
        return error_response(
            self.msg_id, INVALID_REQUEST,
            f"Invalid Request: the message is too large ({self.length} bytes; the limit is {MAX_BODY} bytes)",
        )


def _top_level_id(head: bytes, tail: bytes) -> tuple[bool, Any]:
    """(found, id) of a JSON object cut in the middle: its top-level `id` member when it is in
    the first bytes (read in order, depth kept) or among the scalar members that end it."""

    depth = 0
    for token in _HEAD_TOKEN.finditer(head):
        text = token.group()
        if text == b'"':
            break  # a string that goes on past the kept bytes
        if text in (b"{", b"["):
            depth += 1
        elif text in (b"}", b"]"):
            depth -= 1
        elif depth == 1 and text == b'"id"' and (value := _AFTER_KEY.match(head, token.end())):
            return True, json.loads(value.group(1))
    if (value := _TAIL_ID.search(tail[-TAIL_ID_SCANNED:])) is not None:
        return True, json.loads(value.group(1))
    return False, None


class FrameReader:
    """Message bodies from `read(n)` (an asyncio.StreamReader's, or any async reader)."""

    def __init__(self, read: Callable[[int], Awaitable[bytes]]) -> None:
        self._read = read
        self._buf = bytearray()
        self._eof = False
        self.skipped = 0  # bytes dropped while resynchronising (for tests and logs)

    async def _fill(self) -> bool:
        if self._eof:
            return False
        chunk = await self._read(READ_CHUNK)
        if not chunk:
            self._eof = True
            return False
        self._buf += chunk
        return True

    def _skip(self, n: int) -> None:
        if n > 0:
            self.skipped += n
            del self._buf[:n]

    async def next_body(self) -> bytes | OversizedMessage | None:
        """The next message body (or what is known of one too large), or None at the end."""

        while True:
            match = _CONTENT_LENGTH.search(self._buf)
            if match is None:
                # keep a tail that may be the start of a header split across reads
                keep = len(b"content-length:") + 16
                if len(self._buf) > keep:
                    garbage = bytes(self._buf[:-keep])
                    if garbage.strip():
                        log.warning("skipping %d bytes that are not an LSP header", len(garbage))
                    self._skip(len(self._buf) - keep)
                if not await self._fill():
                    return None
                continue
            if match.start():
                if bytes(self._buf[: match.start()]).strip():
                    log.warning("skipping %d bytes before the next header", match.start())
                self._skip(match.start())
            # the end is looked for in the first MAX_HEADER bytes only, and a block without one
            # there is skipped whole (but a tail where a header may start): skipping past its
            # first header name alone made a flood of header lines quadratic (34 s for 300 KB)
            end = _HEADER_END.search(self._buf, 0, MAX_HEADER + 4)
            if end is None:
                if len(self._buf) > MAX_HEADER:
                    log.warning("header block over %d bytes; skipping it", MAX_HEADER)
                    self._skip(MAX_HEADER - HEADER_HOLD)  # resynchronise after this header block
                    continue
                if not await self._fill():
                    return None
                continue
            header = bytes(self._buf[: end.start()])
            if len(header) > MAX_HEADER:
                log.warning("header block over %d bytes; skipping it", MAX_HEADER)
                self._skip(len(b"content-length"))
                continue
            value = _LENGTH_VALUE.search(header)
            length = int(value.group(1)) if value else -1
            if length < 0:
                log.warning("unusable header %r; resynchronising", header[:200])
                self._skip(end.end())
                continue
            self._skip(end.end())
            self.skipped -= end.end()  # a good header is not skipped bytes
            if length > MAX_BODY:
                return await self._pass_over(length)
            while len(self._buf) < length:
                if not await self._fill():
                    return None
            body = bytes(self._buf[:length])
            del self._buf[:length]
            return body


    async def _pass_over(self, length: int) -> OversizedMessage | None:
        """Read an oversized body through, keeping only its ends; stop early at a header."""

        log.warning("a message of %d bytes is over the %d byte limit; dropping it", length, MAX_BODY)
        head = bytearray()
        tail = bytearray()
        left = length
        while left > 0:
            if not self._buf and not await self._fill():
                return None
            piece = bytes(self._buf[:left])
            header = _HEADER_LINE.search(piece)
            if header is not None:  # the length lied: the next message starts here
                piece = piece[: header.start()]
                left = len(piece)
            elif len(piece) < left:  # more to come: keep a tail that may begin a header split across reads
                if len(piece) <= HEADER_HOLD:
                    if not await self._fill():
                        return None
                    continue
                piece = piece[:-HEADER_HOLD]
            del self._buf[: len(piece)]
            left -= len(piece)
            if len(head) < EDGE_KEPT:
                head += piece[: EDGE_KEPT - len(head)]
            tail = (tail + piece)[-EDGE_KEPT:]
            if header is not None:
                break
        found, msg_id = _top_level_id(bytes(head), bytes(tail))
        return OversizedMessage(length, msg_id, found)


def error_response(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def _valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int | float) and not isinstance(value, bool))


def check_message(body: bytes) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(message, None) for a well-formed JSON-RPC 2.0 message, else (None, error response or
    None when nothing may be answered: a malformed notification or response)."""

    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None, error_response(None, PARSE_ERROR, "Parse error: the message body is not JSON")
    if not isinstance(data, dict):
        return None, error_response(None, INVALID_REQUEST, "Invalid Request: a message must be a JSON object")
    has_id = "id" in data
    msg_id = data.get("id") if has_id and _valid_id(data.get("id")) else None
    if has_id and not _valid_id(data["id"]):
        return None, error_response(None, INVALID_REQUEST, "Invalid Request: id must be a string, a number or null")
    if data.get("jsonrpc") != "2.0":
        answer = "method" in data and has_id
        return None, (error_response(msg_id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"') if answer else None)
    if "method" in data and not isinstance(data["method"], str):
        return None, (error_response(msg_id, INVALID_REQUEST, "Invalid Request: method must be a string") if has_id else None)
    if "method" not in data and not has_id:
        return None, error_response(None, INVALID_REQUEST, "Invalid Request: neither a request, a notification nor a response")
    return data, None


def frame(payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
