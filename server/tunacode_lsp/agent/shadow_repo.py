"""A shadow git repository of one workspace: snapshots of its files as git trees, the changes
and diffs between two snapshots, and restoring files from one. The workspace's own `.git` is
never written, and git never runs in it (git never enters a folder named `.git`); only the
first snapshot reads its index and objects (below).

Layout: `<data folder>/checkpoints/<project id>/` is the repository (its own GIT_DIR), the
workspace is its work tree, the index is the repository's own file, and
`<project id>.lock` beside it serialises every operation across threads and processes (two
servers on one workspace take turns; the wait is bounded).

git runs with no system or user configuration (so no hooks, filters, fsmonitor or external
diff a settings file could name), literal pathspecs, and `info/attributes` that switch off
everything that would change bytes on the way in or out (`-text -filter -ident
-working-tree-encoding`): a restored file has exactly the bytes it had.

A snapshot is `git status` against the previous snapshot (HEAD): when nothing changed, HEAD's
tree is the answer (git's index stat cache and untracked cache make that cheap, see
bench/checkpoints.py); otherwise the changed paths are staged, `write-tree` gives the tree,
and a commit on HEAD keeps its objects reachable. Not recorded: files `.gitignore` ignores
(the workspace's `.gitignore` files and its `.git/info/exclude`), files over
`max_file_bytes`, nested git repositories; the last two are listed in the repository's
`info/exclude` and checked again at every snapshot.

The first snapshot of a git workspace starts from the workspace's own index (`_seed`): its
bytes are read here (agent/git_index.py: checked, never written back; git never runs in the
workspace's repository, so its configuration is never read), copied in with their time, and
its objects borrowed read-only (`GIT_ALTERNATE_OBJECT_DIRECTORIES`, given only to the
commands that read objects: a command that writes objects would "freshen" the workspace's
copies, touching their times). `diff-files` and `ls-files -o` then list what differs from it (the
status of a repository with no commit yet), so git hashes only that, as `git status` would;
meanwhile the index's cached trees are copied in as one pack, so that `write-tree
--missing-ok` reuses them instead of writing each again. Only when nothing in the
workspace's git could have changed bytes on their way into its index (no `.gitattributes`,
no `autocrlf`, `eol`, `attributesFile`, `worktree` or include in its configuration files), with no entry git
would skip (assume-unchanged, skip-worktree, unmerged) or never write (a path with `..` or
`.git`), and objects git can read without waiting or going elsewhere (no alternates of
their own, no FIFO among the packs); what the full path leaves out (ignored files, files
over the size limit, submodules) is taken out of the index first. The borrowed objects are
then copied into the shadow repository (`absorb`, after the snapshot) and the alternates
dropped, so the workspace's own `git gc` never takes a checkpoint's bytes.

A new repository is made by hand (the files `git init --bare` and our configuration would
leave, built beside it and renamed in), and a snapshot's commit object and branch ref are
written in git's loose formats: three processes fewer for a first snapshot, two per later one.

The repository is bounded (`bound`, run by agent/checkpoints.py off the request path): over
the bound, the history is rewritten to hold only the trees still named (the current one,
the kept sessions' checkpoints, and every snapshot since a running request started), then
repacked and pruned, under the lock. Trees of deleted sessions and snapshots no request
names go first; then the least recently changed sessions', a quarter of them per round,
until the repository fits (a running session's never). A pruned session is noted
(`tunacode-pruned.json`) so that its rewind says why its checkpoint is gone.
"""

from __future__ import annotations

import bisect
import concurrent.futures
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import stat
import struct
import subprocess
import tempfile
import threading
import time
import zlib
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tunacode_lsp.agent.git_index import CachedTree, IndexFacts, UnusableIndex, read_index
from tunacode_lsp.agent.index_trees import Change as TreeChange
from tunacode_lsp.agent.index_trees import NotSimple, object_id, write_tree
from tunacode_lsp.tools.confined_read import read_confined

log = logging.getLogger(__name__)

MEGABYTE = 1024 * 1024
MAX_FILE_BYTES = 5 * 1024 * 1024  # larger files are not recorded
MAX_FILES = 100_000  # more changed files than this at once: the workspace is not recorded
MAX_SNAPSHOT_BYTES = 1024 * 1024 * 1024  # more new bytes than this at once: likewise
GIT_TIMEOUT_SECONDS = 60.0
STALL_CHECK_SECONDS = 0.25  # how often a running git is checked for waiting on a FIFO
MAX_EXCLUDE_BYTES = 1024 * 1024  # the workspace's .git/info/exclude, copied up to this
WHOLE_TREE_ADD = 500  # more changed paths than this: `git add` the whole tree, not a pathspec list
LOCK_WAIT_SECONDS = 30.0
IDENTITY = "tunacode checkpoints"
ATTRIBUTES = b"* -text -filter -ident -working-tree-encoding\n"
CONFIG = (
    ("core.bare", "false"),
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.symlinks", "true"),
    ("core.untrackedCache", "true"),
    ("core.quotePath", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("index.version", "4"),
    ("gc.auto", "0"),
    ("core.logAllRefUpdates", "false"),  # no reflog: it would keep every snapshot reachable
    ("pack.threads", "1"),
    ("maintenance.auto", "false"),
    ("advice.addEmbeddedRepo", "false"),
)
STATUSES = {"A": "added", "D": "deleted"}  # anything else (M, T) is "modified"
MAX_SEED_INDEX_BYTES = 256 * 1024 * 1024  # a workspace index larger than this is not used
MAX_CONFIG_BYTES = 1024 * 1024
# a git configuration that may have changed bytes on their way into the index (or hides where)
# the commands that may read a borrowed object; never one that writes objects (see the docstring)
READING_COMMANDS = frozenset({"cat-file", "diff", "diff-tree", "ls-tree", "checkout", "repack", "rev-parse", "pack-objects", "rev-list",
                              "status"})  # status: HEAD's trees may be the workspace's until `absorb`
TREES_SECONDS = 10.0  # the copy of the workspace's cached trees is given up after this (write-tree writes them)
CONVERTING_CONFIG = re.compile(rb"autocrlf|eol|attributesfile|include|worktree", re.IGNORECASE)
IGNORE_FILE = b".gitignore"
QUICK_FILES = 64  # a seeded first snapshot with at most this many changed files writes its trees itself
QUICK_BYTES = 16 * MEGABYTE  # ... and at most this many bytes of them


@dataclass(frozen=True)
class Seeded:
    """A first snapshot started from the workspace's index: what differs from it (as `git
    status` entries), the index as read (None: changed since by git), its time."""

    entries: list[bytes]
    facts: IndexFacts | None
    mtime_ns: int
    trees_copied: bool  # the cached trees are in this repository's own objects


class CheckpointError(Exception):
    """The shadow repository cannot do what was asked (missing, damaged, locked, too large)."""


class CheckpointsOff(CheckpointError):
    """Not worth trying again in this process: no git, or a workspace over the limits."""


class GitTimeout(CheckpointError):
    """git took longer than the time limit."""


class GitBlocked(GitTimeout):
    """git waits on a FIFO of the workspace (a `.gitignore` or `.gitattributes` that is one)."""


class TooManyFiles(CheckpointsOff):
    """More files (or bytes) changed at once than the limits: this workspace is not recorded."""


class PartialRestore(CheckpointError):
    """A restore that stopped half way: `restored` paths have their old content, `failed` not."""

    def __init__(self, reason: str, restored: list[str], failed: list[str]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.restored = restored
        self.failed = failed


@dataclass(frozen=True)
class SessionTrees:
    """One session's checkpoints in this repository, for `bound`."""

    session_id: str
    trees: frozenset[str]
    busy: bool  # a request of it runs (here or in another process): never pruned
    since: float  # when its latest request started (seconds since the epoch)
    here: bool = True  # busy in this process (its snapshots are in ShadowRepo.recent)


MAX_PRUNED_NOTES = 10_000  # sessions remembered as pruned (oldest forgotten first)
RECENT_SNAPSHOTS = 4096  # snapshots of this process remembered for `bound` (a running request's)
BOUND_ROUNDS = 12  # repacks at most per `bound`; the last drops every session it may


@dataclass(frozen=True)
class Change:
    path: str  # relative to the workspace root, forward slashes
    status: str  # added | modified | deleted


def _git_env(git_dir: Path, root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({
        "GIT_DIR": str(git_dir),
        "GIT_WORK_TREE": str(root),
        "GIT_INDEX_FILE": str(git_dir / "index"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_LITERAL_PATHSPECS": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_AUTHOR_NAME": IDENTITY, "GIT_AUTHOR_EMAIL": "tunacode@localhost",
        "GIT_COMMITTER_NAME": IDENTITY, "GIT_COMMITTER_EMAIL": "tunacode@localhost",
        "LC_ALL": "C",
    })
    return env


def _config_value(value: str) -> str:
    """`value` quoted for a git configuration file."""

    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def _write_new(path: Path, data: bytes, mode: int, *, replace: bool = False) -> None:
    """Write `path` whole or not at all (a temporary file renamed in); an object that exists
    is left as it is (the same id, the same bytes)."""

    if not replace and path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _waits_on_a_fifo(pid: int) -> bool:
    """Whether the process sleeps in the kernel opening a FIFO that has no writer (Linux names
    the place `wait_for_partner` in /proc/PID/wchan): git reading a FIFO named `.gitignore`
    or `.gitattributes` would wait there forever. False where /proc cannot tell."""

    try:
        with open(f"/proc/{pid}/wchan", "rb") as handle:
            return handle.read(64).strip() == b"wait_for_partner"
    except OSError:
        return False


def _exclude_line(path: str) -> str | None:
    """An anchored gitignore pattern matching exactly `path` (None: not expressible)."""

    if "\n" in path or "\r" in path:
        return None
    folder = path.endswith("/")
    body = path.rstrip("/")
    escaped = "".join("\\" + ch if ch in "\\*?[]" else ch for ch in body)
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return "/" + escaped + ("/" if folder else "")


class ShadowRepo:
    """The shadow repository of the workspace `root`, kept in `git_dir`."""

    def __init__(self, root: Path, git_dir: Path, *, max_file_bytes: int = MAX_FILE_BYTES,
                 timeout: float = GIT_TIMEOUT_SECONDS, lock_wait: float = LOCK_WAIT_SECONDS) -> None:
        self.root = Path(os.path.realpath(root))
        self.git_dir = Path(git_dir)
        self.lock_path = self.git_dir.parent / (self.git_dir.name + ".lock")
        self.max_file_bytes = max_file_bytes
        self.timeout = timeout
        self.lock_wait = lock_wait
        self._env = _git_env(self.git_dir, self.root)
        self._local = threading.local()
        self.seed_from_workspace = True  # the first snapshot starts from the workspace's git index
        self.measured: int | None = None  # the objects' size when last measured (None: not yet)
        self.added = 0  # bytes of files snapshots added since (an upper bound of what they stored)
        self.recent: deque[tuple[float, str]] = deque(maxlen=RECENT_SNAPSHOTS)  # (when, tree) of this process
        self._excludes_checked: tuple[object, ...] | None = None  # the config file's state when it named the excludes
        self._head: tuple[str, str] = ("", "")  # (commit, its tree): a commit's tree never changes

    # ------------------------------------------------------------ plumbing

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the repository's lock (re-entrant within a thread; bounded wait)."""

        depth = getattr(self._local, "depth", 0)
        if depth:
            self._local.depth = depth + 1
            try:
                yield
            finally:
                self._local.depth = depth
            return
        try:
            self.lock_path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise CheckpointError(f"cannot open the checkpoint lock {self.lock_path}: {exc.strerror}") from None
        try:
            deadline = time.monotonic() + self.lock_wait
            pause = 0.005
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                        raise CheckpointError(f"cannot lock {self.lock_path}: {exc.strerror}") from None
                    if time.monotonic() > deadline:
                        raise CheckpointError(
                            f"the checkpoints of this workspace stayed locked by another process for "
                            f"{self.lock_wait:g} s ({self.lock_path})"
                        ) from None
                    time.sleep(pause)
                    pause = min(pause * 2, 0.1)
            self._local.depth = 1
            try:
                yield
            finally:
                self._local.depth = 0
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _git(self, *args: str, stdin: bytes | None = None, ok: tuple[int, ...] = (0,), timeout: float | None = None,
             settings: tuple[tuple[str, str], ...] = ()) -> bytes:
        env = self._env
        if args and args[0] in READING_COMMANDS and (borrowed := self._borrowed()):
            env = {**env, "GIT_ALTERNATE_OBJECT_DIRECTORIES": borrowed}
        if settings:  # configuration for this command only
            env = {**env, "GIT_CONFIG_COUNT": str(len(settings))}
            for number, (key, value) in enumerate(settings):
                env[f"GIT_CONFIG_KEY_{number}"], env[f"GIT_CONFIG_VALUE_{number}"] = key, value
        try:
            process = subprocess.Popen(
                ["git", *args], stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=self.root,
            )
        except FileNotFoundError:
            raise CheckpointsOff("git is not installed (checkpoints need it)") from None
        except OSError as exc:
            raise CheckpointError(f"cannot run git: {exc.strerror}") from None
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        given = stdin
        while True:
            try:
                out, err = process.communicate(given, timeout=max(0.0, min(STALL_CHECK_SECONDS, deadline - time.monotonic())))
                break
            except subprocess.TimeoutExpired:
                given = None  # sent already (communicate keeps it)
                blocked = _waits_on_a_fifo(process.pid)
                if blocked or time.monotonic() >= deadline:
                    process.kill()
                    process.communicate()
                    if blocked:
                        raise GitBlocked(f"git {args[0]} waits on a FIFO in the workspace") from None
                    raise GitTimeout(f"git {args[0]} took longer than {limit:g} s") from None
        done = subprocess.CompletedProcess(process.args, process.returncode, out, err)
        if done.returncode not in ok:
            message = done.stderr.decode("utf-8", "replace").strip().splitlines()
            errors = [line for line in message if line.startswith(("error:", "fatal:"))]
            detail = "; ".join(errors[:3]) if errors else message[-1] if message else f"exit code {done.returncode}"
            raise CheckpointError(f"git {args[0]} failed: {detail[:300]}")
        return done.stdout

    def _ensure(self) -> None:
        """Create the repository if there is none; refuse a folder that is not one."""

        if (self.git_dir / "HEAD").is_file() and (self.git_dir / "objects").is_dir():
            stale = self.git_dir / "index.lock"  # we hold the lock: any index.lock is a crash's leftover
            if stale.exists():
                stale.unlink(missing_ok=True)
            self._sync_workspace_excludes()
            return
        if self.git_dir.exists() and any(self.git_dir.iterdir()):
            raise CheckpointError(
                f"the checkpoint repository {self.git_dir} is damaged (no HEAD or objects); "
                "move it away to start new checkpoints"
            )
        if not self.root.is_dir():
            raise CheckpointError(f"the workspace {self.root} is not a folder")
        # built beside it and renamed into place (a crash leaves no half repository), by hand:
        # `git init` and a `git config` for the excludes cost three processes per new repository
        try:
            self.git_dir.parent.mkdir(parents=True, exist_ok=True)
            for stale in self.git_dir.parent.glob(f".{self.git_dir.name}.new-*"):  # a crash's (we hold the lock)
                shutil.rmtree(stale, ignore_errors=True)
            building = Path(tempfile.mkdtemp(prefix=f".{self.git_dir.name}.new-", dir=self.git_dir.parent))
        except OSError as exc:
            raise CheckpointError(f"cannot create the checkpoint repository {self.git_dir}: {exc.strerror}") from None
        try:
            for folder in ("objects/info", "objects/pack", "refs/heads", "refs/tags", "info"):
                (building / folder).mkdir(parents=True)
            excludes = self._copy_workspace_excludes(building)
            sections: dict[str, list[str]] = {"core": ["repositoryformatversion = 0", "filemode = true",
                                                       f"excludesFile = {_config_value(excludes)}"]}
            for key, value in CONFIG:
                section, name = key.split(".", 1)
                sections.setdefault(section, []).append(f"{name} = {value}")
            (building / "config").write_text(
                "".join(f"[{section}]\n" + "".join(f"\t{line}\n" for line in lines) for section, lines in sections.items()),
                encoding="utf-8", errors="surrogateescape")
            (building / "info" / "attributes").write_bytes(ATTRIBUTES)
            (building / "HEAD").write_text("ref: refs/heads/master\n")
            os.rename(building, self.git_dir)  # replaces an empty folder
        except OSError as exc:
            shutil.rmtree(building, ignore_errors=True)
            raise CheckpointError(f"cannot create the checkpoint repository {self.git_dir}: {exc.strerror}") from None
        self._excludes_checked = self._config_state(excludes)

    def _copy_workspace_excludes(self, git_dir: Path) -> str:
        """Copy the workspace's `.git/info/exclude` into `git_dir` (when it changed); the path
        `core.excludesFile` names (in this repository), or the null device when there is none."""

        found = read_confined(self.root, ".git/info/exclude", limit=MAX_EXCLUDE_BYTES)
        if found.data is None:
            return os.devnull
        copy = git_dir / "info" / "workspace-exclude"
        try:
            same = copy.read_bytes() == found.data
        except OSError:
            same = False
        if not same:  # rewritten only when it changed (git's untracked cache keys on it)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(found.data)
        return str(self.git_dir / "info" / "workspace-exclude")

    def _config_state(self, excludes: str) -> tuple[object, ...] | None:
        try:
            seen = (self.git_dir / "config").stat()
        except OSError:
            return None
        return (excludes, seen.st_ino, seen.st_mtime_ns, seen.st_size)

    def _sync_workspace_excludes(self) -> None:
        """Honour the workspace's own `.git/info/exclude` (read, never written): its content is
        read with the confined reader (a FIFO, a link out or a huge file is left out) and
        copied into this repository, so git itself never opens the workspace's file."""

        wanted = self._copy_workspace_excludes(self.git_dir)
        key = self._config_state(wanted)
        if key is not None and key == self._excludes_checked:
            return  # the configuration file is as it was when it last named `wanted` (a process saved per snapshot)
        current = self._git("config", "--get", "core.excludesFile", ok=(0, 1)).decode().strip()
        if current != wanted:
            self._git("config", "core.excludesFile", wanted)
        self._excludes_checked = self._config_state(wanted)

    # ------------------------------------------------------------ exclusions

    def _excluded_file(self) -> Path:
        return self.git_dir / "tunacode-excluded.json"

    def _load_excluded(self) -> dict[str, str]:
        try:
            data = json.loads(self._excluded_file().read_text())
            return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def _save_excluded(self, excluded: dict[str, str]) -> None:
        self._excluded_file().write_text(json.dumps(excluded, sort_keys=True))
        lines = ["# written by tunacode: files over the size limit and nested repositories"]
        lines += [line for path in sorted(excluded) if (line := _exclude_line(path)) is not None]
        (self.git_dir / "info" / "exclude").write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")

    def _still_excluded(self, path: str) -> bool:
        full = self.root / path.rstrip("/")
        if path.endswith("/"):
            return (full / ".git").exists()
        try:
            info = full.lstat()
        except OSError:
            return False
        return stat.S_ISREG(info.st_mode) and info.st_size > self.max_file_bytes

    # ------------------------------------------------------------ snapshots

    def _head_commit(self) -> str | None:
        """HEAD's commit id read from its ref file (None: not a loose ref, or unreadable)."""

        try:
            head = (self.git_dir / "HEAD").read_text(encoding="ascii").strip()
            if not head.startswith("ref: refs/"):
                return None
            commit = (self.git_dir / head[5:]).read_text(encoding="ascii").strip()
        except (OSError, ValueError):
            return None
        return commit if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", commit) else None

    def _unborn(self) -> bool:
        """Whether HEAD names a branch that has no commit yet (no loose ref, no packed refs)."""

        try:
            head = (self.git_dir / "HEAD").read_text(encoding="ascii").strip()
        except (OSError, ValueError):
            return False
        return (head.startswith("ref: refs/heads/") and ".." not in head
                and not os.path.lexists(self.git_dir / head[5:]) and not os.path.lexists(self.git_dir / "packed-refs"))

    def head_tree(self) -> str | None:
        commit = self._head_commit()
        if commit is not None and commit == self._head[0]:
            return self._head[1]  # the same commit as last time: no git process (one per snapshot)
        if commit is None:
            if self._unborn():
                return None  # a new repository: no process
            out = self._git("rev-parse", "-q", "--verify", "HEAD^{tree}", ok=(0, 1)).strip()
            return out.decode() if out else None
        out = self._git("rev-parse", "-q", "--verify", f"{commit}^{{tree}}", ok=(0, 1)).strip()
        if not out:
            return None
        self._head = (commit, out.decode())
        return self._head[1]

    def snapshot(self) -> str:
        """The workspace now, as a tree id (recorded in the repository)."""

        try:
            tree = self._snapshot()
            self.recent.append((time.time(), tree))
            return tree
        except GitTimeout as exc:
            # a FIFO named .gitignore or .gitattributes blocks git for good (it waits for a
            # writer): say so, and do not make every later snapshot wait as long
            blocking = self._blocking_git_files()
            raise CheckpointsOff(
                f"{exc}" + (f" (it waits on {', '.join(blocking)}: not a regular file; remove it)" if blocking else "")
            ) from None

    def _snapshot(self) -> str:
        with self.locked():
            self._ensure()
            excluded = self._load_excluded()
            kept = {p: why for p, why in excluded.items() if self._still_excluded(p)}
            if kept != excluded:
                self._save_excluded(kept)
                excluded = kept
            head = self.head_tree()
            seeded = None
            if head is None and self.seed_from_workspace and not (self.git_dir / "index").exists():
                seeded = self._seed()
            if seeded is not None:
                entries = seeded.entries  # what differs from the workspace's index (no status: no HEAD yet)
            else:
                status = self._git("status", "--porcelain=v1", "-z", "-uall", "--no-renames", "--ignore-submodules=all")
                entries = [e for e in status.split(b"\0") if e]
                if not entries and head is not None:
                    return head
            if len(entries) > MAX_FILES:
                raise TooManyFiles(
                    f"{len(entries):,} files changed at once (the limit is {MAX_FILES:,}): this workspace is not recorded"
                )
            add: list[bytes] = []
            untrack: list[bytes] = []
            newly: dict[str, str] = {}
            size = 0
            links: dict[str, bool] = {}
            for entry in entries:
                xy, raw = entry[:2], entry[3:]
                path = os.fsdecode(raw)
                if path.endswith("/"):  # a nested repository (status does not enter it)
                    newly[path] = "repository"
                    continue
                if self._beyond_link(path, links):
                    # a recorded file whose folder became a symbolic link: gone from the
                    # workspace (`git add` refuses a path beyond a link; the link itself is added)
                    untrack.append(raw)
                    continue
                try:
                    info = (self.root / path).lstat()
                except FileNotFoundError:
                    add.append(raw)  # deleted: `add -A` records the removal
                    continue
                except OSError:
                    continue
                if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
                    # a folder, FIFO, socket or device where a recorded file was: git cannot add
                    # it (and `add` would fail for every file); recorded as gone
                    if xy[:1] != b"?":
                        untrack.append(raw)
                    continue
                if stat.S_ISREG(info.st_mode) and info.st_size > self.max_file_bytes:
                    newly[path] = "size"
                    if xy[:1] != b"?":
                        untrack.append(raw)
                    continue
                add.append(raw)
                size += info.st_size
            self.added += size
            if size > MAX_SNAPSHOT_BYTES:
                raise TooManyFiles(
                    f"{size:,} bytes changed at once (the limit is {MAX_SNAPSHOT_BYTES:,}): this workspace is not recorded"
                )
            if newly:
                excluded.update(newly)
                self._save_excluded(excluded)
            if seeded is not None:
                quick = self._quick_tree(seeded, add, untrack)
                if quick is not None:
                    self._head = (self._commit(quick, False), quick)
                    return quick
                if not seeded.trees_copied and seeded.facts is not None:
                    self._copy_trees(seeded.facts.trees)  # git's way: write-tree reuses them
            if untrack:
                self._git("rm", "-r", "-q", "-f", "--cached", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul",
                          stdin=b"\0".join(untrack))
            if len(add) > WHOLE_TREE_ADD:
                # git matches each path against every pathspec: 30,000 of them took 14 s, while
                # adding the whole tree (the exclusions above already written) takes 0.3 s
                self._git("add", "-A", "--", ".")
            elif add:
                self._git("add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", stdin=b"\0".join(add))
            tree = self._git("write-tree", *(["--missing-ok"] if self.borrowing() else [])).decode().strip()
            if tree != head:
                self._head = (self._commit(tree, head is not None), tree)
            return tree

    def _commit(self, tree: str, on_head: bool) -> str:
        """Commit `tree` (on HEAD's commit when `on_head`) and move HEAD's branch to it. The
        commit object and the ref are written here in git's loose formats (what `commit-tree`
        and `update-ref` would write: two processes fewer per snapshot); git's commands when
        HEAD is not a branch with a loose ref (a repository changed by hand)."""

        parent = self._head_commit() if on_head else None
        try:
            branch = (self.git_dir / "HEAD").read_text(encoding="ascii").strip()
        except (OSError, ValueError):
            branch = ""
        ref = self.git_dir / branch[5:] if branch.startswith("ref: refs/heads/") and ".." not in branch else None
        if ref is None or (on_head and parent is None) or (not on_head and not self._unborn()):
            commit = self._git("commit-tree", tree, *(["-p", "HEAD"] if on_head else []), "-m", "checkpoint").decode().strip()
            self._git("update-ref", "HEAD", commit)
            return commit
        who = f"{IDENTITY} <tunacode@localhost> {int(time.time())} +0000"
        body = (f"tree {tree}\n" + (f"parent {parent}\n" if parent else "") + f"author {who}\ncommitter {who}\n\ncheckpoint\n").encode()
        raw = b"commit %d\0" % len(body) + body
        commit = hashlib.sha1(raw).hexdigest()
        try:
            _write_new(self.git_dir / "objects" / commit[:2] / commit[2:], zlib.compress(raw), 0o444)
            _write_new(ref, f"{commit}\n".encode(), 0o644, replace=True)
        except OSError as exc:
            raise CheckpointError(f"cannot write the checkpoint commit: {exc.strerror}") from None
        return commit

    # ------------------------------------------------------------ the size bound

    def size(self) -> int:
        """The bytes of the repository's objects (loose and packed) now."""

        total = 0
        for folder, _, files in os.walk(self.git_dir / "objects"):
            for name in files:
                try:
                    total += os.lstat(os.path.join(folder, name)).st_size
                except OSError:
                    pass
        self.measured, self.added = total, 0
        return total

    def may_exceed(self, max_bytes: int) -> bool:
        """Whether the objects may be over `max_bytes`, without measuring while the estimate
        (the last measure plus what snapshots added since) is under it."""

        return self.measured is None or self.measured + self.added > max_bytes

    def bound(self, max_bytes: int, sessions: list[SessionTrees]) -> list[str]:
        """Shrink the repository under `max_bytes` (see the module's docstring); `sessions`
        least recently changed first. Returns the sessions whose checkpoints were pruned."""

        with self.locked():
            self._ensure()
            if self.size() <= max_bytes:
                return []
            if self.borrowing():
                self.absorb()
            head = self.head_tree()
            if head is None:
                return []
            # a running request's snapshots may not be stored yet: keep every one since it started
            here = [s.since for s in sessions if s.busy and s.here]
            recent = {tree for when, tree in self.recent if here and when >= min(here)}
            elsewhere = [s.since for s in sessions if s.busy and not s.here]
            if elsewhere:  # another process's: by the commits' times (whole seconds)
                cutoff = int(min(elsewhere))
                for line in self._git("log", "--format=%T %ct", "HEAD").decode().splitlines():
                    tree, _, when = line.partition(" ")
                    if int(when or 0) >= cutoff:
                        recent.add(tree)
            kept = list(sessions)
            droppable = [s for s in sessions if not s.busy]
            dropped: list[SessionTrees] = []
            for round_ in range(BOUND_ROUNDS + 1):
                keep = {head, *recent}.union(*(s.trees for s in kept))
                self._keep_only(head, keep)
                if self.size() <= max_bytes or not droppable:
                    break
                count = len(droppable) if round_ == BOUND_ROUNDS - 1 else max(1, len(droppable) // 4)
                batch, droppable = droppable[:count], droppable[count:]
                dropped += batch
                names = {s.session_id for s in batch}
                kept = [s for s in kept if s.session_id not in names]
            self._note_pruned([s.session_id for s in dropped], max_bytes)
            return [s.session_id for s in dropped]

    def _keep_only(self, head: str, keep: set[str]) -> None:
        """Make `keep` the only trees reachable (HEAD: `head` alone), then drop every other object."""

        wanted = sorted(t for t in keep if t and re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", t))
        found = self._git("cat-file", "--batch-check=%(objectname) %(objecttype)",
                          stdin="".join(f"{t}\n" for t in wanted).encode()).decode().splitlines()
        trees = [line.split(" ")[0] for line in found if line.endswith(" tree")]
        listing = "".join(f"040000 tree {t}\t{t}\n" for t in trees).encode()
        holder = self._git("mktree", stdin=listing).decode().strip()
        kept = self._git("commit-tree", holder, "-m", "the checkpoints kept").decode().strip()
        self._git("update-ref", "refs/tunacode/kept", kept)
        current = self._git("commit-tree", head, "-m", "checkpoint").decode().strip()
        self._git("update-ref", "HEAD", current)
        # every object reachable from the refs and the index, in one pack; the rest is gone (a
        # repository made before core.logAllRefUpdates was off has reflogs naming every snapshot)
        self._git("reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
        self._git("repack", "-a", "-d", "-q")
        self._git("prune", "--expire=now")

    def _pruned_file(self) -> Path:
        return self.git_dir / "tunacode-pruned.json"

    def _load_pruned(self) -> dict[str, list[float]]:
        try:
            data = json.loads(self._pruned_file().read_text())
        except (OSError, ValueError):
            return {}
        return {str(k): v for k, v in data.items() if isinstance(v, list) and len(v) == 2} if isinstance(data, dict) else {}

    def _note_pruned(self, session_ids: list[str], max_bytes: int) -> None:
        if not session_ids:
            return
        notes = self._load_pruned()
        now = time.time()
        for session_id in session_ids:
            notes.pop(session_id, None)
            notes[session_id] = [now, max_bytes]
        kept = dict(list(notes.items())[-MAX_PRUNED_NOTES:])  # oldest notes first in the file
        temporary = self._pruned_file().with_suffix(".tmp")
        temporary.write_text(json.dumps(kept))
        os.replace(temporary, self._pruned_file())

    def pruned_note(self, session_id: str) -> str | None:
        """Why the checkpoints of a session are gone, when `bound` pruned them; else None."""

        note = self._load_pruned().get(session_id)
        if note is None:
            return None
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(note[0])))
        return (f"the checkpoints of session {session_id} were pruned at {when} to keep the checkpoint "
                f"repository under checkpointMaxMegabytes ({int(note[1]) / MEGABYTE:g} MB; the least recently "
                "used sessions' go first)")

    # ------------------------------------------------------------ seeding from the workspace's git

    def _borrowed_file(self) -> Path:
        return self.git_dir / "tunacode-borrowed"

    def _borrowed(self) -> str | None:
        """The workspace's objects folder while objects are borrowed from it, else None."""

        try:
            return self._borrowed_file().read_text(encoding="utf-8", errors="surrogateescape").strip() or None
        except OSError:
            return None

    def borrowing(self) -> bool:
        return self._borrowed() is not None

    def _seed(self) -> Seeded | None:
        """Start the index from the workspace's own git index (see the module's docstring) and
        list what differs from it, as `git status` entries (`XY path`). None (and nothing left
        behind) when the workspace has no index that is safe to use.

        Three git processes run at once, each reading the seeded index: the files that differ
        from it (`diff-files`, which stats them on several threads as `status` does), the
        untracked ones (`ls-files -o`; with those, the status of a repository with no commit
        yet), the tracked files now ignored (they leave the index: the full path never records
        them); meanwhile the index is read here (agent/git_index.py: anything git would skip or
        convert turns seeding off; gitlinks and files over the size limit leave the index).
        When some of its cached trees are not valid, a fourth copies the valid ones in (git
        will write the tree); when all are, the snapshot's trees are written here
        (`_quick_tree`) and the copy waits for `absorb`."""

        found = _workspace_index(self.root)
        if found is None:
            return None
        data, mtime_ns, objects = found
        index = self.git_dir / "index"
        try:
            self._borrowed_file().write_text(objects, encoding="utf-8", errors="surrogateescape")
            self._write_index(data, mtime_ns)
            with concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="tunacode-seed") as pool:
                # the listings start at once (the files that differ from the index: `diff-files`
                # stats them on several threads, as `status` does; the untracked ones); the
                # index is checked meanwhile, here
                changed = pool.submit(self._git, "diff-files", "--name-only", "-z", "--ignore-submodules=all")
                rules = IGNORE_FILE in data or self._exclude_patterns()
                # without rules the untracked listing also shows every ignore file (none hides
                # itself): finding none proves no tracked file is ignored
                untracked = pool.submit(self._git, "ls-files", "-z", "-o", "--exclude-standard",
                                        *(() if rules else (f"--exclude=!{IGNORE_FILE.decode()}",)))
                ignored = pool.submit(self._git, "ls-files", "-z", "-c", "-i", "--exclude-standard") if rules else None
                try:
                    facts = read_index(data, self.max_file_bytes)
                except UnusableIndex as exc:
                    log.info("the first snapshot of %s reads every file: its git index is not used (%s)", self.root, exc)
                    raise CheckpointError(str(exc)) from None
                copied = not _fully_cached(facts)
                trees = pool.submit(self._copy_trees, facts.trees) if copied else None
                others = untracked.result()
                if ignored is None and IGNORE_FILE in others:  # an untracked ignore file: list with the rules as they are
                    untracked = pool.submit(self._git, "ls-files", "-z", "-o", "--exclude-standard")
                    ignored = pool.submit(self._git, "ls-files", "-z", "-c", "-i", "--exclude-standard")
                    others = untracked.result()
                left_out = {p for p in ignored.result().split(b"\0") if p} if ignored is not None else set()
                listing = [b" M " + p for p in changed.result().split(b"\0") if p]
                listing += [b"?? " + p for p in others.split(b"\0") if p]
                if trees is not None:
                    trees.result()  # best effort: never raises; written before `write-tree` runs
            if facts.data is not data:  # extensions left out (an untracked cache, an fsmonitor's)
                self._write_index(facts.data, mtime_ns)
            gitlinks, big = facts.gitlinks, facts.big
            left_out |= set(gitlinks)
            drop = left_out | set(big)
            if drop:
                self._git("rm", "-r", "-q", "-f", "--cached", "--ignore-unmatch", "--pathspec-from-file=-",
                          "--pathspec-file-nul", stdin=b"\0".join(sorted(drop)))
            entries: dict[bytes, bytes] = {}
            for record in listing:
                if record[3:] not in drop:
                    entries[record[3:]] = record
            # a file over the size limit is now untracked: recorded or excluded by its size now
            entries.update({p: b"?? " + p for p in big if p not in left_out and os.path.lexists(self.root / os.fsdecode(p))})
            if gitlinks:  # what is in a submodule's folder now (a nested repository: `sub/`)
                others = self._git("ls-files", "-z", "-o", "--exclude-standard", "--", *map(os.fsdecode, gitlinks))
                entries.update({p: b"?? " + p for p in others.split(b"\0") if p})
            return Seeded(list(entries.values()), None if drop else facts, mtime_ns, copied)
        except (CheckpointError, OSError, ValueError):
            index.unlink(missing_ok=True)
            self._borrowed_file().unlink(missing_ok=True)
            return None

    def _quick_tree(self, seeded: Seeded, paths: list[bytes], gone: list[bytes]) -> str | None:
        """The first snapshot's tree written here (agent/index_trees.py), when the index's cached
        trees are all valid and at most QUICK_FILES files changed: each changed file hashed and
        stored, the folders on their paths written again. When every change is a file the index
        holds that is still there, the index gets their new ids and stat data and the folders'
        new trees (what `git add` and `write-tree` would have left); otherwise it is left as
        seeded, and the next snapshot's status lists those paths again (its `add` brings the
        index up to date). `gone`: recorded files that are no longer files (or lie beyond a
        link, or grew over the size limit). None: git's way (nothing written that matters)."""

        facts = seeded.facts
        if facts is None or len(paths) + len(gone) > QUICK_FILES or not _fully_cached(facts):
            return None
        total = len(facts.offsets) - 1
        changes: dict[bytes, TreeChange] = dict.fromkeys(gone)
        in_place: list[tuple[int, os.stat_result, int, bytes]] = []  # (index position, stat, mode, id)
        size = 0
        try:
            for raw in paths:
                found = self._hashed(raw)
                position = bisect.bisect_left(range(total), raw, key=facts.path_at)
                tracked = position < total and facts.path_at(position) == raw
                if found is None:
                    changes[raw] = None
                    continue
                info, mode, data = found
                size += len(data)
                if size > QUICK_BYTES:
                    return None
                oid = self._store(b"blob", data)
                changes[raw] = (mode, oid)
                if tracked:
                    in_place.append((position, info, mode, oid))
            written = write_tree(facts, changes, self._store)
        except (NotSimple, OSError, ValueError) as exc:
            log.info("the first snapshot of %s writes its tree with git: %s", self.root, exc)
            return None
        if changes and len(in_place) == len(changes):
            self._patch_index(facts, in_place, written.folders, seeded.mtime_ns)
        return written.tree.hex()

    def _hashed(self, raw: bytes) -> tuple[os.stat_result, int, bytes] | None:
        """A changed file's stat, mode in the index and bytes (None: gone), read beneath the
        root without following a link; NotSimple for anything else or a file changing while read."""

        from tunacode_lsp.tools.beneath import folder_beneath

        path = os.fsdecode(raw)
        full = self.root / path
        try:
            with folder_beneath(self.root, full.parent, path) as folder:
                try:
                    info = os.stat(full.name, dir_fd=folder, follow_symlinks=False)
                except FileNotFoundError:
                    return None
                if stat.S_ISLNK(info.st_mode):
                    target = os.readlink(os.fsencode(full.name), dir_fd=folder)
                    again = os.stat(full.name, dir_fd=folder, follow_symlinks=False)
                    if _stat_key(again) != _stat_key(info):
                        raise NotSimple(f"{path} changed while read")
                    return info, 0o120000, target
                if not stat.S_ISREG(info.st_mode) or info.st_size > self.max_file_bytes:
                    raise NotSimple(f"{path} is not a regular file or a link")
                fd = os.open(full.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
        except NotSimple:
            raise
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - a folder moved out, a permission: git's way says which
            raise NotSimple(f"{path}: {exc}") from None
        try:
            before = os.fstat(fd)
            data = _read_all(fd, before.st_size)
            after = os.fstat(fd)
        finally:
            os.close(fd)
        if not stat.S_ISREG(before.st_mode) or _stat_key(before) != _stat_key(after) or _stat_key(before) != _stat_key(info):
            raise NotSimple(f"{path} changed while read")
        return before, 0o100755 if before.st_mode & stat.S_IXUSR else 0o100644, data

    def _store(self, kind: bytes, body: bytes) -> bytes:
        """Write a loose object into this repository (never the workspace's); its id."""

        oid, raw = object_id(kind, body)
        name = oid.hex()
        _write_new(self.git_dir / "objects" / name[:2] / name[2:], zlib.compress(raw, 1), 0o444)
        return oid

    def _patch_index(self, facts: IndexFacts, changed: list[tuple[int, os.stat_result, int, bytes]],
                     folders: list[tuple[CachedTree, bytes]], mtime_ns: int) -> None:
        """The seeded index with the changed entries' stat data and ids, and the folders' new
        trees, as `git add` and `write-tree` would leave it (its time kept: git's racy-entry check
        then looks at these files' bytes again, as it must for files changed after that time)."""

        data = bytearray(facts.data)
        for position, info, mode, oid in changed:
            fields = (info.st_ctime_ns // 10**9, info.st_ctime_ns % 10**9, info.st_mtime_ns // 10**9, info.st_mtime_ns % 10**9,
                      info.st_dev, info.st_ino, mode, info.st_uid, info.st_gid, info.st_size)
            struct.pack_into(">10I20s", data, facts.offsets[position], *(field & 0xFFFFFFFF for field in fields), oid)
        for node, oid in folders:
            data[node.oid_at:node.oid_at + 20] = oid
        data[-20:] = hashlib.sha1(memoryview(data)[:-20]).digest()
        self._write_index(data, mtime_ns)

    def _exclude_patterns(self) -> bool:
        """Whether the excludes files this repository reads (the workspace's `info/exclude`
        copied in, our own) hold any pattern (a fresh `git init` leaves only comments)."""

        for path in (self.git_dir / "info" / "workspace-exclude", self.git_dir / "info" / "exclude"):
            try:
                text = path.read_bytes()
            except FileNotFoundError:
                continue
            except OSError:
                return True
            if any(line.strip() and not line.startswith(b"#") for line in text.splitlines()):
                return True
        return False

    def _write_index(self, data: bytes | bytearray, mtime_ns: int) -> None:
        index = self.git_dir / "index"
        index.write_bytes(data)
        os.utime(index, ns=(mtime_ns, mtime_ns))  # git's racy-entry check keys on the index's own time

    def _copy_trees(self, trees: list[str]) -> None:
        """Copy the index's cached trees in, as one pack: `write-tree` then reuses every one
        instead of writing each again as a loose object (~300 of them at 30,000 files took
        most of a first snapshot's time beyond its status). `pack-objects` only reads the
        borrowed objects (nothing in the workspace is written or touched) and writes the pack
        here. Best effort, never raises: on any failure `write-tree` writes the trees."""

        if not trees or len(trees) > MAX_FILES:  # a hostile index's million trees: not worth copying
            return
        try:
            self._git("pack-objects", "-q", "--window=0", str(self.git_dir / "objects" / "pack" / "pack"),
                      stdin="".join(f"{t}\n" for t in trees).encode(), timeout=min(self.timeout, TREES_SECONDS),
                      settings=(("core.fsync", "none"),))  # a copy (the workspace has them): `absorb`'s repack syncs
        except CheckpointError as exc:
            log.info("the index's cached trees were not copied in (write-tree writes them): %s", exc)

    def absorb(self) -> None:
        """Copy the objects borrowed from the workspace's repository into this one, then stop
        borrowing (the workspace's `git gc` may prune them)."""

        with self.locked():
            if not self.borrowing():
                return
            self._git("repack", "-a", "-d", "-q", "--window=0")  # no delta search: a copy
            self._borrowed_file().unlink(missing_ok=True)

    def _blocking_git_files(self, limit: int = 200_000) -> list[str]:
        """Ignore and attribute files git would block on (FIFOs, devices), by a bounded walk."""

        found: list[str] = []
        seen = 0
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = [d for d in dirs if d != ".git"]
            seen += len(dirs) + len(files)
            for name in (".gitignore", ".gitattributes"):
                path = Path(folder, name)
                try:
                    mode = path.lstat().st_mode
                    if stat.S_ISLNK(mode):  # an older git follows the link
                        mode = path.stat().st_mode
                except OSError:
                    continue
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    found.append(path.relative_to(self.root).as_posix())
            if seen > limit or len(found) >= 5:
                break
        return found

    def _beyond_link(self, path: str, links: dict[str, bool]) -> bool:
        """Whether a leading folder of `path` is a symbolic link (or not a folder)."""

        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            folder = "/".join(parts[:i])
            if folder not in links:
                try:
                    links[folder] = not stat.S_ISDIR((self.root / folder).lstat().st_mode)
                except OSError:
                    links[folder] = False  # gone: `add -A` records the removal
            if links[folder]:
                return True
        return False

    def file_on_disk(self, path: str) -> bool:
        """Whether `path` is a file or link (bytes to lose) in the workspace, not reached through a link."""

        if self._beyond_link(path, {}):
            return False
        try:
            mode = (self.root / path).lstat().st_mode
            return stat.S_ISREG(mode) or stat.S_ISLNK(mode)
        except OSError:
            return False

    def files_under(self, path: str, limit: int = 1000) -> list[str] | None:
        """The files (links, anything not a folder) beneath the folder `path` on disk, links not
        followed; None when `path` is no such folder (or reached through a link)."""

        if self._beyond_link(path, {}):
            return None
        top = self.root / path
        try:
            if not stat.S_ISDIR(top.lstat().st_mode):
                return None
        except OSError:
            return None
        found: list[str] = []
        for folder, dirs, files in os.walk(top):  # os.walk does not follow links
            found += [Path(folder, name).relative_to(self.root).as_posix() for name in files]
            found += [Path(folder, name).relative_to(self.root).as_posix() for name in dirs
                      if os.path.islink(os.path.join(folder, name))]
            if len(found) >= limit:
                break
        return found[:limit]

    def require(self, *trees: str) -> None:
        """Raise CheckpointError unless every tree is stored."""

        with self.locked():
            for tree in trees:
                if not tree:
                    raise CheckpointError("that checkpoint was never taken")
                try:
                    self._git("cat-file", "-e", f"{tree}^{{tree}}")
                except CheckpointError:
                    raise CheckpointError(
                        f"checkpoint {tree[:12]} is no longer in {self.git_dir} (the folder was removed or damaged)"
                    ) from None

    # ------------------------------------------------------------ reading

    def changes(self, before: str, after: str) -> list[Change]:
        """What changed from one tree to another, sorted by path."""

        if before == after:
            return []
        out = self._git("diff-tree", "-r", "-z", "--no-renames", "--name-status", before, after)
        parts = [p for p in out.split(b"\0") if p]
        found = [Change(os.fsdecode(parts[i + 1]), STATUSES.get(parts[i].decode()[:1], "modified"))
                 for i in range(0, len(parts) - 1, 2)]
        return sorted(found, key=lambda c: c.path)

    def diff(self, before: str, after: str, path: str) -> str:
        """The unified diff of one file between two trees, without git's own header lines."""

        out = self._git("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "-U3",
                        before, after, "--", path)
        lines = out.decode("utf-8", "replace").split("\n")
        kept = [line for line in lines if not line.startswith((
            "diff --git ", "index ", "new file mode ", "deleted file mode ", "similarity index ",
        ))]
        return "\n".join(kept).rstrip("\n")

    def paths_in(self, tree: str, paths: list[str]) -> set[str]:
        if not paths:
            return set()
        if len(paths) > WHOLE_TREE_ADD:
            # thousands of paths overflow the command line (E2BIG): list the whole tree instead
            out = self._git("ls-tree", "-r", "-z", "--name-only", "--full-tree", tree)
            return {os.fsdecode(p) for p in out.split(b"\0") if p} & set(paths)
        out = self._git("ls-tree", "-r", "-z", "--name-only", "--full-tree", tree, "--",
                        *[p for p in paths])
        return {os.fsdecode(p) for p in out.split(b"\0") if p}

    # ------------------------------------------------------------ writing

    def restore(self, tree: str, paths: list[str]) -> list[str]:
        """Give each path its content (and mode) in `tree`; remove those the tree lacks.
        Returns the paths whose files changed."""

        from tunacode_lsp.tools.beneath import folder_beneath  # the same no-link-out rule as the tools

        with self.locked():
            self._ensure()
            present = self.paths_in(tree, paths)
            restore = [p for p in paths if p in present]
            remove = [p for p in paths if p not in present]
            failures: list[str] = []
            if restore:
                try:
                    self._git("checkout", tree, "--pathspec-from-file=-", "--pathspec-file-nul",
                              stdin=b"\0".join(os.fsencode(p) for p in restore))
                except CheckpointError as exc:  # some files may be written, others not: say which
                    failures.append(str(exc))
            removed: list[str] = []
            for path in remove:
                full = self.root / path
                try:
                    info = full.lstat()
                except OSError:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    continue
                try:
                    with folder_beneath(self.root, full.parent, path) as fd:
                        os.unlink(full.name, dir_fd=fd)
                except Exception as exc:  # noqa: BLE001 - a link out, a permission: say which file
                    failures.append(f"cannot remove {path}: {exc}")
                    continue
                removed.append(path)
                self._prune_empty(full.parent)
            if failures:
                raise self._partial(tree, paths, failures)
            self.snapshot()
            return sorted(restore + removed)

    def _partial(self, tree: str, paths: list[str], failures: list[str]) -> PartialRestore:
        """What a restore that failed half way left: the paths that now match `tree`, the rest."""

        try:
            now = self.snapshot()
            differ = {c.path for c in self.changes(tree, now)}
        except CheckpointError as exc:
            differ = set(paths)  # unknown: claim nothing was restored, and say why
            failures = [*failures, f"which files were restored could not be checked ({exc}): all are listed as not restored"]
        failed = sorted(p for p in paths if p in differ)
        done = sorted(p for p in paths if p not in differ)
        return PartialRestore("; ".join(failures), done, failed)

    def _prune_empty(self, folder: Path) -> None:
        """Remove folders left empty by a removal, up to the root."""

        from tunacode_lsp.tools.beneath import folder_beneath

        while folder != self.root and str(folder).startswith(str(self.root) + os.sep):
            try:
                with folder_beneath(self.root, folder.parent, folder.parent.name) as fd:
                    os.rmdir(folder.name, dir_fd=fd)
            except Exception:  # noqa: BLE001 - not empty (or gone): stop
                return
            folder = folder.parent


def _stat_key(info: os.stat_result) -> tuple[int, ...]:
    return (info.st_ino, info.st_dev, info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _fully_cached(facts: IndexFacts) -> bool:
    """Whether the index has cached trees, every one of them valid, for its whole content."""

    root = facts.cache_tree
    if root is None or root.count != len(facts.offsets) - 1 or facts.intent_to_add:
        return False
    stack = [root]
    while stack:
        node = stack.pop()
        if node.count < 0 or node.oid_at < 0:
            return False
        stack.extend(node.children)
    return True


def _read_all(fd: int, size: int) -> bytes:
    """The bytes of the open file `fd`, whose size was `size`: one read when it still is (a
    2.6 MB index read in 1 MB pieces and joined cost ~3 ms more)."""

    data = os.read(fd, size + 1)
    more = list(iter(lambda: os.read(fd, 1 << 20), b""))  # grown since (the caller's fstat then differs)
    return data + b"".join(more) if more else data


def _read_regular(path: Path, limit: int) -> tuple[bytes, int] | None:
    """A regular file's bytes and mtime (ns), not through a link, without waiting (a FIFO is
    refused), unchanged while read; None otherwise."""

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode) or before.st_size > limit:
            return None
        data = _read_all(fd, before.st_size)
        after = os.fstat(fd)
        if (after.st_mtime_ns, after.st_size) != (before.st_mtime_ns, before.st_size):
            return None
        return data, before.st_mtime_ns
    except OSError:
        return None
    finally:
        os.close(fd)


def _workspace_index(root: Path) -> tuple[bytes, int, str] | None:
    """The workspace's git index (bytes, mtime), and its objects folder, when using them is
    safe: `.git` a real folder (not a link, not a worktree's file), no attributes file, and no
    configuration that converts bytes on their way in. None otherwise."""

    dot = root / ".git"
    try:
        if not stat.S_ISDIR(dot.lstat().st_mode) or not stat.S_ISDIR((dot / "objects").lstat().st_mode):
            return None
        if os.path.lexists(dot / "info" / "attributes") or os.path.lexists(dot / "commondir"):
            return None
    except OSError:
        return None
    home = Path(os.path.expanduser("~"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    for config in (dot / "config", home / ".gitconfig", xdg / "git" / "config", Path("/etc/gitconfig")):
        if not os.path.lexists(config):
            continue
        read = _read_regular(config, MAX_CONFIG_BYTES)
        if read is None or CONVERTING_CONFIG.search(read[0]):
            return None
    if not _plain_objects(dot / "objects"):
        return None
    index = _read_regular(dot / "index", MAX_SEED_INDEX_BYTES)
    if index is None:
        return None
    return index[0], index[1], str(dot / "objects")


def _plain_objects(objects: Path) -> bool:
    """Whether git may read the workspace's objects folder without waiting or going elsewhere:
    no alternates of its own (its objects live in another repository), and every file git
    opens by name there (packs, their indexes, commit graphs) a regular file, not a FIFO git
    would wait on forever or a link. A loose object cannot be checked this cheaply: git
    blocked on one is stopped (GitBlocked) and says so."""

    if os.path.lexists(objects / "info" / "alternates") or os.path.lexists(objects / "info" / "http-alternates"):
        return False
    for folder in (objects / "pack", objects / "info", objects / "info" / "commit-graphs"):
        try:
            with os.scandir(folder) as found:
                for entry in found:
                    if not (entry.is_file(follow_symlinks=False)
                            or (entry.name == "commit-graphs" and entry.is_dir(follow_symlinks=False))):
                        return False
        except FileNotFoundError:
            continue
        except OSError:
            return False
    return True
