"""Waiting, bounded, for the client's next `textDocument/didChange` (the server's own edits).

A client may answer `workspace/applyEdit` before it sends the `didChange` that carries the edit
(Neovim sends it debounced, ~150 ms later). Until then the server's copy of the document is
stale, so an edit that follows would be planned on text the editor no longer has (and Neovim
drops, while answering `applied: true`, an edit versioned older than its buffer). The server
registers `changed` as its didChange handler; `next_change` resolves on the next one.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

_waiting: weakref.WeakKeyDictionary[Any, list[asyncio.Future[None]]] = weakref.WeakKeyDictionary()


def changed(ls: Any) -> None:
    """A didChange arrived (pygls has already updated its copy): wake every waiter."""

    for future in _waiting.pop(ls, []):
        if not future.done():
            future.set_result(None)


async def next_change(ls: Any, timeout: float) -> bool:
    """True when a didChange arrives within `timeout` seconds."""

    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    _waiting.setdefault(ls, []).append(future)
    try:
        await asyncio.wait_for(future, timeout)
        return True
    except TimeoutError:
        return False
    finally:
        waiters = _waiting.get(ls)
        if waiters is not None and future in waiters:
            waiters.remove(future)
