"""The first snapshot of a git workspace starts from the workspace's own index (issue 35,
item 2): it records exactly the files and bytes the full path records (a property test over
real git repositories: committed, changed, staged, deleted, untracked, ignored-but-tracked,
too large, a submodule), never writes into the workspace's `.git`, falls back to the full
path where the workspace's git may have converted bytes, and once its borrowed objects are
copied in, a restore gives back the exact bytes even after the workspace's objects are gone."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tunacode_lsp.agent.shadow_repo import ShadowRepo

GIT_ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
NAMES = ["a.txt", "b c.py", "src/m.py", "src/deep/n.bin", "ünï.txt", "sp ace/x", ".hidden", "run.sh"]
CONTENT = st.one_of(st.binary(max_size=200), st.just(b""), st.just(b"line\r\nline\r\n"), st.just(b"x" * 3000))
LIMIT = 2000  # max_file_bytes: the 3000-byte files are over it


@pytest.fixture(autouse=True)
def _no_user_git_config(tmp_path_factory, monkeypatch):
    """The user's own ~/.gitconfig (an `autocrlf` there turns seeding off) is not this test's."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))


def git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True).stdout


def tree_listing(repo: ShadowRepo, tree: str) -> bytes:
    return repo._git("ls-tree", "-r", "-z", "--full-tree", tree)


def dot_git_digest(root: Path) -> dict[str, str]:
    found = {}
    for path in sorted((root / ".git").rglob("*")):
        if path.is_file():
            found[str(path)] = hashlib.sha256(path.read_bytes() + str(path.stat().st_mtime_ns).encode()).hexdigest()
    return found


def snapshots(root: Path, data: Path) -> tuple[ShadowRepo, str, ShadowRepo, str]:
    seeded = ShadowRepo(root, data / "seeded", max_file_bytes=LIMIT)
    full = ShadowRepo(root, data / "full", max_file_bytes=LIMIT)
    full.seed_from_workspace = False
    return seeded, seeded.snapshot(), full, full.snapshot()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    committed=st.dictionaries(st.sampled_from(NAMES), CONTENT, min_size=1, max_size=6),
    changed=st.dictionaries(st.sampled_from(NAMES), CONTENT, max_size=3),
    deleted=st.sets(st.sampled_from(NAMES), max_size=2),
    staged=st.booleans(),
    ignore_tracked=st.booleans(),
)
def test_the_seeded_first_snapshot_records_exactly_what_the_full_path_records(
    tmp_path_factory, committed, changed, deleted, staged, ignore_tracked
):
    root = tmp_path_factory.mktemp("ws")
    git(root, "init", "-q")
    for name, data in committed.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    (root / "run.sh").write_bytes(b"#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "c")
    for name, data in changed.items():  # changed after the commit (or new: untracked)
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    if staged:
        git(root, "add", "-A")
    for name in deleted:
        (root / name).unlink(missing_ok=True)
    if ignore_tracked:
        (root / ".gitignore").write_text("*.txt\n")  # tracked .txt files are now ignored
    before = dot_git_digest(root)
    seeded, seeded_tree, full, full_tree = snapshots(root, tmp_path_factory.mktemp("data"))
    assert seeded.borrowing()  # it was seeded
    assert seeded_tree == full_tree, (tree_listing(seeded, seeded_tree), tree_listing(full, full_tree))
    assert dot_git_digest(root) == before  # the workspace's .git is never written


def test_a_submodule_and_a_nested_repository_are_left_out_as_in_the_full_path(tmp_path):
    inner = tmp_path / "inner"
    inner.mkdir()
    git(inner, "init", "-q")
    (inner / "f").write_text("inner\n")
    git(inner, "add", "-A")
    git(inner, "commit", "-q", "-m", "i")
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    (root / "top.txt").write_text("top\n")
    git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "sub")
    git(root, "commit", "-q", "-m", "with a submodule")
    seeded, seeded_tree, full, full_tree = snapshots(root, tmp_path / "data")
    assert seeded_tree == full_tree
    assert b"sub" not in tree_listing(seeded, seeded_tree).split(b"\t")[-1:]


def test_a_workspace_git_that_may_convert_bytes_is_not_used(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "core.autocrlf", "input")
    (root / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "c")
    seeded, seeded_tree, full, full_tree = snapshots(root, tmp_path / "data")
    assert not seeded.borrowing()  # not seeded: the index's blob has LF, the file CRLF
    assert seeded_tree == full_tree
    (root / "crlf.txt").write_bytes(b"changed\n")
    assert seeded.restore(seeded_tree, ["crlf.txt"]) == ["crlf.txt"]
    assert (root / "crlf.txt").read_bytes() == b"a\r\nb\r\n"


def test_borrowed_objects_are_copied_in_and_a_restore_gives_the_exact_bytes_after_the_workspace_gc(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    files = {f"pkg/f{i}.bin": os.urandom(64) + bytes([i]) for i in range(40)}
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "c")
    repo = ShadowRepo(root, tmp_path / "data" / "repo")
    tree = repo.snapshot()
    assert repo.borrowing()
    (root / "pkg/f0.bin").write_bytes(b"edited\n")  # restored while still borrowing
    assert repo.restore(tree, ["pkg/f0.bin"]) == ["pkg/f0.bin"]
    assert (root / "pkg/f0.bin").read_bytes() == files["pkg/f0.bin"]
    repo.absorb()
    assert not repo.borrowing()
    shutil.rmtree(root / ".git")  # the workspace's objects are gone (a gc, a new clone)
    for name in files:
        (root / name).write_bytes(b"edited\n")
    assert sorted(repo.restore(tree, sorted(files))) == sorted(files)
    assert {name: (root / name).read_bytes() for name in files} == files
