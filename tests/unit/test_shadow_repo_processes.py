"""A snapshot when nothing changed is one git process (`status`), on real files with real git
(issue 35, item 3: the 20-turn session paid `config --get` and `rev-parse` on every snapshot,
three processes of four); what another process changes in the repository is still seen."""

from __future__ import annotations

from pathlib import Path

from tunacode_lsp.agent.shadow_repo import ShadowRepo


def _counting(repo: ShadowRepo) -> list[str]:
    calls: list[str] = []
    real = repo._git

    def counted(*args: str, **kwargs: object) -> bytes:
        calls.append(args[0])
        return real(*args, **kwargs)  # type: ignore[arg-type]

    repo._git = counted  # type: ignore[method-assign]
    return calls


def test_an_unchanged_snapshot_runs_only_git_status(tmp_path: Path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    repo = ShadowRepo(root, tmp_path / "data" / "repo")
    first = repo.snapshot()
    calls = _counting(repo)
    assert repo.snapshot() == first
    assert calls == ["status"]


def test_another_process_moving_head_or_the_excludes_is_seen(tmp_path: Path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    git_dir = tmp_path / "data" / "repo"
    mine, theirs = ShadowRepo(root, git_dir), ShadowRepo(root, git_dir)  # two servers on one workspace
    mine.snapshot()
    (root / "a.txt").write_text("changed\n")
    moved = theirs.snapshot()  # HEAD moves under `mine`
    assert mine.snapshot() == moved  # not its cached HEAD: nothing is left to record
    assert [c.path for c in mine.changes(moved, mine.snapshot())] == []
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "info" / "exclude").write_text("secret.txt\n")
    (root / "secret.txt").write_text("x\n")
    theirs.snapshot()  # it points core.excludesFile at the copy; `mine` must honour it too
    (root / "b.txt").write_text("b\n")
    tree = mine.snapshot()
    assert mine.paths_in(tree, ["secret.txt", "b.txt"]) == {"b.txt"}
