"""The checkpoint repository's size bound (agent/shadow_repo.py `bound`): eight sessions each
add and remove a 256 KB file of random bytes in a generated workspace; the repository is then
bounded to half its size. Figures: its size after (against the same repository unbounded, the
only behaviour before the bound existed) and the time the pruning takes off the request path
(against `git repack -a -d` + `git prune` of a copy, run directly in the same run)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from pathlib import Path

from .config import BenchConfig
from .search import _tree
from .stats import Goal, Row, Samples, ms

SESSIONS = 8
MEGABYTE = 1024 * 1024


def _grow(root: Path, git_dir: Path) -> tuple[object, list[object]]:
    from tunacode_lsp.agent.shadow_repo import SessionTrees, ShadowRepo

    repo = ShadowRepo(root, git_dir)
    repo.snapshot()
    sessions = []
    for index in range(SESSIONS):
        started = time.time()
        before = repo.snapshot()
        blob = root / f"session{index}.bin"
        blob.write_bytes(os.urandom(256 * 1024))
        after = repo.snapshot()
        blob.unlink()
        sessions.append(SessionTrees(f"s{index}", frozenset({before, after, repo.snapshot()}), False, started))
    return repo, sessions


def _objects_mb(git_dir: Path) -> float:
    return sum(p.lstat().st_size for p in (git_dir / "objects").rglob("*") if p.is_file()) / MEGABYTE


def _direct_gc(git_dir: Path, root: Path) -> float:
    from tunacode_lsp.agent.shadow_repo import _git_env

    env = _git_env(git_dir, root)
    started = time.perf_counter()
    for args in (["repack", "-a", "-d", "-q"], ["prune", "--expire=now"]):
        subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, check=True)
    return ms(time.perf_counter() - started)


async def run(config: BenchConfig) -> list[Row]:
    files = config.reps(10_000, 1_000)
    sizes, unbounded, prune, gc = Samples(unit="MB"), Samples(unit="MB"), Samples(), Samples()
    for attempt in range(config.reps(3, 1)):
        root = config.folder(f"bound-tree-{attempt}")
        await asyncio.to_thread(_tree, root, files)
        git_dir = config.folder(f"bound-data-{attempt}") / "repo"
        repo, sessions = await asyncio.to_thread(_grow, root, git_dir)
        copy = git_dir.parent / "copy"
        await asyncio.to_thread(shutil.copytree, git_dir, copy)
        unbounded.add(_objects_mb(git_dir))
        bound = int(unbounded.values[-1] * MEGABYTE / 2)
        started = time.perf_counter()
        await asyncio.to_thread(repo.bound, bound, sessions)  # type: ignore[attr-defined]
        prune.add(ms(time.perf_counter() - started))
        sizes.add(_objects_mb(git_dir))
        gc.add(await asyncio.to_thread(_direct_gc, copy, root))
    return [
        Row(f"checkpoint repository after {SESSIONS} sessions, bounded to half ({files:,} files)", sizes, unbounded,
            "the same repository unbounded (before: gc.auto 0, no bound)", Goal("ratio", 0.5)),
        Row("pruning it down to the bound (off the request path)", prune, gc,
            "git repack -a -d + prune of a copy, directly",
            note="the oldest sessions' checkpoints go a quarter per round, each round a repack"),
    ]
