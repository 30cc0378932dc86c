"""Bounded capture of a command's output: the head and the tail are kept, the middle is counted."""

from __future__ import annotations


class HeadTailBuffer:
    def __init__(self, limit: int) -> None:
        self.head_limit = limit // 2
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    @property
    def cut(self) -> int:
        return max(0, self.total - len(self.head) - min(len(self.tail), self.tail_limit))

    def recent(self, size: int) -> str:
        data = self.tail[-size:] if self.tail else self.head[-size:]
        return data.decode("utf-8", errors="replace")

    def render(self) -> str:
        tail = bytes(self.tail[-self.tail_limit :]) if self.tail_limit else b""
        head = self.head.decode("utf-8", errors="replace")
        if self.cut == 0:
            return head + tail.decode("utf-8", errors="replace")
        return (
            head
            + f"\n\n[... {self.cut:,} bytes of output cut from the middle ...]\n\n"
            + tail.decode("utf-8", errors="replace")
        )
