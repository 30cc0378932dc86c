"""Session storage: the SQLite store, session records, export/import documents. No LSP here."""

from .errors import (
    DocumentError,
    MessageFormatError,
    SessionError,
    SessionExists,
    SessionNotFound,
    StoreError,
    StoreVersionError,
    UnreadableMessageError,
)
from .leases import new_owner
from .paths import default_store_path, project_id_for
from .records import SessionRecord
from .store import SessionStore

__all__ = [
    "DocumentError",
    "MessageFormatError",
    "SessionError",
    "SessionExists",
    "SessionNotFound",
    "SessionRecord",
    "SessionStore",
    "StoreError",
    "StoreVersionError",
    "UnreadableMessageError",
    "default_store_path",
    "new_owner",
    "project_id_for",
]
