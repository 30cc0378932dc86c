"""The checkpoints' snapshot queue (agent/checkpoints.py `SnapshotQueue`): snapshots run on a
worker of their own, one at a time, and callers that ask while one of the same workspace
waits to start share it (200 requests starting together take a few snapshots, not 200; the
event loop's default pool is never filled with snapshots sleeping on the lock)."""

from __future__ import annotations

import asyncio
import fcntl
import os
import threading
from pathlib import Path

from tunacode_lsp.agent.checkpoints import SnapshotQueue
from tunacode_lsp.agent.shadow_repo import ShadowRepo


class Watched(ShadowRepo):
    """The real repository, telling when a snapshot starts (the worker has taken it)."""

    def __init__(self, root: Path, git_dir: Path) -> None:
        super().__init__(root, git_dir)
        self.started = threading.Event()

    def snapshot(self) -> str:
        self.started.set()
        return super().snapshot()


async def test_callers_share_a_queued_snapshot_and_the_default_pool_stays_free(tmp_path: Path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    repo = Watched(root, tmp_path / "data" / "repo")
    repo.lock_path.parent.mkdir(parents=True, exist_ok=True)
    held = os.open(repo.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(held, fcntl.LOCK_EX)  # the first snapshot starts and waits for the lock
    queue = SnapshotQueue()
    try:
        first = queue.submit(repo)
        # the worker starts it at once (until then, asking shares it)
        assert await asyncio.get_running_loop().run_in_executor(None, repo.started.wait, 30)
        second = queue.submit(repo)
        assert first.running() and second is not first
        later = [second, *(queue.submit(repo) for _ in range(199))]
        assert len({id(f) for f in later}) == 1 and later[0] is not first  # one snapshot after the running one
        # the default pool is not taken by them: a to_thread call answers at once
        assert await asyncio.wait_for(asyncio.to_thread(threading.get_ident), 5)
        (root / "b.txt").write_text("b\n")  # written after the 200 asked: their snapshot has it
    finally:
        fcntl.flock(held, fcntl.LOCK_UN)
        os.close(held)
    tree = await asyncio.wait_for(asyncio.wrap_future(later[0]), 60)
    assert repo.paths_in(tree, ["a.txt", "b.txt"]) == {"a.txt", "b.txt"}
    assert await queue.snapshot(repo) == tree  # nothing changed since
