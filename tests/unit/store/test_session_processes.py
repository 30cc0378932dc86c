"""Several OS processes on one database: concurrent appends, a SIGKILL mid-append, busy leases."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tunacode_lsp.store.errors import SessionNotFound
from tunacode_lsp.store.leases import new_owner, owner_is_alive
from tunacode_lsp.store.session_store import SessionStore

WORKER = Path(__file__).with_name("store_worker.py")


def start_worker(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def workers() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout):
            if stream:
                stream.close()


def integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize("same_session", [False, True], ids=["different-sessions", "same-session"])
def test_two_processes_append_at_once_and_lose_nothing(
    store: SessionStore, store_path: Path, tmp_path: Path, workers: list, same_session: bool
) -> None:
    first = store.create_session(cwd=str(tmp_path), model="m").session_id
    second = first if same_session else store.create_session(cwd=str(tmp_path), model="m").session_id
    per_worker = 60
    for session_id, tag in ((first, "A"), (second, "B")):
        workers.append(start_worker("append", str(store_path), session_id, str(per_worker), tag))
    for proc in workers:
        assert proc.stdout.readline().strip() == "ready"
    for proc in workers:  # both start together
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in workers:
        assert proc.stdout.readline().startswith("done")
        assert proc.wait(timeout=60) == 0

    assert integrity(store_path) == "ok"
    expected = {f"{tag} {n}" for tag in "AB" for n in range(per_worker)}
    session_ids = {first, second}
    texts = [m["content"][0]["text"] for sid in session_ids for m in store.load_messages(sid)]
    assert sorted(texts) == sorted(expected)
    for sid in session_ids:
        record = store.get_session(sid)
        assert record is not None
        assert record.message_count == len(store.load_messages(sid))
        assert record.usage.output_tokens == record.message_count
    for tag in "AB":  # each writer's own order is kept
        mine = [int(t.split()[1]) for t in texts if t.startswith(tag)]
        assert mine == sorted(mine)


def test_processes_opening_a_new_database_at_once(tmp_path: Path, workers: list) -> None:
    path = tmp_path / "fresh" / "sessions.sqlite3"
    for _ in range(3):
        workers.append(start_worker("create", str(path), str(tmp_path)))
    for proc in workers:
        assert proc.stdout.readline().strip() == "ready"
    for proc in workers:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in workers:
        assert proc.stdout.readline().strip() == "ok"
        assert proc.wait(timeout=60) == 0
    assert integrity(path) == "ok"
    with SessionStore(path) as store:
        assert len(store.list_sessions()) == 3


def test_a_process_killed_while_appending_leaves_every_committed_message(
    store: SessionStore, store_path: Path, tmp_path: Path, workers: list
) -> None:
    session_id = store.create_session(cwd=str(tmp_path), model="m").session_id
    proc = start_worker("append-forever", str(store_path), session_id)
    workers.append(proc)
    committed = 0
    while committed < 40:
        line = proc.stdout.readline()
        assert line, "the worker stopped early"
        committed = int(line)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL

    assert integrity(store_path) == "ok"
    with SessionStore(store_path) as reopened:
        messages = reopened.load_messages(session_id)
        assert len(messages) >= committed
        assert reopened.get_session(session_id).message_count == len(messages)  # type: ignore[union-attr]
        assert [m["content"][0]["text"] for m in messages] == [f"msg {n}" for n in range(len(messages))]
        assert reopened.append_messages(session_id, [{"role": "user", "content": []}]) == len(messages) + 1


# ---------------------------------------------------------------- leases


def test_a_live_owner_makes_the_session_busy_and_a_dead_one_does_not(
    store: SessionStore, store_path: Path, tmp_path: Path, workers: list
) -> None:
    session_id = store.create_session(cwd=str(tmp_path), model="m").session_id
    holder = start_worker("hold", str(store_path), session_id)
    workers.append(holder)
    line = holder.stdout.readline().split()
    assert line[0] == "acquired"
    assert line[1].split(":")[1] == str(holder.pid)

    me = new_owner()
    assert store.acquire(session_id, me) is False
    assert store.get_session(session_id).busy is True  # type: ignore[union-attr]
    assert store.list_sessions()[0].busy is True
    store.release(session_id, me)  # not mine: nothing happens
    assert store.acquire(session_id, me) is False

    holder.kill()
    holder.wait(timeout=10)
    assert store.get_session(session_id).busy is False  # type: ignore[union-attr]
    assert store.acquire(session_id, me) is True
    assert store.get_session(session_id).busy is True  # type: ignore[union-attr]

    other = start_worker("hold", str(store_path), session_id)
    workers.append(other)
    assert other.stdout.readline().strip() == "busy"


def test_lease_is_reentrant_released_and_dropped_with_the_session(store: SessionStore, tmp_path: Path) -> None:
    session_id = store.create_session(cwd=str(tmp_path), model="m").session_id
    owner, rival = new_owner(), new_owner()
    assert store.acquire(session_id, owner) is True
    assert store.acquire(session_id, owner) is True
    assert store.acquire(session_id, rival) is False  # same process, another request
    store.release(session_id, owner)
    assert store.get_session(session_id).busy is False  # type: ignore[union-attr]
    assert store.acquire(session_id, rival) is True
    assert store.delete_session(session_id) is True
    with pytest.raises(SessionNotFound):
        store.acquire(session_id, owner)


def test_owner_liveness_rules() -> None:
    host = socket.gethostname()
    dead_pid = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_pid.wait(timeout=10)  # reaped: the pid no longer exists
    assert owner_is_alive(f"{host}:{os.getpid()}:abc") is True
    assert owner_is_alive(f"{host}:{dead_pid.pid}:abc") is False
    assert owner_is_alive(f"some-other-host:{dead_pid.pid}:abc") is True  # cannot check: assume live
    assert owner_is_alive("garbage") is False
    assert owner_is_alive(f"{host}:0:abc") is False
    assert owner_is_alive(new_owner()) is True


def test_a_stale_lease_in_the_file_is_taken(store: SessionStore, store_path: Path, tmp_path: Path) -> None:
    session_id = store.create_session(cwd=str(tmp_path), model="m").session_id
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=10)
    conn = sqlite3.connect(store_path)
    with conn:
        conn.execute(
            "INSERT INTO leases (session_id, owner, acquired_us) VALUES (?, ?, 0)",
            (session_id, f"{socket.gethostname()}:{gone.pid}:old"),
        )
    conn.close()
    assert store.get_session(session_id).busy is False  # type: ignore[union-attr]
    assert store.acquire(session_id, new_owner()) is True
