"""The user's answers about repository-defined executables, one row per exact definition.

A row says: in this project, the definition of this kind and name whose fingerprint is this
(agent/workspace_consent.py computes it over the whole definition and the content of the
workspace files it runs) was allowed or refused. A changed definition has another
fingerprint, so it has no answer and is asked about again.

Not session data: the file is `consent.sqlite3` in the data folder (`$TUNACODE_HOME`, else
the XDG data folder), never a path from a setting, so a workspace cannot point the server at
a file of answers it wrote itself. The calls block: run them through `asyncio.to_thread`.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from tunacode_lsp.store.locations import data_dir

CONSENT_FILENAME = "consent.sqlite3"
BUSY_TIMEOUT_S = 5.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS consents (
    project_id  TEXT NOT NULL,
    kind        TEXT NOT NULL,
    name        TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    allowed     INTEGER NOT NULL,
    decided_us  INTEGER NOT NULL,
    PRIMARY KEY (project_id, kind, name, fingerprint)
)
"""


def consent_store_path(env: Mapping[str, str] | None = None) -> Path:
    return (data_dir(env) if env is not None else data_dir()) / CONSENT_FILENAME


class ConsentStore:
    """Answers by (project, kind, name, fingerprint). One short connection per call: the
    calls are rare (a definition is looked up when it is started) and may come from any thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._ready = False

    def _connect(self) -> sqlite3.Connection:
        with self._lock:
            if not self._ready:
                self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            if not self._ready:
                conn.execute(_SCHEMA)
                self._ready = True
        except BaseException:
            conn.close()
            raise
        return conn

    def decision(self, project_id: str, kind: str, name: str, fingerprint: str) -> bool | None:
        """The user's answer for exactly this definition, or None if never asked."""

        conn = self._connect()
        try:
            row = conn.execute(
                "SELECT allowed FROM consents WHERE project_id = ? AND kind = ? AND name = ? AND fingerprint = ?",
                (project_id, kind, name, fingerprint),
            ).fetchone()
        finally:
            conn.close()
        return None if row is None else bool(row[0])

    def record(self, project_id: str, kind: str, name: str, fingerprint: str, allowed: bool) -> None:
        conn = self._connect()
        try:
            conn.execute(
                "INSERT INTO consents (project_id, kind, name, fingerprint, allowed, decided_us) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (project_id, kind, name, fingerprint) DO UPDATE SET allowed = excluded.allowed, "
                "decided_us = excluded.decided_us",
                (project_id, kind, name, fingerprint, int(allowed), time.time_ns() // 1000),
            )
        finally:
            conn.close()
