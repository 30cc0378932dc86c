"""Every request the server sends its client has a bounded wait.

`ask_client` sends a request under an id of our own; when the wait ends early (a timeout, or
the caller stops waiting) it sends `$/cancelRequest` for it, so the client can withdraw its
UI, and drops the pending entry, so a late answer is taken quietly.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from tunacode_lsp.lsp.pygls_compat import drop_pending_request

_ids = itertools.count(1)


class ClientDidNotAnswer(TimeoutError):
    """The client did not answer within the wait."""


async def ask_client(ls: LanguageServer, method: str, params: Any, *, timeout: float | None, label: str = "tunacode") -> Any:
    msg_id = f"{label}-{next(_ids)}"
    future = asyncio.wrap_future(ls.protocol.send_request(method, params, msg_id=msg_id))
    try:
        return await asyncio.wait_for(future, timeout)
    except TimeoutError:
        withdraw(ls, msg_id)
        raise ClientDidNotAnswer(f"no answer to {method} within {timeout:g} s") from None
    except asyncio.CancelledError:
        withdraw(ls, msg_id)
        raise


def withdraw(ls: LanguageServer, msg_id: str) -> None:
    drop_pending_request(ls, msg_id)
    try:
        ls.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    except Exception:  # noqa: BLE001 - the client is gone: nothing to withdraw
        pass
