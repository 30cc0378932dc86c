"""Schema versions: a file of an older version migrates forward; a newer one is refused."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from tunacode_lsp.store.errors import StoreVersionError
from tunacode_lsp.store.leases import new_owner
from tunacode_lsp.store.locations import project_id_for
from tunacode_lsp.store.schema import MIGRATIONS, SCHEMA_VERSION
from tunacode_lsp.store.session_store import SessionStore

# The schema as version 1 shipped it (kept literally: a released step must never change).
VERSION_1 = (
    """CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY, title TEXT NOT NULL DEFAULT '', cwd TEXT NOT NULL,
        project_id TEXT NOT NULL, model TEXT NOT NULL DEFAULT '', created_us INTEGER NOT NULL,
        modified_us INTEGER NOT NULL, message_count INTEGER NOT NULL DEFAULT 0,
        input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens INTEGER NOT NULL DEFAULT 0, cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        total_tokens INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0,
        thoughts TEXT NOT NULL DEFAULT '')""",
    """CREATE TABLE messages (
        session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
        seq INTEGER NOT NULL, role TEXT NOT NULL, body BLOB NOT NULL,
        PRIMARY KEY (session_id, seq))""",
    "CREATE INDEX sessions_by_modified ON sessions(modified_us)",
)


def write_version_1_file(path: Path, cwd: Path) -> None:
    conn = sqlite3.connect(path)
    with conn:
        for statement in VERSION_1:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO sessions (session_id, title, cwd, project_id, model, created_us, modified_us, "
            "message_count, input_tokens) VALUES ('old', 'Old one', ?, ?, 'openai:gpt-4.1', "
            "1763778710123000, 1763778710123000, 2, 42)",
            (str(cwd), project_id_for(cwd)),
        )
        for seq, message in enumerate(
            [
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
            ]
        ):
            conn.execute(
                "INSERT INTO messages VALUES ('old', ?, ?, ?)", (seq, message["role"], orjson.dumps(message))
            )
        conn.execute("PRAGMA user_version = 1")
    conn.close()


def test_a_version_1_file_migrates_and_keeps_its_sessions(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    write_version_1_file(path, tmp_path)
    with SessionStore(path) as store:
        record = store.get_session("old")
        assert record is not None
        assert (record.title, record.message_count, record.usage.input_tokens) == ("Old one", 2, 42)
        assert record.created_at == "2025-11-22T02:31:50.123Z"
        assert [m["content"][0]["text"] for m in store.load_messages("old")] == ["hi", "hello"]
        assert store.acquire("old", new_owner()) is True  # the leases table of version 2
        assert [r.session_id for r in store.list_sessions(project_id=project_id_for(tmp_path))] == ["old"]
        assert store.append_messages("old", [{"role": "user", "content": []}]) == 3
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == len(MIGRATIONS) >= 3
    indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "sessions_by_project" in indexes
    conn.close()


def test_version_1_in_the_code_matches_the_shipped_schema(tmp_path: Path) -> None:
    shipped, current = sqlite3.connect(tmp_path / "a.db"), sqlite3.connect(tmp_path / "b.db")
    for statement in VERSION_1:
        shipped.execute(statement)
    for statement in MIGRATIONS[0]:
        current.execute(statement)

    def columns(conn: sqlite3.Connection) -> list[tuple]:
        return [
            (table, *row[1:])
            for table in ("sessions", "messages")
            for row in conn.execute(f"PRAGMA table_info({table})")
        ]

    assert columns(shipped) == columns(current)
    shipped.close()
    current.close()


def test_a_new_file_starts_at_the_latest_version(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite3"
    SessionStore(path).close()
    SessionStore(path).close()  # opening again is a no-op
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


def test_a_file_from_a_newer_server_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite3"
    SessionStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreVersionError, match="upgrade tunacode-lsp"):
        SessionStore(path)
