"""The extra HTTP headers of model calls (`headers` setting, TUNACODE_HEADERS): what is refused.

A header name must be an HTTP token (RFC 9110 5.6.2) and a value printable text on one line
(no CR, LF, NUL or other control character but tab), so a setting cannot add a header line
of its own (`"v\\r\\nX-Injected: 1"`) nor make the HTTP client fail mid-request with an unclear
error. Headers that frame the request or name its host (Host, Content-Length,
Transfer-Encoding, Connection, ...) are the HTTP client's alone: set by a setting, they could
make the provider's front end read the body differently from how it was sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
RESERVED = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer",
     "proxy-connection", "expect"}
)
MAX_HEADERS = 64
MAX_VALUE_CHARS = 8192


class BadHeaders(ValueError):
    """The message says which header and why."""


def checked_headers(raw: Mapping[object, object]) -> dict[str, str]:
    """The headers as sent (names stripped), or BadHeaders naming the first bad one."""

    if len(raw) > MAX_HEADERS:
        raise BadHeaders(f"headers: at most {MAX_HEADERS} headers")
    out: dict[str, str] = {}
    for name, value in raw.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise BadHeaders("headers must be an object of header names to string values")
        clean = name.strip()
        shown = ascii(clean[:40])
        if not _TOKEN.fullmatch(clean):
            raise BadHeaders(f"header name {shown} is not a valid HTTP header name")
        if clean.lower() in RESERVED:
            raise BadHeaders(f"header {shown} is set by the HTTP client and cannot be given in headers")
        if _BAD_VALUE.search(value):
            raise BadHeaders(f"header {shown}: the value must be one line of text (no CR, LF or control characters)")
        if len(value) > MAX_VALUE_CHARS:
            raise BadHeaders(f"header {shown}: the value is over {MAX_VALUE_CHARS} characters")
        out[clean] = value
    return out
