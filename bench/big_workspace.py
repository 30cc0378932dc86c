"""Large workspaces (issue 35): a read-only request in a 60,000-file workspace, and the first
checkpoint of a big tree.

- A read-only request (`list_files`, `grep`, then an answer) sent as soon as the server has
  answered `initialize`, while its first snapshot of the tree (the start-up warm-up) runs;
  then a second one. Baseline: the same requests in a 10-file workspace, same run. Goal:
  p50 < 2 s (a request that changed nothing never waits for a snapshot).
- The first checkpoint (agent/shadow_repo.py) of a big git workspace (every file committed
  in the workspace's own repository, one changed), against `git status` of the same workspace
  in its own repository, same run, 5 rounds (each: the status, then a snapshot into a new
  shadow repository, then its `absorb`, awaited: nothing of one round runs during the next),
  after the tree is flushed to disk and one untimed status. Goal: ratio <= 1.5. And of the
  same tree without a `.git` (the full path: every file read once), for comparison.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from pathlib import Path

from .client import BenchServer, scripted_options
from .config import BenchConfig
from .model import ScriptedModelProcess
from .search import _tree
from .stats import Goal, Row, Samples, ms
from .workspace import make_project

FILES = 60_000
CHECKPOINT_FILES = 30_000


def read_only_turns() -> list[dict]:
    return [
        {"steps": [{"tool_call": {"name": "list_files", "arguments": {"path": "."}}}]},
        {"steps": [{"tool_call": {"name": "grep", "arguments": {"pattern": "NEEDLE_NOWHERE"}}}]},
        {"text": "Nothing to change."},
    ]


async def _requests(workspace: Path, home: Path, rounds: int) -> tuple[Samples, Samples]:
    """Per round, a new server: its first request (sent right after `initialize`) and a second."""

    first, later = Samples(), Samples()
    for index in range(rounds):
        with ScriptedModelProcess({"turns": read_only_turns() * 2}) as model:
            server = await BenchServer(workspace, _folder(home / f"home{index}")).start(scripted_options(model.chat_url))
            try:
                for samples in (first, later):
                    sent = server.send("tunacode.request", {"prompt": "look around"})
                    answer = await sent.answer(timeout=300)
                    if answer.get("stopReason") != "end_turn":
                        raise RuntimeError(f"read-only request: {answer}")
                    samples.add(ms(sent.latency))
            finally:
                await server.stop()
    return first, later


def _git(root: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"})
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


async def run(config: BenchConfig) -> list[Row]:
    from tunacode_lsp.agent.shadow_repo import ShadowRepo

    files = config.reps(FILES, 3_000)
    big = config.folder("big-workspace")
    await asyncio.to_thread(_tree, big, files)
    small = make_project(config.folder("small-workspace"), modules=10)
    rounds = config.reps(3, 1)
    small_first, small_later = await _requests(small, config.folder("big/small-homes"), rounds)
    big_first, big_later = await _requests(big, config.folder("big/big-homes"), rounds)
    rows = [
        Row(f"read-only request, {files:,} files, first after initialize", big_first, small_first,
            "same request, 10-file workspace", Goal("p50", 2000)),
        Row(f"read-only request, {files:,} files, the next one", big_later, small_later,
            "same request, 10-file workspace", Goal("p50", 2000)),
    ]

    # the first checkpoint of a git workspace against `git status` of it
    count = config.reps(CHECKPOINT_FILES, 3_000)
    tree = config.folder("git-tree")
    await asyncio.to_thread(_tree, tree, count)
    await asyncio.to_thread(_git, tree, "init", "-q")
    await asyncio.to_thread(_git, tree, "add", "-A")
    await asyncio.to_thread(_git, tree, "commit", "-q", "-m", "all")
    (tree / "pkg0000" / "mod00000.py").write_text("changed\n")  # one change not committed
    status = ["git", "status", "--porcelain=v1", "-z", "-uall"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    # not timed: the 30,000 files and objects just written are flushed (the kernel's writeback
    # would run beside the first rounds), and one status refreshes the workspace's index (its
    # racily clean entries, as any `git status` of the user's would)
    await asyncio.to_thread(os.sync)
    await asyncio.to_thread(subprocess.run, status, cwd=tree, env=env, capture_output=True, check=True)
    firsts, statuses, plain, absorbs = Samples(), Samples(), Samples(), Samples()
    for index in range(config.reps(5, 1)):
        started = time.perf_counter()
        await asyncio.to_thread(subprocess.run, status, cwd=tree, env=env, capture_output=True, check=True)
        statuses.add(ms(time.perf_counter() - started))
        repo = ShadowRepo(tree, config.folder(f"git-tree-data{index}") / "repo")
        started = time.perf_counter()
        await asyncio.to_thread(repo.snapshot)
        firsts.add(ms(time.perf_counter() - started))
        started = time.perf_counter()
        await asyncio.to_thread(repo.absorb)  # after the snapshot, on the checkpoints' worker
        absorbs.add(ms(time.perf_counter() - started))
    rows.append(Row(f"first checkpoint of a git workspace, {count:,} files", firsts, statuses,
                    "git status of the workspace's own repository", Goal("ratio", 1.5)))
    rows.append(Row(f"  then copying the borrowed objects in (background), {count:,} files", absorbs,
                    note="git repack -a on the checkpoints' worker after the first snapshot; nothing waits for it"))
    # the same tree, not a git workspace: every file is read once
    bare = config.folder("plain-tree")
    await asyncio.to_thread(shutil.copytree, tree, bare, ignore=shutil.ignore_patterns(".git"), dirs_exist_ok=True)
    for index in range(config.reps(2, 1)):
        repo = ShadowRepo(bare, config.folder(f"plain-tree-data{index}") / "repo")
        started = time.perf_counter()
        await asyncio.to_thread(repo.snapshot)
        plain.add(ms(time.perf_counter() - started))
    rows.append(Row(f"first checkpoint of a workspace without git, {count:,} files", plain, statuses,
                    "git status of the git workspace above (same files)"))
    return rows


def _folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
