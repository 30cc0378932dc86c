"""Server-sent events: bytes -> the data payload of each event.

One event (its pending line and its data lines together) is bounded by MAX_EVENT_BYTES: a
gateway that sends an endless line or never ends an event gets SSEEventTooLarge instead of
the server's memory. Each byte is scanned once (a long line in many chunks costs linear time).
"""

from __future__ import annotations

MAX_EVENT_BYTES = 16 * 1024 * 1024


class StreamRefused(ValueError):
    """A model stream read no further (too large an event, stacked encodings)."""


class SSEEventTooLarge(StreamRefused):
    """One server-sent event grew past MAX_EVENT_BYTES."""


def stacked_encodings(content_encoding: str) -> str | None:
    """Why a body with this Content-Encoding is refused: more than one compression layer
    (`gzip, gzip`: a kilobyte that the HTTP client would inflate to gigabytes in one step)."""

    layers = [c.strip() for c in content_encoding.lower().split(",") if c.strip() not in ("", "identity")]
    return f"the body is sent with stacked encodings ({', '.join(layers)[:100]}): refused" if len(layers) > 1 else None


class SSEDecoder:
    """Bytes -> the data payloads of server-sent events (comments and other fields ignored)."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no newline
        self._data: list[str] = []
        self._data_bytes = 0

    def feed(self, chunk: bytes) -> list[str]:
        self._buffer += chunk
        events: list[str] = []
        start = 0
        search = self._scanned
        while (newline := self._buffer.find(b"\n", search)) >= 0:
            line = bytes(self._buffer[start:newline]).rstrip(b"\r")
            start = search = newline + 1
            if not line:
                if self._data:
                    events.append("\n".join(self._data))
                    self._data = []
                    self._data_bytes = 0
                continue
            name, _, value = line.partition(b":")
            if name == b"data":
                self._data.append(value.removeprefix(b" ").decode("utf-8", errors="replace"))
                self._data_bytes += len(value)
        del self._buffer[:start]
        self._scanned = len(self._buffer)
        if len(self._buffer) + self._data_bytes > MAX_EVENT_BYTES:
            self._buffer = bytearray()
            self._data = []
            raise SSEEventTooLarge(
                f"one server-sent event is over {MAX_EVENT_BYTES // (1024 * 1024)} MB: the stream was stopped"
            )
        return events

    def flush(self) -> list[str]:
        """At end of stream: an event whose closing blank line never came."""

        events = self.feed(b"\n\n") if self._buffer or self._data else []
        return events
