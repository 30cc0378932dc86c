"""The database schema as a list of forward migrations, tracked in PRAGMA user_version.

MIGRATIONS[n] takes a database from version n to n + 1. Never edit a released step:
add a new one. Each step is a tuple of single statements (executescript would commit
the surrounding transaction).
"""

from __future__ import annotations

import sqlite3

from tunacode_lsp.store.errors import StoreVersionError

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 0 -> 1: sessions and their messages, one row per message.
    (
        """
        CREATE TABLE sessions (
            session_id         TEXT PRIMARY KEY,
            title              TEXT NOT NULL DEFAULT '',
            cwd                TEXT NOT NULL,
            project_id         TEXT NOT NULL,
            model              TEXT NOT NULL DEFAULT '',
            created_us         INTEGER NOT NULL,
            modified_us        INTEGER NOT NULL,
            message_count      INTEGER NOT NULL DEFAULT 0,
            input_tokens       INTEGER NOT NULL DEFAULT 0,
            output_tokens      INTEGER NOT NULL DEFAULT 0,
            cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
            cache_write_tokens INTEGER NOT NULL DEFAULT 0,
            total_tokens       INTEGER NOT NULL DEFAULT 0,
            cost               REAL NOT NULL DEFAULT 0,
            thoughts           TEXT NOT NULL DEFAULT ''
        )
        """,
        """
        CREATE TABLE messages (
            session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
            seq        INTEGER NOT NULL,
            role       TEXT NOT NULL,
            body       BLOB NOT NULL,
            PRIMARY KEY (session_id, seq)
        )
        """,
        "CREATE INDEX sessions_by_modified ON sessions(modified_us)",
    ),
    # 1 -> 2: cross-process busy leases; listing by project.
    (
        """
        CREATE TABLE leases (
            session_id  TEXT PRIMARY KEY REFERENCES sessions(session_id) ON DELETE CASCADE,
            owner       TEXT NOT NULL,
            acquired_us INTEGER NOT NULL
        )
        """,
        "CREATE INDEX sessions_by_project ON sessions(project_id, modified_us)",
    ),
    # 2 -> 3: the user's answer for each MCP server a workspace file defines.
    (
        """
        CREATE TABLE mcp_trust (
            project_id  TEXT NOT NULL,
            name        TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            allowed     INTEGER NOT NULL,
            decided_us  INTEGER NOT NULL,
            PRIMARY KEY (project_id, name, fingerprint)
        )
        """,
    ),
    # 3 -> 4: the model's plan and the compaction summary (store/session_state.py).
    (
        "ALTER TABLE sessions ADD COLUMN plan TEXT NOT NULL DEFAULT '[]'",
        "ALTER TABLE sessions ADD COLUMN compaction TEXT NOT NULL DEFAULT ''",
    ),
    # 4 -> 5: each request's workspace checkpoints (agent/checkpoints.py) and where its
    # messages start (a rewind cuts the history there).
    (
        """
        CREATE TABLE request_checkpoints (
            session_id  TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
            request_id  TEXT NOT NULL,
            first_seq   INTEGER NOT NULL,
            workspace   TEXT NOT NULL,
            before_tree TEXT NOT NULL DEFAULT '',
            after_tree  TEXT NOT NULL DEFAULT '',
            started_us  INTEGER NOT NULL,
            PRIMARY KEY (session_id, request_id)
        )
        """,
        "CREATE INDEX request_checkpoints_by_start ON request_checkpoints(session_id, first_seq, started_us)",
    ),
    # 5 -> 6: the events after each request's last stored message (request_end), as sent, for
    # the replay of the session (agent/projection.py); at_seq: the session's message count then.
    (
        """
        CREATE TABLE request_ends (
            session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
            request_id TEXT NOT NULL,
            events     BLOB NOT NULL,
            at_seq     INTEGER NOT NULL,
            PRIMARY KEY (session_id, request_id)
        )
        """,
    ),
)

SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, *, target: int = SCHEMA_VERSION) -> int:
    """Bring the database up to `target` in one write transaction; returns the version found.

    The connection must be in autocommit mode (isolation_level=None). Safe when several
    processes open a new database at once: the version is read again under the write lock.
    """
    found = schema_version(conn)
    if found > SCHEMA_VERSION:
        raise StoreVersionError(
            f"the session database has schema version {found}; this server knows up to "
            f"{SCHEMA_VERSION}: upgrade tunacode-lsp or use another sessionStore"
        )
    if found >= target:
        return found
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = schema_version(conn)
        for version in range(found, target):
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
        if found < target:
            conn.execute(f"PRAGMA user_version = {int(target)}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return found
