"""The outcomes of detached requests (`tunacode.request {detach: true}`), kept until read.

A detached request is answered at once; its `RequestResult` (or the error it would have
been answered with) waits here for `tunacode.request.result`, until it is read or its
session is deleted. At most MAX_KEPT are kept: the oldest unread one is dropped first.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from tunacode_lsp.contract.protocol import RequestResult

MAX_KEPT = 64


@dataclass(frozen=True)
class DetachedError:
    """The JSON-RPC error the request would have been answered with."""

    code: int
    message: str
    data: Any = None


class DetachedResults:
    def __init__(self, limit: int = MAX_KEPT) -> None:
        self._limit = limit
        self._running: dict[str, str] = {}  # request id -> session id
        self._ends: dict[str, asyncio.Event] = {}  # request id -> set when it ended
        self._ended: OrderedDict[str, tuple[str, RequestResult | DetachedError]] = OrderedDict()

    def started(self, request_id: str, session_id: str) -> None:
        self._running[request_id] = session_id
        self._ends[request_id] = asyncio.Event()

    def ended(self, request_id: str, outcome: RequestResult | DetachedError) -> None:
        end = self._ends.pop(request_id, None)
        if end is not None:
            end.set()
        session_id = self._running.pop(request_id, None)
        if session_id is None:  # its session was deleted meanwhile
            return
        self._ended[request_id] = (session_id, outcome)
        while len(self._ended) > self._limit:
            self._ended.popitem(last=False)

    def is_running(self, request_id: str) -> bool:
        return request_id in self._running

    async def wait_ended(self, request_id: str, timeout: float) -> None:
        """Until the request ended (bounded): its `request_end` was sent, its answer is moments away."""

        end = self._ends.get(request_id)
        if end is not None:
            try:
                await asyncio.wait_for(end.wait(), timeout)
            except TimeoutError:
                pass

    def take(self, request_id: str) -> RequestResult | DetachedError | None:
        """The outcome, once (None: unknown, already read, or dropped)."""

        kept = self._ended.pop(request_id, None)
        return None if kept is None else kept[1]

    def forget_session(self, session_id: str) -> None:
        for request_id, (sid, _) in list(self._ended.items()):
            if sid == session_id:
                del self._ended[request_id]
        for request_id, sid in list(self._running.items()):
            if sid == session_id:
                del self._running[request_id]
                self._ends.pop(request_id, None)
