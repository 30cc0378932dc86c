"""The shadow repository of checkpoints (agent/shadow_repo.py) on real files with real git:
restoring a snapshot gives back the exact bytes and modes (property test), whatever the
workspace's own .gitattributes say; concurrent processes take turns (lock); limits."""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tunacode_lsp.agent import shadow_repo
from tunacode_lsp.agent.shadow_repo import CheckpointError, CheckpointsOff, ShadowRepo

NAMES = ["a.txt", "b c.py", "*.md", "[x]?.txt", "!bang", "#hash", "trail ", "ünï.txt", "tab\tname", "new\nline",
         os.fsdecode(b"latin-\xe9.txt"), ".hidden", "CAPS.TXT"]
FOLDERS = ["", "src/", "src/deep/", "sp ace/"]
CONTENTS = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.lists(st.sampled_from(["line", "", "x\ty", "é"]), max_size=6).map(lambda ls: "\r\n".join(ls).encode()),
    st.just(b""),
    st.just(b"no newline at end"),
)
FILES = st.dictionaries(
    st.tuples(st.sampled_from(FOLDERS), st.sampled_from(NAMES)).map("".join),
    st.tuples(CONTENTS, st.booleans()),  # (bytes, executable)
    max_size=8,
)


def _write(root: Path, files: dict[str, tuple[bytes, bool]]) -> None:
    for rel, (data, executable) in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(0o755 if executable else 0o644)


def _state(root: Path) -> dict[str, tuple[bytes, bool]]:
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if rel in (".gitattributes",):
                continue
            found[rel] = (path.read_bytes(), bool(path.stat().st_mode & stat.S_IXUSR))
    return found


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=FILES, after=FILES, data=st.data())
def test_restoring_a_snapshot_gives_back_the_exact_bytes_and_modes(tmp_path_factory, before, after, data):
    base = tmp_path_factory.mktemp("ws")
    root, git_dir = base / "ws", base / "data" / "checkpoints" / "p"
    root.mkdir()
    # the workspace's own attributes would rewrite line ends and run a filter: they must not apply
    (root / ".gitattributes").write_bytes(b"* text eol=crlf filter=lfs ident\n")
    _write(root, before)
    repo = ShadowRepo(root, git_dir)
    first = repo.snapshot()
    assert repo.snapshot() == first  # nothing changed, same tree

    for rel in data.draw(st.lists(st.sampled_from(sorted(before)), unique=True)) if before else []:
        (root / rel).unlink()  # some files deleted, others changed or added below
    _write(root, after)
    second = repo.snapshot()
    changed = [c.path for c in repo.changes(first, second)]
    repo.restore(first, changed)
    assert _state(root) == before
    assert repo.changes(first, repo.snapshot()) == []


def test_the_lock_serialises_processes_and_every_tree_stays_readable(tmp_path):
    root, git_dir = tmp_path / "ws", tmp_path / "cp" / "p"
    root.mkdir()
    (root / "shared.txt").write_text("0\n")
    worker = (
        "import sys; from pathlib import Path; from tunacode_lsp.agent.shadow_repo import ShadowRepo\n"
        "root, git_dir, me = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]\n"
        "repo = ShadowRepo(root, git_dir)\n"
        "for i in range(12):\n"
        "    (root / f'{me}.txt').write_text(f'{i}\\n')\n"
        "    print(repo.snapshot(), flush=True)\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", worker, str(root), str(git_dir), f"w{n}"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for n in range(4)]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [err for _, err in outputs]
    trees = {line for out, _ in outputs for line in out.split()}
    repo = ShadowRepo(root, git_dir)
    repo.require(*trees)  # every tree any process got is stored
    env = {**repo._env}
    fsck = subprocess.run(["git", "fsck", "--no-progress"], env=env, capture_output=True, text=True, timeout=60)
    assert fsck.returncode == 0, fsck.stderr
    last = repo.snapshot()
    assert {c.path for c in repo.changes(next(iter(trees)), last)} <= {"w0.txt", "w1.txt", "w2.txt", "w3.txt"}


def test_a_lock_held_too_long_is_a_clear_error(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    repo = ShadowRepo(root, tmp_path / "cp" / "p", lock_wait=0.2)
    repo.snapshot()
    with open(repo.lock_path, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(CheckpointError, match="stayed locked"):
            repo.snapshot()
    repo.snapshot()  # released: works again


@pytest.mark.parametrize("whole_tree_add", [0, 500], ids=["whole-tree-add", "pathspec-add"])
def test_large_files_and_nested_repositories_are_left_out_until_they_qualify(tmp_path, monkeypatch, whole_tree_add):
    monkeypatch.setattr(shadow_repo, "WHOLE_TREE_ADD", whole_tree_add)  # many changes take the other path
    root = tmp_path / "ws"
    (root / "vendor" / "lib").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root / "vendor" / "lib")], check=True)
    (root / "vendor" / "lib" / "x.c").write_text("int x;\n")
    (root / "big.bin").write_bytes(b"x" * 2000)
    (root / "small.txt").write_text("s\n")
    repo = ShadowRepo(root, tmp_path / "cp" / "p", max_file_bytes=1000)
    first = repo.snapshot()
    assert repo.paths_in(first, ["big.bin", "small.txt", "vendor/lib/x.c"]) == {"small.txt"}
    (root / "big.bin").write_bytes(b"y" * 10)  # now small enough
    second = repo.snapshot()
    assert [(c.path, c.status) for c in repo.changes(first, second)] == [("big.bin", "added")]
    (root / "small.txt").write_bytes(b"z" * 5000)  # a recorded file that grew past the limit
    third = repo.snapshot()
    assert [(c.path, c.status) for c in repo.changes(second, third)] == [("small.txt", "deleted")]


def test_without_git_checkpoints_are_off(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    root = tmp_path / "ws"
    root.mkdir()
    with pytest.raises(CheckpointsOff, match="git is not installed"):
        ShadowRepo(root, tmp_path / "cp" / "p").snapshot()


def test_a_path_that_changes_kind_never_breaks_a_snapshot_and_restores(tmp_path):
    """Bugs: a recorded file that became a FIFO, a folder that became a link (and back) made
    `git add` / `git rm` fail at every later snapshot."""

    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f").write_text("outside\n")
    repo = ShadowRepo(root, tmp_path / "data" / "repo")
    (root / "p").write_text("file\n")
    (root / "d").mkdir()
    (root / "d" / "f").write_text("inside\n")
    first = repo.snapshot()
    steps = [
        lambda: ((root / "p").unlink(), os.mkfifo(root / "p")),
        lambda: ((root / "p").unlink(), (root / "p").mkdir(), (root / "p" / "x").write_text("x")),
        lambda: (shutil.rmtree(root / "d"), os.symlink(outside, root / "d")),
        lambda: (shutil.rmtree(root / "d"), (root / "d").write_text("a file now\n")),
        lambda: ((root / "p").unlink(), os.symlink("d", root / "p")),
    ]
    for step in steps:
        step()
        tree = repo.snapshot()
        repo.restore(first, [c.path for c in repo.changes(first, tree)])
        assert (root / "p").read_text() == "file\n" and not (root / "p").is_symlink()
        assert (root / "d" / "f").read_text() == "inside\n" and not (root / "d").is_symlink()
        assert (outside / "f").read_text() == "outside\n" and sorted(os.listdir(outside)) == ["f"]
        assert repo.changes(first, repo.snapshot()) == []


def test_a_fifo_named_gitignore_turns_checkpoints_off_naming_it(tmp_path):
    """Bug: a FIFO named `.gitignore` (one shell command of the model) made `git status` wait
    for a writer: every snapshot, before every shell command, stalled for the whole git time
    limit and failed, again and again."""

    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    repo = ShadowRepo(root, tmp_path / "data" / "repo", timeout=2)
    repo.snapshot()
    os.mkfifo(root / "sub" / ".gitignore")
    with pytest.raises(CheckpointsOff) as info:
        repo.snapshot()
    assert "sub/.gitignore" in str(info.value) and ("took longer" in str(info.value) or "waits on a FIFO" in str(info.value))


def test_a_fifo_named_gitattributes_turns_checkpoints_off_naming_it(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    repo = ShadowRepo(root, tmp_path / "data" / "repo", timeout=2)
    repo.snapshot()
    os.mkfifo(root / ".gitattributes")
    (root / "a.txt").write_text("changed\n")  # `git add` reads the attributes
    with pytest.raises(CheckpointsOff) as info:
        repo.snapshot()
    assert ".gitattributes" in str(info.value)


def test_a_restore_of_thousands_of_files_does_not_overflow_the_command_line(tmp_path):
    """Bug: a request that made 30,000 files (an install, a build) could not be rewound:
    `git ls-tree` got every path as an argument ("Argument list too long")."""

    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    repo = ShadowRepo(root, tmp_path / "data" / "repo")
    first = repo.snapshot()
    folder = root / ("node_modules_" + "x" * 60)
    folder.mkdir()
    for i in range(30_000):
        (folder / f"{i:06d}-{'y' * 40}.js").write_bytes(b"")
    paths = [c.path for c in repo.changes(first, repo.snapshot())]
    assert sum(len(p) + 1 for p in paths) > 3_000_000  # more than the kernel takes as arguments
    assert len(repo.restore(first, paths)) == 30_000
    assert sorted(os.listdir(root)) == ["a.txt"]


@pytest.mark.parametrize("kind", ["gitignore", "nested-gitignore", "gitattributes", "link-to-fifo"])
def test_git_waiting_on_a_fifo_is_stopped_at_once_not_after_the_time_limit(tmp_path, kind):
    """git opening a FIFO waits in the kernel's `wait_for_partner`: seen within a fraction of a
    second, the snapshot stops (checkpoints off, the file named) instead of stalling 60 s."""

    import time

    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    repo = ShadowRepo(root, tmp_path / "data" / "repo")  # the default limit: 60 s
    repo.snapshot()
    name = {"gitignore": ".gitignore", "nested-gitignore": "sub/.gitignore", "gitattributes": ".gitattributes",
            "link-to-fifo": ".gitignore"}[kind]
    if kind == "link-to-fifo":
        os.mkfifo(root / "pipe")
        (root / ".gitignore").symlink_to("pipe")
    else:
        os.mkfifo(root / name)
    (root / "a.txt").write_text("changed\n")  # `git add` reads the attributes
    started = time.monotonic()
    try:
        repo.snapshot()  # git >= 2.32 does not follow a linked .gitignore: nothing to wait on
    except CheckpointsOff as exc:
        assert name in str(exc) and "waits on a FIFO" in str(exc)
    assert time.monotonic() - started < 10


def test_the_workspace_exclude_file_is_copied_never_opened_by_git(tmp_path):
    """`.git/info/exclude` is read with the confined reader and copied: as a FIFO, a link to
    one or a link out it is left out (nothing waits); as a plain file its rules apply."""

    import time

    root = tmp_path / "ws"
    (root / ".git" / "info").mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    (root / "secret.log").write_text("s\n")
    exclude = root / ".git" / "info" / "exclude"
    exclude.write_text("*.log\n")
    repo = ShadowRepo(root, tmp_path / "data" / "repo")
    tree = repo.snapshot()
    assert "secret.log" not in repo._git("ls-tree", "-r", "--name-only", tree).decode()
    exclude.unlink()
    os.mkfifo(root / "pipe")
    exclude.symlink_to("../../pipe")
    (root / "b.txt").write_text("b\n")
    started = time.monotonic()
    tree = repo.snapshot()
    assert time.monotonic() - started < 10
    assert "secret.log" in repo._git("ls-tree", "-r", "--name-only", tree).decode()
