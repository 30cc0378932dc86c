"""What kind of failure ended a request: the `kind` of the `ErrorInfo` clients get.

One place turns a failed model call into one of the kinds a client can act on (Open
Settings for `auth`, wait for `rate_limit`, Choose model for `context_length`, ...). The
provider layer (agent/provider/) ends every failed call with a message that starts with
what it saw: `HTTP <status>: ...` for an HTTP error (ours and the SDKs' `APIStatusError`
alike), `cannot connect to ...` and `model connection closed ...` for the network, `model
stream stalled ...` for a read timeout. The status decides first, then those phrases.
"""

from __future__ import annotations

import re
from typing import Final, Literal

ErrorKind = Literal[
    "auth", "rate_limit", "overloaded", "context_length", "network", "timeout", "bad_request", "server", "unknown",
]
ERROR_KINDS: Final[tuple[str, ...]] = (
    "auth", "rate_limit", "overloaded", "context_length", "network", "timeout", "bad_request", "server", "unknown",
)

_STATUS = re.compile(r"\bHTTP (\d{3})\b")
_CONTEXT_LENGTH = re.compile(
    r"context[ _-]length|context window|maximum context|too many tokens|prompt is too long|context_length_exceeded",
    re.IGNORECASE,
)
_NETWORK = re.compile(r"cannot connect to|connection closed|connection reset|stream ended before", re.IGNORECASE)
_TIMEOUT = re.compile(r"stalled|timed out|timeout", re.IGNORECASE)

_BY_STATUS: Final[dict[int, ErrorKind]] = {
    401: "auth", 403: "auth", 407: "auth",
    408: "timeout", 504: "timeout",
    429: "rate_limit",
    503: "overloaded", 529: "overloaded",
}


def error_kind(message: str | None) -> ErrorKind:
    """The kind of a request's failure, from the provider's error message."""

    text = message or ""
    match = _STATUS.search(text)
    if match:
        status = int(match.group(1))
        if status in _BY_STATUS:
            return _BY_STATUS[status]
        if 400 <= status < 500:
            return "context_length" if _CONTEXT_LENGTH.search(text) else "bad_request"
        if status >= 500:
            return "server"
    if _CONTEXT_LENGTH.search(text):
        return "context_length"
    if _NETWORK.search(text):
        return "network"
    if _TIMEOUT.search(text):
        return "timeout"
    return "unknown"
