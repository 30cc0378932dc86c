"""Racing a wait against an abort signal: the one helper every abortable wait uses.

`race_abort(work, signal)` awaits `work` until it finishes, the signal is set, or `timeout`
passes. After the signal or the timeout, the work gets `grace` seconds to finish by itself
(a tool killing its processes), then it is cancelled. The caller reads the outcome; the
work's own exception stays in `task` for the caller to take or ignore.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass
class Raced(Generic[T]):
    task: asyncio.Future[T]
    aborted: bool  # the signal was set before the work finished
    timed_out: bool  # the timeout passed before the work finished

    @property
    def finished(self) -> bool:
        """The work ended by itself (with a result or an exception), not cancelled."""
        return self.task.done() and not self.task.cancelled()

    def result(self) -> T:
        return self.task.result()


async def race_abort(
    work: Awaitable[T],
    signal: asyncio.Event | None,
    *,
    timeout: float | None = None,
    grace: float = 0.0,
) -> Raced[T]:
    task: asyncio.Future[T] = asyncio.ensure_future(work)
    waiters: set[asyncio.Future[Any]] = {task}
    abort_wait = asyncio.ensure_future(signal.wait()) if signal is not None else None
    if abort_wait is not None:
        waiters.add(abort_wait)
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        if abort_wait is not None:
            abort_wait.cancel()
    aborted = not task.done() and signal is not None and signal.is_set()
    timed_out = not task.done() and not aborted
    if not task.done() and grace > 0:
        await asyncio.wait({task}, timeout=grace)
    if not task.done():
        task.cancel()
    return Raced(task, aborted, timed_out)
