"""Server-sent events: bytes -> the data payload of each event."""

from __future__ import annotations


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

