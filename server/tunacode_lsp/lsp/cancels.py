"""One cancellation registry: JSON-RPC message id -> how to cancel what that request started.

`$/cancelRequest` names a message id. A handler that can be cancelled (`tunacode.request`,
`tunacode.session.compact`) registers its cancel under its own id before any await and
unregisters it when it answers; `cancel(id)` runs it. A cancel for an id nothing has
registered yet (it overtook its handler's start: the task is scheduled, not run) is kept,
the last EARLY_CANCELS_KEPT of them, and applied the moment that id registers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

EARLY_CANCELS_KEPT = 64


class CancelRegistry:
    def __init__(self) -> None:
        self._cancels: dict[Any, Callable[[], object]] = {}
        self._early: deque[Any] = deque(maxlen=EARLY_CANCELS_KEPT)

    def register(self, msg_id: Any, cancel: Callable[[], object]) -> None:
        """Keep `cancel` for `msg_id`; run it now when a cancel for that id came first."""

        self._cancels[msg_id] = cancel
        if msg_id in self._early:
            self._early.remove(msg_id)
            cancel()

    def unregister(self, msg_id: Any) -> None:
        self._cancels.pop(msg_id, None)

    def cancel(self, msg_id: Any) -> bool:
        """Cancel what `msg_id` started; False (the id kept for later) when nothing is registered."""

        cancel = self._cancels.get(msg_id)
        if cancel is None:
            self._early.append(msg_id)
            return False
        cancel()
        return True
