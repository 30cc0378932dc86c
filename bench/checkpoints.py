"""Checkpoints (agent/shadow_repo.py) of a generated 30,000-file workspace: a snapshot when
nothing changed (goal: under 150 ms) and when one file changed, against `git status` run
directly on the same tree in the same run (the floor: a snapshot is a status plus, when
something changed, an add and a write-tree)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time

from .config import BenchConfig
from .search import FILES, _tree
from .stats import Goal, Row, Samples, ms


async def run(config: BenchConfig) -> list[Row]:
    from tunacode_lsp.agent.shadow_repo import ShadowRepo, _git_env

    files = config.reps(FILES, 3_000)
    root = config.folder("checkpoint-tree")
    await asyncio.to_thread(_tree, root, files)
    repo = ShadowRepo(root, config.folder("checkpoint-data") / "repo")
    started = time.perf_counter()
    await asyncio.to_thread(repo.snapshot)
    first = Samples([ms(time.perf_counter() - started)])
    status = ["git", "status", "--porcelain=v1", "-z", "-uall", "--no-renames", "--ignore-submodules=all"]
    env = _git_env(repo.git_dir, repo.root)
    unchanged, changed, git_status = Samples(), Samples(), Samples()
    target = next(iter(sorted(root.rglob("mod*.py"))))
    for index in range(config.reps(15, 2)):
        started = time.perf_counter()
        await asyncio.to_thread(subprocess.run, status, cwd=root, env=env, capture_output=True, check=False)
        git_status.add(ms(time.perf_counter() - started))
        started = time.perf_counter()
        await asyncio.to_thread(repo.snapshot)
        unchanged.add(ms(time.perf_counter() - started))
        target.write_text(f"# change {index}\n" + target.read_text())
        os.utime(target)
        started = time.perf_counter()
        await asyncio.to_thread(repo.snapshot)
        changed.add(ms(time.perf_counter() - started))
    return [
        Row(f"checkpoint, nothing changed, {files:,} files", unchanged, git_status, "git status directly, same tree",
            Goal("p50", 150.0)),
        Row(f"checkpoint, one file changed, {files:,} files", changed, git_status, "git status directly, same tree"),
        Row(f"first checkpoint of {files:,} files", first, note="reads every file once; taken after initialized"),
    ]
