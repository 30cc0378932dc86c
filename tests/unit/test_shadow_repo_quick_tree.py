"""A seeded first snapshot writes its trees itself (agent/index_trees.py, issue 35 fourth
session): with every cached tree of the workspace's index valid and a few files changed, the
changed files are hashed here and only the folders on their paths written again, without
`git add` or `write-tree`. Outcome, over real git repositories: the tree is the one the full
path gives (files modified, added in new folders, deleted, a file becoming a folder and back,
an executable bit, a link), the shadow index is what git would have left (a later snapshot of
nothing changed runs `status` only, and finds nothing), and an index whose cached trees do
not hold together takes git's way and is still right."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.test_shadow_repo_seed import (
    _no_user_git_config,  # noqa: F401 - its autouse fixture
    dot_git_digest,
    git,
    tree_listing,
)
from tunacode_lsp.agent.git_index import read_index
from tunacode_lsp.agent.shadow_repo import ShadowRepo

COMMITTED = ["a.txt", "b.py", "d/one.txt", "d/two.txt", "d/e/three.txt", "d/e/f/four.bin", "g/five", "g/h/six"]
NEW = ["new.txt", "d/new.txt", "d/e/new/deep.txt", "z/y/x.txt", "g/h/seven", "d0/x"]
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.sampled_from(COMMITTED + NEW), st.binary(max_size=64)),
        st.tuples(st.just("delete"), st.sampled_from(COMMITTED + NEW), st.just(b"")),
        st.tuples(st.just("chmod"), st.sampled_from(COMMITTED), st.just(b"")),
        st.tuples(st.just("link"), st.sampled_from(COMMITTED + NEW), st.sampled_from([b"a.txt", b"../out", b"d"])),
        st.tuples(st.just("folder"), st.sampled_from(["a.txt", "d/e", "g", "d/one.txt"]), st.just(b"")),
    ),
    max_size=6,
)


class Spy:
    """The git commands a repository runs."""

    def __init__(self, repo: ShadowRepo, monkeypatch) -> None:
        self.commands: list[str] = []
        self.calls: list[tuple[str, ...]] = []
        real = repo._git

        def spying(*args, **kwargs):
            self.commands.append(args[0])
            self.calls.append(args)
            return real(*args, **kwargs)

        monkeypatch.setattr(repo, "_git", spying)


def committed_workspace(root: Path) -> None:
    root.mkdir(parents=True)
    git(root, "init", "-q")
    for name in COMMITTED:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"{name}\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "all")


def apply(root: Path, operations: list[tuple[str, str, bytes]]) -> None:
    for kind, name, data in operations:
        path = root / name
        if kind == "delete":
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
            continue
        if kind == "chmod":
            if path.is_file() and not path.is_symlink():
                path.chmod(path.stat().st_mode ^ 0o111)
            continue
        for parent in reversed(path.relative_to(root).parents[:-1]):  # a file where a folder goes: it goes
            if (root / parent).is_symlink() or (root / parent).is_file():
                (root / parent).unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
        if kind == "write":
            path.write_bytes(data)
        elif kind == "link":
            path.symlink_to(os.fsdecode(data))
        else:  # a folder where a file was
            path.mkdir()
            (path / "inside.txt").write_text("inside\n")


def full_tree(root: Path, data: Path) -> tuple[ShadowRepo, str]:
    full = ShadowRepo(root, data)
    full.seed_from_workspace = False
    return full, full.snapshot()


def assert_index_is_what_git_leaves(repo: ShadowRepo, tree: str) -> None:
    """The shadow index matches the tree, and every valid cached tree names the right folder."""

    assert repo._git("diff-index", "--cached", "--name-only", "HEAD") == b""
    facts = read_index((repo.git_dir / "index").read_bytes(), repo.max_file_bytes)
    stack = [(facts.cache_tree, "")] if facts.cache_tree is not None else []
    while stack:
        node, prefix = stack.pop()
        if node.oid_at >= 0:
            named = repo._git("rev-parse", f"{tree}:{prefix}").decode().strip()
            assert facts.data[node.oid_at:node.oid_at + 20].hex() == named, prefix
        stack.extend((child, f"{prefix}{child.name.decode()}/") for child in node.children)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=OPERATIONS, then=OPERATIONS)
def test_the_quick_tree_is_the_full_paths_tree_and_the_index_is_gits(tmp_path_factory, monkeypatch, first, then):
    base = tmp_path_factory.mktemp("quick")
    root = base / "ws"
    committed_workspace(root)
    apply(root, first)
    before = dot_git_digest(root)
    seeded = ShadowRepo(root, base / "seeded")
    spy = Spy(seeded, monkeypatch)
    tree = seeded.snapshot()
    assert seeded.borrowing()
    assert not {"add", "write-tree", "update-index", "rm"} & set(spy.commands), spy.commands  # the trees written here
    full, expected = full_tree(root, base / "full")
    assert tree == expected, (tree_listing(seeded, tree), tree_listing(full, expected))
    assert dot_git_digest(root) == before
    assert seeded.snapshot() == tree  # nothing changed since: the same tree (its status reads borrowed trees)
    seeded.absorb()
    assert_index_is_what_git_leaves(seeded, tree)
    apply(root, then)
    assert seeded.snapshot() == full.snapshot()
    assert dot_git_digest(root) == before  # read, never written (nor an object's time touched)


def test_a_snapshot_before_the_borrowed_objects_are_copied_in_leaves_the_workspace_git_alone(tmp_path):
    """Its status reads HEAD's trees from the workspace's objects (still borrowed): read only."""

    root = tmp_path / "ws"
    committed_workspace(root)
    (root / "d" / "one.txt").write_text("changed\n")
    before = dot_git_digest(root)
    seeded = ShadowRepo(root, tmp_path / "seeded")
    seeded.snapshot()
    (root / "g" / "h" / "six").write_text("changed too\n")
    (root / "d" / "new.txt").write_text("new\n")
    tree = seeded.snapshot()
    assert seeded.borrowing()
    assert tree == full_tree(root, tmp_path / "full")[1]
    assert dot_git_digest(root) == before


def test_a_modified_file_leaves_an_index_on_which_the_next_snapshot_runs_status_only(tmp_path, monkeypatch):
    root = tmp_path / "ws"
    committed_workspace(root)
    (root / "d" / "e" / "three.txt").write_text("changed\n")
    (root / "b.py").chmod(0o755)
    seeded = ShadowRepo(root, tmp_path / "seeded")
    tree = seeded.snapshot()
    assert tree == full_tree(root, tmp_path / "full")[1]
    spy = Spy(seeded, monkeypatch)
    assert seeded.snapshot() == tree
    assert spy.commands == ["status"]  # the index has the new ids and the folders' trees
    assert_index_is_what_git_leaves(seeded, tree)


def cached_trees_rewritten(root: Path, old: bytes, new: bytes) -> None:
    """The workspace's index with one node of its cached trees changed (a valid checksum);
    a node made not valid loses its id, as git writes it."""

    path = root / ".git" / "index"
    data = path.read_bytes()[:-20]
    at = data.index(b"TREE")
    assert data.count(old, at) == 1
    start = data.index(old, at)
    end = start + len(old) + (20 if b"-1" in new else 0)
    extension = data[at + 8:start] + new + data[end:]
    data = data[:at] + b"TREE" + len(extension).to_bytes(4, "big") + extension
    path.write_bytes(data + hashlib.sha1(data).digest())


@pytest.mark.parametrize("old, new", [
    (b"d\x004 1\n", b"d\x003 1\n"),  # a folder's count one short: its last file would land in its parent
    (b"d\x004 1\n", b"d\x005 1\n"),  # one over: the next folder's first file would land in it
    (b"\x008 2\n", b"\x009 2\n"),  # the root's count over the index's entries
    (b"e\x002 1\n", b"e\x002 0\n"),  # a subfolder the cached trees no longer name
    (b"h\x001 0\n", b"h\x00-1 0\n"),  # not valid (git writes that folder)
])
def test_cached_trees_that_do_not_hold_together_take_gits_way(tmp_path, monkeypatch, old, new):
    root = tmp_path / "ws"
    committed_workspace(root)
    (root / "g" / "h" / "six").write_text("changed\n")
    (root / "d" / "two.txt").write_text("changed\n")
    cached_trees_rewritten(root, old, new)
    assert read_index((root / ".git" / "index").read_bytes(), 1 << 20).trees  # still an index to start from
    seeded = ShadowRepo(root, tmp_path / "seeded")
    spy = Spy(seeded, monkeypatch)
    tree = seeded.snapshot()
    assert "write-tree" in spy.commands
    assert tree == full_tree(root, tmp_path / "full")[1]


def test_a_file_replaced_while_hashed_is_recorded_as_git_records_it(tmp_path):
    """A FIFO where a changed file was: the quick way refuses it, git's way records it gone."""

    root = tmp_path / "ws"
    committed_workspace(root)
    (root / "a.txt").unlink()
    os.mkfifo(root / "a.txt")
    seeded = ShadowRepo(root, tmp_path / "seeded")
    tree = seeded.snapshot()
    assert tree == full_tree(root, tmp_path / "full")[1]
    assert b"a.txt" not in tree_listing(seeded, tree)


def ignored_tracked_listings(spy: Spy) -> int:
    return sum(1 for command in spy.calls if command[:4] == ("ls-files", "-z", "-c", "-i"))


def test_without_ignore_rules_no_listing_of_ignored_tracked_files_runs(tmp_path, monkeypatch):
    root = tmp_path / "ws"
    committed_workspace(root)  # no .gitignore anywhere, `git init`'s info/exclude: comments only
    (root / "d" / "one.txt").write_text("changed\n")
    seeded = ShadowRepo(root, tmp_path / "seeded")
    spy = Spy(seeded, monkeypatch)
    tree = seeded.snapshot()
    assert ignored_tracked_listings(spy) == 0
    assert tree == full_tree(root, tmp_path / "full")[1]


@pytest.mark.parametrize("where", ["untracked", "tracked", "info/exclude"])
def test_an_ignore_rule_anywhere_leaves_ignored_tracked_files_out(tmp_path, monkeypatch, where):
    """Even an untracked .gitignore that ignores itself (the untracked listing never shows it)."""

    root = tmp_path / "ws"
    committed_workspace(root)
    if where == "info/exclude":
        (root / ".git" / "info" / "exclude").write_text("# comment\n/d/e/\n")
    else:
        (root / "d" / ".gitignore").write_text(".gitignore\ne/\n" if where == "untracked" else "e/\n")
        if where == "tracked":
            git(root, "add", "d/.gitignore")
            git(root, "commit", "-q", "-m", "ignore")
    seeded = ShadowRepo(root, tmp_path / "seeded")
    spy = Spy(seeded, monkeypatch)
    tree = seeded.snapshot()
    assert ignored_tracked_listings(spy) == 1
    listing = tree_listing(seeded, tree)
    assert b"d/e/three.txt" not in listing and b"d/one.txt" in listing
    assert tree == full_tree(root, tmp_path / "full")[1]


def test_index_format_4_gives_the_same_tree(tmp_path, monkeypatch):
    root = tmp_path / "ws"
    committed_workspace(root)
    git(root, "update-index", "--index-version", "4")
    (root / "d" / "e" / "three.txt").write_text("changed\n")
    (root / "d" / "e" / "new.txt").write_text("new\n")
    (root / "g" / "five").unlink()
    assert int.from_bytes((root / ".git" / "index").read_bytes()[4:8], "big") == 4
    seeded = ShadowRepo(root, tmp_path / "seeded")
    spy = Spy(seeded, monkeypatch)
    tree = seeded.snapshot()
    assert "write-tree" not in spy.commands
    assert tree == full_tree(root, tmp_path / "full")[1]
    assert seeded.snapshot() == tree


def test_an_intent_to_add_entry_takes_gits_way(tmp_path, monkeypatch):
    """`git add -N` writes format 3 (extended flags); write-tree leaves such a file out."""

    root = tmp_path / "ws"
    committed_workspace(root)
    (root / "d" / "later.txt").write_text("later\n")
    git(root, "add", "-N", "d/later.txt")
    (root / "a.txt").write_text("changed\n")
    assert int.from_bytes((root / ".git" / "index").read_bytes()[4:8], "big") == 3
    seeded = ShadowRepo(root, tmp_path / "seeded")
    spy = Spy(seeded, monkeypatch)
    tree = seeded.snapshot()
    assert "write-tree" in spy.commands
    assert tree == full_tree(root, tmp_path / "full")[1]
    assert b"d/later.txt" in tree_listing(seeded, tree)
