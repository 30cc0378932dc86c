"""SessionStore: sessions and their messages in one SQLite database.

Several processes may share the file: WAL mode, a busy timeout, and every write in one
short `BEGIN IMMEDIATE` transaction. The API is synchronous and thread-safe: each thread
gets its own connection (call it through `asyncio.to_thread`). A message is appended as
one row when it is complete; appending costs the same at any session size (message_count
lives on the session row, rows are keyed by (session_id, seq)).

`run_now` runs one call on the calling thread's *quick* connection, one that never waits:
no busy timeout (a locked database raises `WouldWait` at once, nothing written) and no WAL
checkpoint at commit (`checkpoint_wal` does it where waiting is fine). The server runs its
small statements so, on the event loop, without a thread hop each (agent/sessions.py).
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tunacode_lsp.contract.protocol import SessionInfo, Usage
from tunacode_lsp.core.codec import bulk_decoding, check_shape, decode, dump_message, encode, load_message
from tunacode_lsp.core.history import clean_history
from tunacode_lsp.core.redact import redact_value
from tunacode_lsp.core.text import clip
from tunacode_lsp.store.document import build_document, parse_document
from tunacode_lsp.store.errors import (
    DocumentError,
    MessageFormatError,
    SessionBusy,
    SessionExists,
    SessionNotFound,
    StoreError,
    UnreadableMessageError,
    WouldWait,
)
from tunacode_lsp.store.leases import owner_is_alive
from tunacode_lsp.store.locations import project_id_for
from tunacode_lsp.store.records import (
    ADD_USAGE_SQL,
    TOKEN_KEYS,
    check_usage,
    iso_from_us,
    now_us,
    stored_count,
    zero_usage,
)
from tunacode_lsp.store.redacting import RedactingConnection
from tunacode_lsp.store.request_checkpoints import RequestCheckpointTable
from tunacode_lsp.store.schema import migrate
from tunacode_lsp.store.session_state import (
    check_compaction,
    check_plan,
    check_request_ends,
    decode_compaction,
    decode_plan,
    encode_state,
)

BUSY_TIMEOUT_S = 5.0
SQLITE_BUSY, SQLITE_LOCKED = 5, 6  # primary result codes (an extended code's low byte)
SQLITE_MAX_INT = 2**63 - 1
TITLE_MAX_CHARS = 60
_SESSION_COLUMNS = (
    "s.session_id, s.title, s.cwd, s.project_id, s.model, s.created_us, s.modified_us, "
    "s.message_count, s.input_tokens, s.output_tokens, s.cache_read_tokens, "
    "s.cache_write_tokens, s.total_tokens, s.cost, l.owner"
)
_SELECT_SESSIONS = (
    f"SELECT {_SESSION_COLUMNS} FROM sessions s LEFT JOIN leases l ON l.session_id = s.session_id"
)


class SessionStore(RequestCheckpointTable):
    """The session database at `path` (created with its parent folders, migrated on open)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        try:
            conn = self._conn()
            mode = _enable_wal(conn)
            migrate(conn)
        except sqlite3.DatabaseError as exc:
            self.close()
            raise StoreError(f"{self.path}: not a usable session database ({exc})") from None
        except BaseException:
            self.close()
            raise
        if str(mode).lower() != "wal":
            self.close()
            raise StoreError(f"{self.path}: cannot switch to WAL mode (got {mode!r})")

    # ------------------------------------------------------------ connections

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError(f"{self.path}: the store is closed")
        quick = getattr(self._local, "quick", False)  # inside run_now
        conn: sqlite3.Connection | None = getattr(self._local, "quick_conn" if quick else "conn", None)
        if conn is None:
            # check_same_thread=False only so close() may close every thread's connection;
            # each connection is otherwise used by the thread that opened it.
            timeout = 0.0 if quick else BUSY_TIMEOUT_S
            conn = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False,
                factory=RedactingConnection,  # no secret in any row (store/redacting.py)
            )
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
                if quick:  # a commit never copies the WAL into the database here: checkpoint_wal
                    conn.execute("PRAGMA wal_autocheckpoint = 0")
                conn.execute("PRAGMA foreign_keys = ON")
                # NORMAL in WAL mode: a commit survives any crash of the process (SIGKILL
                # included); only an OS crash or power loss can lose the latest commits.
                # FULL would fsync on every message, the biggest cost of a request here.
                conn.execute("PRAGMA synchronous = NORMAL")
            except BaseException:
                conn.close()
                raise
            with self._lock:
                if self._closed:  # closed while this connection was opening
                    conn.close()
                    raise StoreError(f"{self.path}: the store is closed")
                self._connections.append(conn)
            setattr(self._local, "quick_conn" if quick else "conn", conn)
        return conn

    def run_now(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """`method(*args, **kwargs)` on this thread's quick connection (see the module
        docstring): WouldWait, with nothing written, when another connection holds the lock."""

        self._local.quick = True
        try:
            return getattr(self, method)(*args, **kwargs)
        except sqlite3.OperationalError as exc:
            code = getattr(exc, "sqlite_errorcode", None)
            if (code is not None and code & 0xFF in (SQLITE_BUSY, SQLITE_LOCKED)) or (
                code is None and ("locked" in str(exc) or "busy" in str(exc))
            ):
                raise WouldWait(str(exc)) from None
            raise
        finally:
            self._local.quick = False

    def checkpoint_wal(self) -> None:
        """Copy the WAL into the database as far as readers allow, waiting for no one
        (the quick connection's commits never do it)."""

        self._conn().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction; the write lock is taken at BEGIN, not midway."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # never leave this thread's connection mid-transaction
                conn.execute("ROLLBACK")
            raise

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """One consistent read of several statements."""
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ sessions

    def create_session(
        self, *, cwd: str, model: str, title: str = "", session_id: str | None = None
    ) -> SessionInfo:
        session_id = session_id or str(uuid.uuid4())
        resolved = str(Path(cwd).expanduser().resolve())
        with self._write() as conn:
            if _exists(conn, session_id):
                raise SessionExists(session_id)
            stamp = _next_modified_us(conn)
            conn.execute(
                "INSERT INTO sessions (session_id, title, cwd, project_id, model, created_us, "
                "modified_us) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (session_id, title, resolved, project_id_for(resolved), model, stamp, stamp),
            )
        return self._require(session_id)

    def get_session(self, session_id: str) -> SessionInfo | None:
        row = self._conn().execute(
            f"{_SELECT_SESSIONS} WHERE s.session_id = ?", (session_id,)
        ).fetchone()
        return _record(row) if row else None

    def list_sessions(self, *, project_id: str | None = None, limit: int = 50) -> list[SessionInfo]:
        """Newest modified first."""
        if limit < 1:
            raise ValueError(f"limit: expected a positive integer, got {limit!r}")
        where, params = ("WHERE s.project_id = ?", (project_id,)) if project_id else ("", ())
        rows = self._conn().execute(
            f"{_SELECT_SESSIONS} {where} ORDER BY s.modified_us DESC LIMIT ?",
            (*params, min(limit, SQLITE_MAX_INT)),  # any larger limit means "all" too
        ).fetchall()
        return [_record(row) for row in rows]

    def delete_session(self, session_id: str, *, owner: str | None = None) -> bool:
        """Delete a session and its messages. Given an `owner`, raise SessionBusy instead
        while another live owner holds the session's lease (a request runs on it elsewhere)."""
        with self._write() as conn:
            if owner is not None:
                held = conn.execute("SELECT owner FROM leases WHERE session_id = ?", (session_id,)).fetchone()
                if held and held[0] != owner and owner_is_alive(held[0]):
                    raise SessionBusy(session_id)
            deleted = conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
            return deleted.rowcount > 0

    # ------------------------------------------------------------ messages

    def append_messages(
        self,
        session_id: str,
        messages: list[dict[str, Any]],
        *,
        usage_delta: dict[str, Any] | None = None,
        thoughts: str | None = None,
        model: str | None = None,
    ) -> int:
        """Append complete messages (validated dumps); returns the new message_count.

        `usage_delta` is added to the totals, `thoughts` appended to the thinking text,
        `model` replaces the session's model. An empty title becomes the first line of
        the first user prompt.
        """
        return self.append_messages_versioned(
            session_id, messages, usage_delta=usage_delta, thoughts=thoughts, model=model
        )[1][1]

    def append_messages_versioned(
        self,
        session_id: str,
        messages: list[dict[str, Any]],
        *,
        usage_delta: dict[str, Any] | None = None,
        thoughts: str | None = None,
        model: str | None = None,
    ) -> tuple[tuple[int, int], tuple[int, int]]:
        """As append_messages; returns (version before, version after), see version_of."""
        messages = [_checked_dump(message) for message in messages]
        delta = check_usage(usage_delta or {}, where="usage_delta")
        with self._write() as conn:
            found = conn.execute(
                "SELECT message_count, title, thoughts, modified_us FROM sessions WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            if found is None:
                raise SessionNotFound(session_id)
            count, title, old_thoughts, old_modified = found
            _insert_messages(conn, session_id, messages, first_seq=count)
            new_count = count + len(messages)
            stamp = _next_modified_us(conn)
            conn.execute(
                "UPDATE sessions SET message_count = ?, modified_us = ?, title = ?, thoughts = ?, "
                "model = COALESCE(?, model), "
                + ADD_USAGE_SQL
                + " WHERE session_id = ?",
                (
                    new_count,
                    stamp,
                    title or _title_from(messages),
                    _join_thoughts(old_thoughts, thoughts),
                    model,
                    *(delta[key] for key in (*TOKEN_KEYS, "cost")),
                    session_id,
                ),
            )
        return (int(old_modified), count), (int(stamp), new_count)

    def load_messages(self, session_id: str, *, limit: int | None = None) -> list[dict[str, Any]]:
        """The stored dumps in order; with `limit`, only the last `limit` of them.

        Every row is checked: bad bytes, a bad shape or a missing row raise
        UnreadableMessageError(session_id, seq, reason). Nothing is skipped.
        """
        if limit is not None and limit < 0:
            raise ValueError(f"limit: expected a non-negative integer, got {limit!r}")
        with self._snapshot() as conn:
            return _load_messages(conn, session_id, limit)

    # ------------------------------------------------------------ plan, compaction, versions

    def get_plan(self, session_id: str) -> list[dict[str, str]]:
        row = self._conn().execute("SELECT plan FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
        if row is None:
            raise SessionNotFound(session_id)
        return decode_plan(row[0])

    def set_plan(self, session_id: str, plan: list[dict[str, Any]]) -> None:
        self.set_plan_versioned(session_id, plan)

    def set_plan_versioned(
        self, session_id: str, plan: list[dict[str, Any]]
    ) -> tuple[tuple[int, int], tuple[int, int]]:
        """As set_plan; returns (version before, version after), see version_of: a cached
        history at the version before is still current (the plan is not a message)."""
        items = check_plan(plan)
        with self._write() as conn:
            found = conn.execute(
                "SELECT modified_us, message_count FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            if found is None:
                raise SessionNotFound(session_id)
            stamp = _next_modified_us(conn)
            conn.execute(
                "UPDATE sessions SET plan = ?, modified_us = ? WHERE session_id = ?",
                (encode_state(items), stamp, session_id),
            )
        count = int(found[1])
        return (int(found[0]), count), (int(stamp), count)

    def get_compaction(self, session_id: str) -> dict[str, Any] | None:
        row = self._conn().execute(
            "SELECT compaction FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        if row is None:
            raise SessionNotFound(session_id)
        return decode_compaction(row[0])

    def set_compaction(
        self,
        session_id: str,
        compaction: dict[str, Any] | None,
        *,
        expect_count: int,
        usage_delta: dict[str, Any] | None = None,
    ) -> bool:
        """Store the summary (and add the summary call's usage); False (nothing written) when
        the session no longer has `expect_count` messages (another writer went on meanwhile)."""
        checked = check_compaction(compaction)
        if checked is not None and checked["firstKept"] > expect_count:
            raise ValueError("compaction.firstKept: beyond the stored messages")
        delta = check_usage(usage_delta or {}, where="usage_delta")
        with self._write() as conn:
            row = conn.execute("SELECT message_count FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
            if row is None:
                raise SessionNotFound(session_id)
            if row[0] != expect_count:
                return False
            conn.execute(
                "UPDATE sessions SET compaction = ?, modified_us = ?, "
                + ADD_USAGE_SQL
                + " WHERE session_id = ?",
                (encode_state(checked) if checked else "", _next_modified_us(conn),
                 *(delta[key] for key in (*TOKEN_KEYS, "cost")), session_id),
            )
        return True

    def version_of(self, session_id: str) -> tuple[int, int] | None:
        """(modified_us, message_count) of the session, or None: every write changes
        modified_us (strictly increasing), so a cached history is current while it matches."""
        row = self._conn().execute(
            "SELECT modified_us, message_count FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        return (int(row[0]), int(row[1])) if row else None

    def load_state(self, session_id: str) -> tuple[tuple[int, int], list[dict[str, Any]], dict[str, Any] | None]:
        """(version, messages, compaction) read in one snapshot."""
        with self._snapshot() as conn:
            row = conn.execute(
                "SELECT modified_us, message_count, compaction FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            if row is None:
                raise SessionNotFound(session_id)
            messages = _load_messages(conn, session_id, None)
        return (int(row[0]), int(row[1])), messages, decode_compaction(row[2])

    # ------------------------------------------------------------ documents and forks

    def export_document(self, session_id: str) -> dict[str, Any]:
        """The session as a SessionDocument (see document.py)."""
        with self._snapshot() as conn:
            record = self._require(session_id)
            thoughts, plan, compaction = conn.execute(
                "SELECT thoughts, plan, compaction FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            messages = _load_messages(conn, session_id, None)
            ends = conn.execute(
                "SELECT request_id, events, at_seq FROM request_ends WHERE session_id = ? ORDER BY at_seq, request_id",
                (session_id,),
            ).fetchall()
        document = build_document(record, thoughts=thoughts, messages=messages)
        document["plan"] = decode_plan(plan)
        document["compaction"] = decode_compaction(compaction)
        document["request_ends"] = _request_end_items(ends)  # the replay's trailers (agent/projection.py)
        return redact_value(document)  # and none in an export, whatever an older version stored

    def import_document(self, document: object) -> SessionInfo:
        """Store a SessionDocument as a session; raises DocumentError naming a bad field.

        The history is cleaned (a valid one is kept as is). If the document's session id
        is empty or already stored, the session gets a new id.
        """
        parsed = parse_document(document)
        extras = document if isinstance(document, dict) else {}
        plan = check_plan(extras.get("plan", []))  # optional; when given, a list
        compaction = check_compaction(extras.get("compaction"))
        request_ends = check_request_ends(extras.get("request_ends", []), len(parsed.messages))
        messages = clean_history(parsed.messages)
        if messages != parsed.messages:  # cleaning moved the messages: the cut points would be wrong
            compaction, request_ends = None, []
        with self._write() as conn:
            session_id = parsed.session_id
            if not session_id or _exists(conn, session_id):
                session_id = str(uuid.uuid4())
            conn.execute(
                "INSERT INTO sessions (session_id, title, cwd, project_id, model, created_us, "
                "modified_us, message_count, thoughts, plan, compaction, "
                + ", ".join((*TOKEN_KEYS, "cost"))
                + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    _title_from(messages),
                    parsed.cwd,
                    parsed.project_id,
                    parsed.model,
                    parsed.created_us,
                    parsed.modified_us,
                    len(messages),
                    parsed.thoughts,
                    encode_state(plan),
                    encode_state(compaction) if compaction else "",
                    *(parsed.usage[key] for key in (*TOKEN_KEYS, "cost")),
                ),
            )
            try:
                _insert_messages(conn, session_id, messages)
                conn.executemany(
                    "INSERT OR REPLACE INTO request_ends (session_id, request_id, events, at_seq) VALUES (?, ?, ?, ?)",
                    [(session_id, request_id, encode({"events": events}), at_seq) for request_id, at_seq, events in request_ends],
                )
            except MessageFormatError as exc:  # e.g. an integer past 64 bits deep in a result's details
                raise DocumentError(f"messages: {exc}") from None
        return self._require(session_id)

    def fork_session(self, session_id: str, message_count: int | None = None) -> SessionInfo:
        """A new session with the first `message_count` messages (all when None), cut back
        to a clean point: no tool call there whose result lies beyond the cut. The copy
        starts with zero usage and no thoughts.
        """
        if message_count is not None and message_count < 0:
            raise ValueError(f"message_count: expected a non-negative integer, got {message_count!r}")
        with self._snapshot() as conn:
            source = self._require(session_id)
            messages = _load_messages(conn, session_id, None)
        cut = _clean_cut(messages, len(messages) if message_count is None else message_count)
        forked = clean_history(messages[:cut])
        title = f"{source.title} (fork)" if source.title else ""
        new_id = str(uuid.uuid4())
        with self._write() as conn:
            stamp = _next_modified_us(conn)
            conn.execute(
                "INSERT INTO sessions (session_id, title, cwd, project_id, model, created_us, "
                "modified_us, message_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (new_id, title or _title_from(forked), source.cwd, source.project_id,
                 source.model, stamp, stamp, len(forked)),
            )
            _insert_messages(conn, new_id, forked)
            conn.execute(
                "INSERT INTO request_ends (session_id, request_id, events, at_seq) "
                "SELECT ?, request_id, events, at_seq FROM request_ends WHERE session_id = ? AND at_seq <= ?",
                (new_id, session_id, len(forked)),
            )
        return self._require(new_id)

    # ------------------------------------------------------------ request ends

    def set_request_end(self, session_id: str, request_id: str, events: list[dict[str, Any]]) -> None:
        """Keep the events a request emitted after its last stored message (agent/projection.py)."""
        with self._write() as conn:
            row = conn.execute("SELECT message_count FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
            if row is None:
                raise SessionNotFound(session_id)
            conn.execute(
                "INSERT OR REPLACE INTO request_ends (session_id, request_id, events, at_seq) VALUES (?, ?, ?, ?)",
                (session_id, request_id, encode({"events": events}), int(row[0])),
            )

    def request_ends(self, session_id: str) -> dict[str, tuple[int, list[dict[str, Any]]]]:
        """request id -> (the session's message count at its end, the events kept by
        set_request_end); a row that cannot be read is left out."""
        rows = self._conn().execute(
            "SELECT request_id, events, at_seq FROM request_ends WHERE session_id = ?", (session_id,)
        ).fetchall()
        ends: dict[str, tuple[int, list[dict[str, Any]]]] = {}
        for request_id, raw, at_seq in rows:
            try:
                events = decode(raw).get("events")
            except (MessageFormatError, AttributeError):
                continue
            if isinstance(events, list):
                ends[str(request_id)] = (int(at_seq), [e for e in events if isinstance(e, dict)])
        return ends

    # ------------------------------------------------------------ rewind (request checkpoints: store/request_checkpoints.py)

    def rewind_session(self, session_id: str, request_id: str) -> SessionInfo:
        """Cut the history back to before `request_id`'s first message and forget the
        checkpoints of that request and every later one, in one transaction. Usage totals
        stay (the tokens were spent); a compaction summary that reaches past the cut goes."""
        with self._write() as conn:
            found = conn.execute(
                "SELECT first_seq, started_us FROM request_checkpoints WHERE session_id = ? AND request_id = ?",
                (session_id, request_id),
            ).fetchone()
            if found is None:
                raise KeyError(request_id)
            first_seq, started_us = int(found[0]), int(found[1])
            row = conn.execute(
                "SELECT message_count, compaction FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            if row is None:
                raise SessionNotFound(session_id)
            count, compaction = int(row[0]), decode_compaction(row[1])
            cut = min(first_seq, count)
            conn.execute("DELETE FROM messages WHERE session_id = ? AND seq >= ?", (session_id, cut))
            if compaction is not None and compaction["firstKept"] > cut:
                compaction = None
            conn.execute(
                "UPDATE sessions SET message_count = ?, compaction = ?, modified_us = ? WHERE session_id = ?",
                (cut, encode_state(compaction) if compaction else "", _next_modified_us(conn), session_id),
            )
            conn.execute(
                "DELETE FROM request_checkpoints WHERE session_id = ? AND (first_seq, started_us) >= (?, ?)",
                (session_id, first_seq, started_us),
            )
            conn.execute("DELETE FROM request_ends WHERE session_id = ? AND at_seq > ?", (session_id, cut))
        return self._require(session_id)

    # ------------------------------------------------------------ leases

    def acquire(self, session_id: str, owner: str) -> bool:
        """Take the session's busy lease for `owner`; False if another live owner holds it."""
        with self._write() as conn:
            if not _exists(conn, session_id):
                raise SessionNotFound(session_id)
            held = conn.execute(
                "SELECT owner FROM leases WHERE session_id = ?", (session_id,)
            ).fetchone()
            if held and held[0] != owner and owner_is_alive(held[0]):
                return False
            conn.execute(
                "INSERT INTO leases (session_id, owner, acquired_us) VALUES (?, ?, ?) "
                "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, "
                "acquired_us = excluded.acquired_us",
                (session_id, owner, now_us()),
            )
            return True

    def release(self, session_id: str, owner: str) -> None:
        """Drop the lease if `owner` holds it (anything else is left alone)."""
        with self._write() as conn:
            conn.execute("DELETE FROM leases WHERE session_id = ? AND owner = ?", (session_id, owner))

    # ------------------------------------------------------------ helpers

    def _require(self, session_id: str) -> SessionInfo:
        record = self.get_session(session_id)
        if record is None:
            raise SessionNotFound(session_id)
        return record


def _enable_wal(conn: sqlite3.Connection) -> str:
    """Switch to WAL (persistent in the file). SQLite does not call the busy handler for
    this switch, so when processes open a new file at once it is retried here, bounded.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.005
    while True:
        try:
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _request_end_items(rows: list[Any]) -> list[dict[str, Any]]:
    items = []
    for request_id, raw, at_seq in rows:
        try:
            events = decode(raw).get("events")
        except (MessageFormatError, AttributeError):
            continue  # a row that cannot be read is left out, as request_ends does
        if isinstance(events, list):
            items.append({"request_id": str(request_id), "at_seq": int(at_seq), "events": [e for e in events if isinstance(e, dict)]})
    return items


def _exists(conn: sqlite3.Connection, session_id: str) -> bool:
    found = conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
    return found is not None


def _next_modified_us(conn: sqlite3.Connection) -> int:
    """Now, but strictly after every stored modification, so "newest first" is exact."""
    latest = conn.execute("SELECT MAX(modified_us) FROM sessions").fetchone()[0]
    now = now_us()
    return now if latest is None or now > latest else latest + 1


def _checked_dump(message: object) -> dict[str, Any]:
    """A dict dump of a message, validated; raises MessageFormatError."""
    if isinstance(message, dict):
        load_message(message)
        return message
    return dump_message(message)  # type: ignore[arg-type]


def _insert_messages(
    conn: sqlite3.Connection, session_id: str, messages: list[dict[str, Any]], *, first_seq: int = 0
) -> None:
    conn.executemany(
        "INSERT INTO messages (session_id, seq, role, body) VALUES (?, ?, ?, ?)",
        [(session_id, first_seq + i, m["role"], encode(m)) for i, m in enumerate(messages)],
    )


def _load_messages(
    conn: sqlite3.Connection, session_id: str, limit: int | None
) -> list[dict[str, Any]]:
    found = conn.execute(
        "SELECT message_count FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    if found is None:
        raise SessionNotFound(session_id)
    count = found[0]
    first = 0 if limit is None else max(0, count - limit)
    rows = conn.execute(
        "SELECT seq, body FROM messages WHERE session_id = ? AND seq >= ? ORDER BY seq",
        (session_id, first),
    ).fetchall()
    return _read_rows(session_id, rows, first=first, count=count)


def _read_rows(
    session_id: str, rows: list[tuple[int, bytes]], *, first: int, count: int
) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    expected = first
    with bulk_decoding():
        for seq, body in rows:
            if seq >= count:
                raise UnreadableMessageError(session_id, seq, f"beyond message_count {count}")
            if seq != expected:
                raise UnreadableMessageError(session_id, expected, "row missing")
            try:
                dump = decode(body)
                check_shape(dump)
            except MessageFormatError as exc:
                raise UnreadableMessageError(session_id, seq, str(exc)) from None
            messages.append(dump)
            expected += 1
    if expected != count:
        raise UnreadableMessageError(session_id, expected, "row missing")
    return messages


def _clean_cut(messages: list[dict[str, Any]], wanted: int) -> int:
    """The largest cut <= wanted with no tool call before it whose result comes after it."""
    call_index: dict[str, int] = {}
    for index, message in enumerate(messages):
        if message.get("role") == "assistant":
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_call":
                    call_index.setdefault(str(block.get("id")), index)
    # A call at i answered at j > i forbids every cut in i+1..j.
    forbidden_until = [0] * (len(messages) + 2)
    for index, message in enumerate(messages):
        answered = call_index.get(str(message.get("tool_call_id")))
        if message.get("role") == "tool_result" and answered is not None and answered < index:
            forbidden_until[answered + 1] = max(forbidden_until[answered + 1], index)
    bad = [False] * (len(messages) + 1)
    reach = 0
    for cut in range(1, len(messages) + 1):
        reach = max(reach, forbidden_until[cut])
        bad[cut] = cut <= reach
    cut = min(wanted, len(messages))
    while cut > 0 and bad[cut]:
        cut -= 1
    return cut


def _title_from(messages: list[dict[str, Any]]) -> str:
    """The first non-empty line of the first user prompt, at most TITLE_MAX_CHARS."""
    for message in messages:
        if message.get("role") != "user":
            continue
        for block in message.get("content") or []:
            text = block.get("text") if isinstance(block, dict) else None
            for line in (text or "").splitlines():
                line = line.strip()
                if line:
                    return clip(line, TITLE_MAX_CHARS)
    return ""


def _join_thoughts(old: str, new: str | None) -> str:
    if not new:
        return old
    return f"{old}\n\n{new}" if old else new


def _record(row: tuple[Any, ...]) -> SessionInfo:
    (session_id, title, cwd, project_id, model, created_us, modified_us, count,
     *usage_values, owner) = row
    usage = zero_usage()
    usage.update(zip((*TOKEN_KEYS, "cost"), usage_values))
    usage.update({key: stored_count(usage[key]) for key in TOKEN_KEYS})
    usage["cost"] = float(usage["cost"])
    return SessionInfo(  # the contract's type: the store has no session record of its own
        session_id=session_id,
        title=title,
        cwd=cwd,
        project_id=project_id,
        model=model,
        created_at=iso_from_us(created_us),
        modified_at=iso_from_us(modified_us),
        message_count=count,
        usage=Usage.from_store_dict(usage),
        busy=owner is not None and owner_is_alive(owner),
    )
