"""What a plain client can do, read from its capabilities: the server never waits on a
question the client cannot show.

An `ask` approval goes to the client as `tunacode/approve` (the plugins) or
`window/showMessageRequest`. A client that declares neither `experimental.tunacode.approve`
nor any `window` capability (Vim's ALE) has no handler for showMessageRequest: the approval
would wait until the request times out, silently. Such a request is refused at its start,
naming the `approval` setting. Some eglot versions handle showMessageRequest while declaring
only `window.showDocument`, so any `window` capability counts as "can ask".
"""

from __future__ import annotations

from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from tunacode_lsp.lsp.editor import client_offers


def can_ask(ls: LanguageServer) -> bool:
    window = ls.client_capabilities.window
    return client_offers(ls, "approve") or window is not None


def require_approval_channel(ls: LanguageServer, approval: str) -> None:
    """Raise at a request's start when `approval` is `ask` and the client cannot be asked."""

    if approval == "ask" and not can_ask(ls):
        raise JsonRpcInvalidParams(
            message="the approval setting is 'ask', but this client cannot show a question (it declares no "
                    "window capabilities, so no window/showMessageRequest): set tunacode.approval to 'auto' "
                    "or 'read-only' (initializationOptions or settings). Nothing ran.")
