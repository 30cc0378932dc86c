"""The agent layer's errors as ACP JSON-RPC errors.

ACP reserves -32002 for "resource not found", so an unknown session is -32002 here (the
LSP contract's UNKNOWN_SESSION is -32001) and a busy session is -32600 with
`data.busy = true` (the LSP contract's SESSION_BUSY is -32002). A bad model stays -32003.
"""

from __future__ import annotations

from acp import RequestError

from tunacode_lsp.contract.errors import CommandError
from tunacode_lsp.contract.protocol import SESSION_BUSY, UNKNOWN_SESSION, ParamsError

INVALID_REQUEST = -32600


def unknown_session(session_id: str) -> RequestError:
    return RequestError(-32002, f"Resource not found: unknown session {session_id[:80]!r}", {"sessionId": session_id[:200]})


def busy_session(session_id: str, detail: str) -> RequestError:
    return RequestError(INVALID_REQUEST, f"Invalid request: {detail}", {"sessionId": session_id, "busy": True})


def invalid_params(detail: str) -> RequestError:
    return RequestError.invalid_params({"details": detail})


def from_agent(exc: Exception, session_id: str = "") -> RequestError:
    """A ParamsError or CommandError from the agent layer, as the client should see it."""

    if isinstance(exc, ParamsError):
        return invalid_params(str(exc))
    if isinstance(exc, CommandError):
        if exc.code == SESSION_BUSY:
            return busy_session(session_id, exc.message)
        if exc.code == UNKNOWN_SESSION:
            return unknown_session(session_id)
        return RequestError(exc.code, exc.message)
    return RequestError.internal_error({"details": str(exc)})
