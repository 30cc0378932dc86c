"""Red team (v3): a hostile checkout whose HEAD commit is a tree bomb (three levels of 1,000
entries that all name the same tree: 200 KB of .git, a billion paths). The first snapshot's
HEAD-tree copy listed HEAD's trees with `ls-tree -r -d -t`, which walks every path: git wrote
~1.5 M lines a second into the server's memory until the 60 s git timeout (gigabytes), and
the request's first snapshot waited all that time. Listing each tree once (`rev-list
--objects`, which walks each object once) is 5 lines."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tunacode_lsp.agent.shadow_repo import ShadowRepo

GIT_ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


@pytest.fixture(autouse=True)
def _no_user_git_config(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))


def git(root: Path, *args: str, stdin: bytes | None = None) -> str:
    return subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True, input=stdin).stdout.decode().strip()


def test_a_tree_bomb_at_head_neither_floods_memory_nor_stalls_the_first_snapshot(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("hello\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "one")
    tree = git(root, "mktree", stdin=b"")
    for _ in range(3):
        tree = git(root, "mktree", stdin="".join(f"040000 tree {tree}\td{i:04d}\n" for i in range(1000)).encode())
    git(root, "update-ref", "refs/heads/main", git(root, "commit-tree", tree, "-m", "bomb"))

    repo = ShadowRepo(root, tmp_path / "shadow", timeout=8)
    started = time.monotonic()
    snapshot = repo.snapshot()
    took = time.monotonic() - started
    assert took < 5, f"the first snapshot took {took:.1f} s"
    assert b"a.txt" in repo._git("ls-tree", "-r", "--name-only", snapshot)
