"""The store's connection: every string written through it is redacted (core/redact.py).

Every statement of the store goes through a connection made with this factory, so no row
(a message's JSON body, a title, the joined thoughts, a plan, a compaction summary) can hold
a secret, whichever code path wrote it. `Redactor.text` is safe on JSON text: it keeps it
valid JSON.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

from tunacode_lsp.core.redact import redact_text


def _clean(parameters: Any) -> Any:
    if isinstance(parameters, Mapping):
        return {k: redact_text(v) if isinstance(v, str) else v for k, v in parameters.items()}
    if isinstance(parameters, list | tuple):
        return tuple(redact_text(v) if isinstance(v, str) else v for v in parameters)
    return parameters


class RedactingConnection(sqlite3.Connection):
    """A sqlite3 connection whose statements' string parameters are redacted."""

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        return super().execute(sql, _clean(parameters))

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        return super().executemany(sql, (_clean(row) for row in parameters))
