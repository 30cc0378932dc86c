"""The session service's small store calls on the event loop (agent/sessions.py, issue 35):
no thread hop for them, and never a wait there: a locked database, a large message, the WAL
checkpoint all go to the store's pool."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from tunacode_lsp.agent import sessions as sessions_module
from tunacode_lsp.agent.sessions import SessionService
from tunacode_lsp.contract.protocol import Usage


def text(role: str, body: str) -> dict:
    return {"role": role, "content": [{"type": "text", "text": body}]}


class CountingPool:
    """The service's pool, counting what is handed to its threads."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.submitted: list[str] = []
        self.futures: list[Any] = []
        self.handed = asyncio.Event()  # set when a call is handed to a thread (from the loop)

    def submit(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        self.submitted.append(getattr(getattr(fn, "func", fn), "__name__", repr(fn)))
        self.futures.append(self.pool.submit(fn, *args, **kwargs))
        self.handed.set()
        return self.futures[-1]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)


@pytest.fixture
async def service(tmp_path: Path):
    opened = SessionService(tmp_path / "sessions.sqlite3")
    try:
        yield opened
    finally:
        opened.close()


async def test_a_request_s_small_store_calls_take_no_thread_hop(service, tmp_path):
    """Each of these was a hop to a store thread and back (0.3-2 ms each on a busy machine)."""

    record = await service.create(cwd=str(tmp_path), model="m")  # opens the store (on the pool)
    sid = record.session_id
    pool = service._pool = CountingPool(service._pool)  # type: ignore[assignment]
    assert await service.acquire(sid, "owner-1")
    await service.record_request(sid, "req-1", workspace=str(tmp_path))
    assert await service.history(sid) == []
    for i in range(10):
        await service.append(sid, text("user" if i % 2 == 0 else "assistant", f"m{i}"), usage=Usage(), thoughts=None, model="m")
    await service.set_request_trees(sid, "req-1", before="a" * 40, after="b" * 40)
    await service.set_request_end(sid, "req-1", [{"type": "request_end", "stopReason": "end_turn"}])
    assert (await service.get(sid)).message_count == 10
    assert len(await service.history(sid)) == 10
    await service.release(sid, "owner-1")
    assert pool.submitted == []


async def test_a_large_message_is_stored_on_the_pool(service, tmp_path):
    sid = (await service.create(cwd=str(tmp_path), model="m")).session_id
    pool = service._pool = CountingPool(service._pool)  # type: ignore[assignment]
    big = "x" * (sessions_module.QUICK_MAX_CHARS + 1)
    await service.append(sid, text("user", big), usage=None, thoughts=None, model=None)
    assert pool.submitted == ["append_messages_versioned"]
    assert (await service.messages(sid))[0]["content"][0]["text"] == big


async def test_a_locked_database_is_waited_for_on_the_pool_never_on_the_event_loop(service, tmp_path):
    sid = (await service.create(cwd=str(tmp_path), model="m")).session_id
    other = sqlite3.connect(service.path, isolation_level=None)  # another process's writer, say
    other.execute("BEGIN IMMEDIATE")
    try:
        pool = service._pool = CountingPool(service._pool)  # type: ignore[assignment]
        started = time.monotonic()
        appending = asyncio.ensure_future(service.append(sid, text("user", "hello"), usage=None, thoughts=None, model=None))
        await asyncio.wait_for(pool.handed.wait(), 10)  # the event loop runs on while the append waits for the lock
        assert time.monotonic() - started < 1.0
        assert pool.submitted == ["append_messages_versioned"]
        assert not appending.done()
    finally:
        other.execute("COMMIT")
        other.close()
    assert await asyncio.wait_for(appending, 10) == 1
    assert [m["content"][0]["text"] for m in await service.messages(sid)] == ["hello"]


async def test_the_wal_is_checkpointed_although_quick_commits_never_do_it(service, tmp_path, monkeypatch):
    monkeypatch.setattr(sessions_module, "WAL_CHECKPOINT_EVERY", 16)
    sid = (await service.create(cwd=str(tmp_path), model="m")).session_id
    pool = service._pool = CountingPool(service._pool)  # type: ignore[assignment]
    body = "y" * 20_000  # ~5 pages a message: 160 of them are ~3.3 MB of WAL without a checkpoint
    for i in range(160):
        await service.append(sid, text("user" if i % 2 == 0 else "assistant", body), usage=None, thoughts=None, model=None)
        if service._checkpointing:  # the checkpoint runs on the pool: wait for it to finish
            await asyncio.wait_for(asyncio.wrap_future(pool.futures[-1]), 10)
    wal = Path(f"{service.path}-wal")
    assert wal.stat().st_size < 1_500_000, wal.stat().st_size
    assert len(await service.messages(sid)) == 160
