"""Errors of the session store: each names what is wrong, so a caller can show it as is."""

from __future__ import annotations

from tunacode_lsp.core.errors import MessageFormatError  # noqa: F401  (store callers catch it with the rest)
from tunacode_lsp.core.text import shown


class SessionError(Exception):
    """Base class of every error the session package raises."""


class SessionNotFound(SessionError, LookupError):
    """No session with this id in the store."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session not found: {shown(session_id)}")
        self.session_id = session_id


class SessionBusy(SessionError):
    """Another live process runs a request on this session (it holds the session's lease)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {shown(session_id)} is busy with a request in another process")
        self.session_id = session_id


class SessionExists(SessionError, ValueError):
    """A session with this id is already stored."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session already exists: {shown(session_id)}")
        self.session_id = session_id



class DocumentError(SessionError, ValueError):
    """A SessionDocument cannot be imported; the message starts with the path of the bad field."""


class UnreadableMessageError(SessionError):
    """A stored message row cannot be read back (bad bytes, bad shape, missing row)."""

    def __init__(self, session_id: str, seq: int, reason: str) -> None:
        super().__init__(f"session {session_id}: message {seq} is unreadable: {reason}")
        self.session_id = session_id
        self.seq = seq
        self.reason = reason


class WouldWait(SessionError):
    """`SessionStore.run_now`: the database is locked by another connection; nothing was
    written. Run the call where waiting is fine (a worker thread) instead."""


class StoreError(SessionError):
    """The database file cannot be used (not a database, unreadable, closed store)."""


class StoreVersionError(StoreError):
    """The database was written by a newer version of the server."""
