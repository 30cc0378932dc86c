"""A hostile workspace `.git` against the checkpoints' shadow repository (agent/shadow_repo.py,
agent/git_index.py): an index naming paths outside the tree or inside `.git`, a FIFO where
git reads the workspace's alternates, a damaged index, and configuration (the workspace's,
the user's, attributes) naming programs. Outcome: the first snapshot records what the full
path records, a restore works, and no program named there ever runs. Real git, real files."""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

import pytest

from tests.unit.test_shadow_repo_seed import (
    _no_user_git_config,  # noqa: F401 - its autouse fixture
    dot_git_digest,
    git,
    tree_listing,
)
from tunacode_lsp.agent.shadow_repo import ShadowRepo


def blob(root: Path, data: bytes) -> str:
    """Store `data` in the workspace's own repository; its id."""

    path = root / ".blob-input"
    path.write_bytes(data)
    oid = git(root, "hash-object", "-w", str(path)).decode().strip()
    path.unlink()
    return oid


def write_index(root: Path, entries: list[tuple[bytes, Path, str]]) -> None:
    """Write the workspace's `.git/index` by hand (format 2, a valid checksum): each entry a
    path as git would never write it, the file whose stat data it carries, a blob id. git's
    own commands refuse to write such paths; a hostile checkout ships the index as it likes."""

    body = b""
    for name, source, oid in sorted(entries):
        info = source.stat()
        fields = struct.pack(
            ">10I20sH", int(info.st_ctime), info.st_ctime_ns % 10**9, int(info.st_mtime), info.st_mtime_ns % 10**9,
            info.st_dev & 0xFFFFFFFF, info.st_ino & 0xFFFFFFFF, 0o100644, info.st_uid, info.st_gid, info.st_size,
            bytes.fromhex(oid), min(len(name), 0xFFF),
        )
        entry = fields + name
        body += entry + b"\0" * (8 - len(entry) % 8)
    data = b"DIRC" + struct.pack(">II", 2, len(entries)) + body
    (root / ".git" / "index").write_bytes(data + hashlib.sha1(data).digest())


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("a\n")
    (root / "src").mkdir()
    (root / "src" / "m.py").write_text("m\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "c")
    return root


def test_an_index_naming_paths_outside_the_tree_or_in_git_is_not_recorded(tmp_path):
    root = workspace(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("a secret beside the workspace\n")
    hooks = root / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "post-checkout").write_text("#!/bin/sh\n")
    # the stat data of files outside the tree and inside .git: git sees them as unchanged
    write_index(root, [
        (b"a.txt", root / "a.txt", blob(root, b"a\n")),
        (b"src/m.py", root / "src" / "m.py", blob(root, b"m\n")),
        (b"../outside.txt", outside, blob(root, b"planted\n")),
        (b"src/../../outside.txt", outside, blob(root, b"planted\n")),
        (b".git/hooks/post-checkout", hooks / "post-checkout", blob(root, b"#!/bin/sh\ntouch pwned\n")),
        (b"src/planted/", root / "a.txt", blob(root, b"a\n")),
    ])
    before = dot_git_digest(root)
    seeded = ShadowRepo(root, tmp_path / "data" / "seeded")
    tree = seeded.snapshot()
    full = ShadowRepo(root, tmp_path / "data" / "full")
    full.seed_from_workspace = False
    assert tree == full.snapshot(), tree_listing(seeded, tree)
    assert b".." not in tree_listing(seeded, tree) and b".git/" not in tree_listing(seeded, tree)
    (root / "a.txt").write_text("changed\n")
    assert seeded.restore(tree, ["a.txt"]) == ["a.txt"]
    assert (root / "a.txt").read_text() == "a\n"
    assert outside.read_text() == "a secret beside the workspace\n"
    assert dot_git_digest(root) == before


def test_a_damaged_index_takes_the_full_path(tmp_path):
    root = workspace(tmp_path)
    index = root / ".git" / "index"
    data = bytearray(index.read_bytes())
    data[40] ^= 0xFF  # a stat field: the checksum no longer matches
    index.write_bytes(bytes(data))
    seeded = ShadowRepo(root, tmp_path / "data" / "seeded")
    tree = seeded.snapshot()
    assert not seeded.borrowing()
    full = ShadowRepo(root, tmp_path / "data" / "full")
    full.seed_from_workspace = False
    assert tree == full.snapshot()


@pytest.mark.parametrize("fifo", ["info/alternates", "info/commit-graph", "pack/pack-0000.idx"])
def test_a_fifo_in_the_workspace_objects_never_blocks_a_restore(tmp_path, fifo):
    root = workspace(tmp_path)
    (root / ".git" / "objects" / fifo).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(root / ".git" / "objects" / fifo)  # git opening it would wait for a writer forever
    repo = ShadowRepo(root, tmp_path / "data" / "repo", timeout=10)
    tree = repo.snapshot()
    (root / "a.txt").write_text("changed\n")
    assert repo.restore(tree, ["a.txt"]) == ["a.txt"]
    assert (root / "a.txt").read_text() == "a\n"
    repo.absorb()
    assert not repo.borrowing()


def test_no_program_named_by_the_workspace_or_the_user_runs(tmp_path, monkeypatch):
    root = workspace(tmp_path)
    marker = tmp_path / "ran"
    program = tmp_path / "prog.sh"
    program.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {marker}\ncat\n")
    program.chmod(0o755)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for name in ("pre-commit", "post-commit", "post-checkout", "post-index-change", "reference-transaction",
                 "pre-auto-gc", "fsmonitor-watchman"):
        (hooks / name).write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        (hooks / name).chmod(0o755)
    settings = (
        f"[core]\n\tfsmonitor = {program}\n\thooksPath = {hooks}\n\tsshCommand = {program}\n\tpager = {program}\n"
        f"\teditor = {program}\n\taskPass = {program}\n\talternateRefsCommand = {program}\n"
        f"[filter \"evil\"]\n\tclean = {program}\n\tsmudge = {program}\n\tprocess = {program}\n"
        f"[diff \"evil\"]\n\ttextconv = {program}\n\tcommand = {program}\n[diff]\n\texternal = {program}\n"
        f"[gc]\n\tauto = 1\n[credential]\n\thelper = !{program}\n[include]\n\tpath = {tmp_path / 'more.config'}\n"
    )
    (tmp_path / "more.config").write_text(f"[core]\n\tfsmonitor = {program}\n")
    (root / ".git" / "config").write_text((root / ".git" / "config").read_text() + settings)
    (root / ".git" / "hooks").mkdir(exist_ok=True)
    for name in ("post-checkout", "pre-commit", "post-commit"):
        (root / ".git" / "hooks" / name).write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        (root / ".git" / "hooks" / name).chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(settings)  # the user's own, too
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    (root / ".gitattributes").write_text("* filter=evil diff=evil\n")
    for seed in (True, False):
        repo = ShadowRepo(root, tmp_path / "data" / f"repo-{seed}")
        repo.seed_from_workspace = seed
        first = repo.snapshot()
        (root / "a.txt").write_text("changed\n")
        (root / "new.txt").write_text("new\n")
        second = repo.snapshot()
        assert [c.path for c in repo.changes(first, second)] == ["a.txt", "new.txt"]
        assert "+changed" in repo.diff(first, second, "a.txt")
        assert repo.restore(first, ["a.txt", "new.txt"]) == ["a.txt", "new.txt"]
        assert (root / "a.txt").read_text() == "a\n"
        repo.absorb()
    assert not marker.exists(), marker.read_text()
