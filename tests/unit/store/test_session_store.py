"""SessionStore in one process: sessions, messages, unreadable rows, fork, threads."""

from __future__ import annotations

import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.unit.store.session_samples import assistant_calls, assistant_text, conversation, tool_result, user
from tunacode_lsp.core.history import CANCELLED_TEXT, violations
from tunacode_lsp.store.errors import (
    MessageFormatError,
    SessionExists,
    SessionNotFound,
    StoreError,
    UnreadableMessageError,
)
from tunacode_lsp.store.locations import project_id_for
from tunacode_lsp.store.session_store import SessionStore


def test_open_creates_folders_in_wal_mode(store_path: Path) -> None:
    with SessionStore(store_path):
        assert store_path.is_file()
        conn = sqlite3.connect(store_path)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.close()


def test_create_and_get(store: SessionStore, tmp_path: Path) -> None:
    record = store.create_session(cwd=str(tmp_path), model="openai:gpt-4.1", title="T")
    assert record.title == "T"
    assert record.cwd == str(tmp_path.resolve())
    assert record.project_id == project_id_for(tmp_path)
    assert record.model == "openai:gpt-4.1"
    assert record.message_count == 0
    assert record.busy is False
    assert record.usage.as_store_dict() == {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "total_tokens": 0,
        "cost": 0.0,
    }
    assert record.created_at == record.modified_at
    assert record.created_at.endswith("Z") and len(record.created_at) == len("2026-11-22T02:31:50.123Z")
    assert store.get_session(record.session_id) == record
    assert store.get_session("missing") is None


def test_create_with_a_taken_id_fails(store: SessionStore, tmp_path: Path) -> None:
    store.create_session(cwd=str(tmp_path), model="m", session_id="s1")
    with pytest.raises(SessionExists, match="s1"):
        store.create_session(cwd=str(tmp_path), model="m", session_id="s1")


def test_append_counts_titles_usage_thoughts_and_model(store: SessionStore, tmp_path: Path) -> None:
    record = store.create_session(cwd=str(tmp_path), model="m1")
    messages = conversation()
    count = store.append_messages(record.session_id, messages[:1])
    assert count == 1
    count = store.append_messages(
        record.session_id,
        messages[1:4],
        usage_delta={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15, "cost": 0.25},
        thoughts="plan",
        model="m2",
    )
    assert count == 4
    count = store.append_messages(
        record.session_id, messages[4:], usage_delta={"input_tokens": 1, "cost": 0.5}, thoughts="more"
    )
    assert count == 7
    updated = store.get_session(record.session_id)
    assert updated is not None
    assert updated.message_count == 7
    assert updated.title == "Fix the bug in a.py"
    assert updated.model == "m2"
    assert updated.usage.input_tokens == 11
    assert updated.usage.output_tokens == 5
    assert updated.usage.total_tokens == 15
    assert updated.usage.cost == pytest.approx(0.75)
    assert updated.modified_at >= record.modified_at
    assert store.export_document(record.session_id)["thoughts"] == "plan\n\nmore"
    assert store.load_messages(record.session_id) == messages


def test_title_is_the_first_line_cut_to_sixty_chars(store: SessionStore, tmp_path: Path) -> None:
    record = store.create_session(cwd=str(tmp_path), model="m")
    store.append_messages(record.session_id, [user("\n   " + "word " * 30 + "\nsecond line")])
    title = store.get_session(record.session_id).title  # type: ignore[union-attr]
    assert len(title) <= 60 and title.startswith("word word") and title.endswith("…")
    kept = store.create_session(cwd=str(tmp_path), model="m", title="Mine")
    store.append_messages(kept.session_id, [user("other")])
    assert store.get_session(kept.session_id).title == "Mine"  # type: ignore[union-attr]


def test_append_to_a_missing_session_fails(store: SessionStore) -> None:
    with pytest.raises(SessionNotFound):
        store.append_messages("nope", [user("hi")])


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        ({"role": "system", "content": []}, "role"),
        ({"role": "user", "content": "text"}, "content"),
        ({"role": "assistant", "content": [{"type": "tool_call", "id": 3}]}, "content[0].id"),
        ({"role": "tool_result", "content": [], "is_error": "maybe"}, "is_error"),
    ],
)
def test_append_refuses_a_bad_message_and_stores_nothing(
    store: SessionStore, tmp_path: Path, bad: dict, where: str
) -> None:
    record = store.create_session(cwd=str(tmp_path), model="m")
    with pytest.raises(MessageFormatError) as caught:
        store.append_messages(record.session_id, [user("ok"), bad])
    assert caught.value.where == where
    assert store.get_session(record.session_id).message_count == 0  # type: ignore[union-attr]
    assert store.load_messages(record.session_id) == []


def test_append_refuses_bad_usage(store: SessionStore, tmp_path: Path) -> None:
    record = store.create_session(cwd=str(tmp_path), model="m")
    with pytest.raises(ValueError, match="usage_delta.tokens"):
        store.append_messages(record.session_id, [user("a")], usage_delta={"tokens": 1})
    with pytest.raises(ValueError, match="usage_delta.input_tokens"):
        store.append_messages(record.session_id, [user("a")], usage_delta={"input_tokens": -1})
    with pytest.raises(ValueError, match="usage_delta.cost"):
        store.append_messages(record.session_id, [user("a")], usage_delta={"cost": float("nan")})
    assert store.get_session(record.session_id).message_count == 0  # type: ignore[union-attr]


def test_load_with_limit_returns_the_last_messages(store: SessionStore, tmp_path: Path) -> None:
    record = store.create_session(cwd=str(tmp_path), model="m")
    store.append_messages(record.session_id, conversation())
    assert store.load_messages(record.session_id, limit=2) == conversation()[-2:]
    assert store.load_messages(record.session_id, limit=0) == []
    assert store.load_messages(record.session_id, limit=99) == conversation()
    with pytest.raises(SessionNotFound):
        store.load_messages("nope")


def test_list_newest_modified_first_and_by_project(store: SessionStore, tmp_path: Path) -> None:
    (tmp_path / "p1").mkdir()
    (tmp_path / "p2").mkdir()
    first = store.create_session(cwd=str(tmp_path / "p1"), model="m")
    second = store.create_session(cwd=str(tmp_path / "p2"), model="m")
    third = store.create_session(cwd=str(tmp_path / "p1"), model="m")
    assert [r.session_id for r in store.list_sessions()] == [third.session_id, second.session_id, first.session_id]
    store.append_messages(first.session_id, [user("bump")])
    assert [r.session_id for r in store.list_sessions()][0] == first.session_id
    in_p1 = store.list_sessions(project_id=project_id_for(tmp_path / "p1"))
    assert [r.session_id for r in in_p1] == [first.session_id, third.session_id]
    assert len(store.list_sessions(limit=1)) == 1
    with pytest.raises(ValueError, match="limit"):
        store.list_sessions(limit=0)


def test_delete_removes_the_session_and_its_rows(store: SessionStore, store_path: Path, tmp_path: Path) -> None:
    record = store.create_session(cwd=str(tmp_path), model="m")
    store.append_messages(record.session_id, conversation())
    assert store.delete_session(record.session_id) is True
    assert store.delete_session(record.session_id) is False
    assert store.get_session(record.session_id) is None
    conn = sqlite3.connect(store_path)
    assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 0
    conn.close()


# ---------------------------------------------------------------- unreadable rows


def corrupt(store_path: Path, session_id: str, seq: int, body: bytes) -> None:
    conn = sqlite3.connect(store_path)
    with conn:
        conn.execute("UPDATE messages SET body = ? WHERE session_id = ? AND seq = ?", (body, session_id, seq))
    conn.close()


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{not json", "bad JSON"),
        (b'{"role": "system", "content": []}', "unknown role 'system'"),
        (b'{"role": "assistant", "content": [{"type": "text", "text": 5}]}', "content[0].text"),
        (b"[1, 2]", "expected an object"),
    ],
)
def test_an_unreadable_row_is_reported_not_skipped(
    store: SessionStore, store_path: Path, tmp_path: Path, body: bytes, reason: str
) -> None:
    record = store.create_session(cwd=str(tmp_path), model="m")
    store.append_messages(record.session_id, conversation())
    corrupt(store_path, record.session_id, 3, body)
    with pytest.raises(UnreadableMessageError) as caught:
        store.load_messages(record.session_id)
    assert (caught.value.session_id, caught.value.seq) == (record.session_id, 3)
    assert reason in caught.value.reason
    with pytest.raises(UnreadableMessageError):
        store.export_document(record.session_id)
    assert store.load_messages(record.session_id, limit=3) == conversation()[-3:]


def test_a_missing_row_is_reported(store: SessionStore, store_path: Path, tmp_path: Path) -> None:
    record = store.create_session(cwd=str(tmp_path), model="m")
    store.append_messages(record.session_id, conversation())
    conn = sqlite3.connect(store_path)
    with conn:
        conn.execute("DELETE FROM messages WHERE session_id = ? AND seq = 2", (record.session_id,))
    conn.close()
    with pytest.raises(UnreadableMessageError, match="message 2 is unreadable: row missing"):
        store.load_messages(record.session_id)


# ---------------------------------------------------------------- fork


def test_fork_copies_a_prefix_into_a_new_session(store: SessionStore, tmp_path: Path) -> None:
    source = store.create_session(cwd=str(tmp_path), model="m", title="Bug hunt")
    store.append_messages(source.session_id, conversation(), usage_delta={"input_tokens": 9})
    fork = store.fork_session(source.session_id, 5)
    assert fork.session_id != source.session_id
    assert fork.title == "Bug hunt (fork)"
    assert (fork.cwd, fork.project_id, fork.model) == (source.cwd, source.project_id, source.model)
    assert fork.message_count == 5
    assert fork.usage.input_tokens == 0
    assert store.load_messages(fork.session_id) == conversation()[:5]
    assert store.fork_session(source.session_id).message_count == 7
    assert store.load_messages(source.session_id) == conversation()


@pytest.mark.parametrize("cut", [2, 3])
def test_fork_inside_a_tool_exchange_cuts_back_before_the_calls(
    store: SessionStore, tmp_path: Path, cut: int
) -> None:
    source = store.create_session(cwd=str(tmp_path), model="m")
    store.append_messages(source.session_id, conversation())
    fork = store.fork_session(source.session_id, cut)
    forked = store.load_messages(fork.session_id)
    assert forked == conversation()[:1]
    assert violations(forked) == []


def test_fork_of_a_crashed_session_closes_the_dangling_call(store: SessionStore, tmp_path: Path) -> None:
    source = store.create_session(cwd=str(tmp_path), model="m")
    store.append_messages(source.session_id, [user("go"), assistant_calls("c1", "c2"), tool_result("c1")])
    forked = store.load_messages(store.fork_session(source.session_id).session_id)
    assert violations(forked) == []
    assert forked[3]["tool_call_id"] == "c2" and forked[3]["content"][0]["text"] == CANCELLED_TEXT


def test_fork_bad_arguments(store: SessionStore, tmp_path: Path) -> None:
    source = store.create_session(cwd=str(tmp_path), model="m")
    with pytest.raises(ValueError, match="message_count"):
        store.fork_session(source.session_id, -1)
    with pytest.raises(SessionNotFound):
        store.fork_session("nope")
    assert store.fork_session(source.session_id, 10).message_count == 0


# ---------------------------------------------------------------- threads and lifecycle


def test_threads_appending_to_one_session_lose_nothing(store: SessionStore, tmp_path: Path) -> None:
    record = store.create_session(cwd=str(tmp_path), model="m")
    start = threading.Barrier(4)

    def append_many(worker: int) -> None:
        start.wait(timeout=10)
        for n in range(25):
            store.append_messages(record.session_id, [assistant_text(f"{worker}-{n}")], usage_delta={"output_tokens": 1})

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(append_many, range(4)))
    loaded = store.load_messages(record.session_id)
    assert len(loaded) == 100
    assert sorted(m["content"][0]["text"] for m in loaded) == sorted(f"{w}-{n}" for w in range(4) for n in range(25))
    assert store.get_session(record.session_id).usage.output_tokens == 100  # type: ignore[union-attr]


async def test_usable_through_asyncio_to_thread(store: SessionStore, tmp_path: Path) -> None:
    import asyncio

    record = await asyncio.to_thread(store.create_session, cwd=str(tmp_path), model="m")
    counts = await asyncio.gather(
        *(asyncio.to_thread(store.append_messages, record.session_id, [user(str(n))]) for n in range(5))
    )
    assert sorted(counts) == [1, 2, 3, 4, 5]


def test_a_closed_store_says_so(store_path: Path) -> None:
    store = SessionStore(store_path)
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.list_sessions()


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    path.write_bytes(b"this is not sqlite, just text " * 100)
    with pytest.raises(StoreError, match="not a usable session database"):
        SessionStore(path)
