"""The first snapshot of a git workspace copies the trees of the workspace's HEAD in as one
pack (issue 35, item 5): `write-tree` then reuses the index's cached trees instead of writing
each as a loose object; the workspace's `.git` is byte- and time-identical after, and the
tree is the one the full path gives. Real git, real repositories."""

from __future__ import annotations

import pytest

from tests.unit.test_shadow_repo_seed import (
    _no_user_git_config,  # noqa: F401 - its autouse fixture
    dot_git_digest,
    git,
)
from tunacode_lsp.agent.shadow_repo import ShadowRepo


@pytest.mark.parametrize("packed_refs", [False, True])
def test_the_head_trees_arrive_as_one_pack_and_the_workspace_is_untouched(tmp_path, packed_refs):
    root = tmp_path / "ws"
    for folder in ("a", "a/b", "c", "c/d/e"):
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "f.txt").write_text(f"{folder}\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "all")
    if packed_refs:
        git(root, "pack-refs", "--all")
    head_trees = {line.split()[2] for line in git(root, "ls-tree", "-r", "-d", "HEAD").decode().splitlines()}
    head_trees.add(git(root, "rev-parse", "HEAD^{tree}").decode().strip())
    before = dot_git_digest(root)

    seeded = ShadowRepo(root, tmp_path / "data" / "seeded")
    tree = seeded.snapshot()
    assert tree in head_trees  # nothing changed: the workspace's own tree
    loose = {p.parent.name + p.name for p in (seeded.git_dir / "objects").glob("??/*")}
    assert not head_trees & loose  # none written again as a loose object
    assert dot_git_digest(root) == before
    full = ShadowRepo(root, tmp_path / "data" / "full")
    full.seed_from_workspace = False
    assert full.snapshot() == tree
    seeded.absorb()  # the borrowed blobs copied in: the trees read without the workspace
    assert seeded.changes(tree, tree) == [] and seeded.restore(tree, ["a/b/f.txt"]) == ["a/b/f.txt"]
