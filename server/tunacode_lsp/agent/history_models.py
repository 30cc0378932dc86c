"""The validated history of the last long sessions, kept between their requests.

A request validates its whole history into tinyagent messages (`AgentRequest._load_history`):
at 30,000 messages ~0.5-0.8 s of CPU on a thread, which stalls the event loop through the
GIL (issue 35: a status round trip during a long session's turn). The history is
append-only between compactions and rewinds, and the session service hands out the same
dump objects for the messages it already had (agent/sessions.py `CachedHistory`), so the
next request of the session validates only the dumps it has not seen: an entry is reused
only for the very dump object it was made from (held here, so its identity stays unique).

Only sessions of at least `MIN_MESSAGES` are kept, and only the `MAX_SESSIONS` most
recently used; a running request takes its session's entries out (`take`) and puts the
current ones back when its history is loaded (`keep`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

MIN_MESSAGES = 2_000  # shorter histories validate in a few ms: not kept
MAX_SESSIONS = 2

# id(dump) -> (the dump, its model, its token estimate, (pruned replacement, its estimate) or None)
Entry = tuple[dict[str, Any], Any, int, "tuple[Any, int] | None"]

_kept: OrderedDict[str, dict[int, Entry]] = OrderedDict()
_lock = threading.Lock()


def take(session_id: str) -> dict[int, Entry]:
    """The session's kept entries (removed from the cache), or an empty dict."""

    with _lock:
        return _kept.pop(session_id, None) or {}


def keep(session_id: str, entries: dict[int, Entry]) -> None:
    """Keep the session's entries for its next request (a short history is not kept)."""

    if len(entries) < MIN_MESSAGES:
        return
    with _lock:
        _kept[session_id] = entries
        _kept.move_to_end(session_id)
        while len(_kept) > MAX_SESSIONS:
            _kept.popitem(last=False)


def reusable(entries: dict[int, Entry], dump: object) -> Entry | None:
    """The entry made from this very dump object, else None."""

    entry = entries.get(id(dump))
    return entry if entry is not None and entry[0] is dump else None
