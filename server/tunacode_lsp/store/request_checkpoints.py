"""Request checkpoints: where each request's messages start in its session, and the
workspace trees before and after it (agent/checkpoints.py). Not session data: a row of
`request_checkpoints` per request, read by `tunacode.changes`, rewind and the replay's marks.

`RequestCheckpointTable` is a part of `SessionStore` (store/session_store.py), which gives
it its connections; `rewind_session` (which cuts the history itself) stays there.
"""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager

from tunacode_lsp.store.errors import SessionNotFound
from tunacode_lsp.store.leases import owner_is_alive
from tunacode_lsp.store.records import RequestCheckpointRecord, now_us


class RequestCheckpointTable:
    """The `request_checkpoints` table of a SessionStore."""

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _conn(self) -> sqlite3.Connection:
        raise NotImplementedError

    def record_request(self, session_id: str, request_id: str, *, workspace: str, before_tree: str = "") -> int:
        """Note that a request starts now: its messages start at the session's message_count
        (returned), which is where a rewind to before it cuts the history."""
        with self._write() as conn:
            row = conn.execute("SELECT message_count FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
            if row is None:
                raise SessionNotFound(session_id)
            conn.execute(
                "INSERT INTO request_checkpoints (session_id, request_id, first_seq, workspace, before_tree, "
                "started_us) VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, request_id, int(row[0]), workspace, before_tree, now_us()),
            )
        return int(row[0])

    def set_request_trees(
        self, session_id: str, request_id: str, *, before_tree: str | None = None, after_tree: str | None = None
    ) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE request_checkpoints SET before_tree = COALESCE(?, before_tree), "
                "after_tree = COALESCE(?, after_tree) WHERE session_id = ? AND request_id = ?",
                (before_tree, after_tree, session_id, request_id),
            )

    def workspace_checkpoints(self, workspace: str) -> list[tuple[RequestCheckpointRecord, int, str | None]]:
        """Every session's request checkpoints in `workspace`, with the session's last change
        (modified_us) and the live owner of its lease (None: not busy): least recently changed
        sessions first (agent/checkpoints.py prunes in that order)."""
        rows = self._conn().execute(
            "SELECT r.session_id, r.request_id, r.first_seq, r.workspace, r.before_tree, r.after_tree, "
            "r.started_us, s.modified_us, l.owner FROM request_checkpoints r "
            "JOIN sessions s ON s.session_id = r.session_id LEFT JOIN leases l ON l.session_id = r.session_id "
            "WHERE r.workspace = ? ORDER BY s.modified_us, r.session_id, r.first_seq, r.started_us",
            (workspace,),
        ).fetchall()
        return [(RequestCheckpointRecord(*row[:7]), int(row[7]), row[8] if row[8] and owner_is_alive(row[8]) else None) for row in rows]

    def request_checkpoints(self, session_id: str) -> list[RequestCheckpointRecord]:
        """The session's requests that have checkpoint rows, oldest first."""
        rows = self._conn().execute(
            "SELECT session_id, request_id, first_seq, workspace, before_tree, after_tree, started_us "
            "FROM request_checkpoints WHERE session_id = ? ORDER BY first_seq, started_us",
            (session_id,),
        ).fetchall()
        return [RequestCheckpointRecord(*row) for row in rows]
