"""ShadowRepo.bound (issue 35, item 1) on real files with real git: only the trees still named
stay, a busy session's checkpoints are never pruned, and the repository keeps working after."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tunacode_lsp.agent.shadow_repo import SessionTrees, ShadowRepo


def _repo(tmp_path: Path) -> tuple[Path, ShadowRepo]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.md").write_text("# notes\n")
    return root, ShadowRepo(root, tmp_path / "data" / "repo")


def test_unnamed_snapshots_go_first_and_a_busy_session_is_never_pruned(tmp_path):
    root, repo = _repo(tmp_path)
    start = repo.snapshot()
    (root / "big.bin").write_bytes(os.urandom(300_000))
    with_big = repo.snapshot()
    (root / "big.bin").unlink()
    (root / "other.bin").write_bytes(os.urandom(300_000))
    with_other = repo.snapshot()  # an intermediate snapshot no session names
    (root / "other.bin").unlink()
    started = time.time()  # the busy session's running request: its snapshots since are kept
    now = repo.snapshot()
    assert repo.size() > 600_000
    busy = SessionTrees("busy", frozenset({start, with_big}), busy=True, since=started)
    # not even a busy session's checkpoints are pruned to reach an impossible bound
    assert repo.bound(1, [busy]) == []
    assert 300_000 < repo.size() < 400_000  # the unnamed snapshot's bytes are gone
    repo.require(start, with_big, now)
    assert not repo.paths_in(now, ["other.bin"])
    idle = SessionTrees("idle", frozenset({start, with_big}), busy=False, since=time.time() - 60)
    assert repo.bound(100_000, [idle]) == ["idle"]
    assert repo.size() < 100_000
    assert "pruned" in (repo.pruned_note("idle") or "") and repo.pruned_note("busy") is None
    del with_other
    # the repository goes on: a new snapshot and a restore of a kept tree
    (root / "notes.md").write_text("# changed\n")
    changed = repo.snapshot()
    assert [c.path for c in repo.changes(now, changed)] == ["notes.md"]
    assert repo.restore(now, ["notes.md"]) == ["notes.md"]
    assert (root / "notes.md").read_text() == "# notes\n"


def test_the_estimate_measures_only_when_the_bound_may_be_crossed(tmp_path):
    root, repo = _repo(tmp_path)
    assert repo.may_exceed(10_000)  # never measured
    repo.snapshot()
    repo.size()
    assert not repo.may_exceed(10_000)
    (root / "grown.txt").write_text("x" * 20_000)
    repo.snapshot()
    assert repo.may_exceed(10_000)  # 20,000 bytes added since: measure
    assert repo.size() < 10_000  # compressed, it fits
    assert not repo.may_exceed(10_000)
