"""Which files a headless run changed: a snapshot of the workspace before and after.

The fallback for servers whose `RequestResult` has no `changedFiles` (the server's own list
wins when present). A snapshot records each visible file's size, mtime and a hash of its
content; files are seen as git sees them (.gitignore files at any depth and
.git/info/exclude honoured, tool and dependency folders skipped, symlinks not followed).
It is bounded: at most MAX_FILES files, and contents are hashed only up to a byte budget, so
a huge checkout costs a bounded walk, not a full read. A file written back with the same
bytes does not count as changed when its hash is known.

This walk mirrors tools/walk.py on purpose: the tool modules pull in the agent (about 0.3 s),
which the light headless client must not pay. The ignore files are the checkout's: they are
read with the confined reader (tools/confined_read.py, light), so a `.gitignore` that is a
FIFO, a link to one or a link out of the workspace is skipped (named in `skipped`), never
waited on.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tunacode_lsp.tools.confined_read import read_confined

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

MAX_FILES = 20_000
HASH_BUDGET_BYTES = 64 * 1024 * 1024
HASH_MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_IGNORE_FILE_BYTES = 1024 * 1024
SKIPPED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache",
        ".pytest_cache", ".ruff_cache", ".tox", ".nox", ".eggs",
    }
)  # fmt: skip


@dataclass(frozen=True)
class FileState:
    size: int
    mtime_ns: int
    digest: bytes | None  # None: not hashed (over the budget)


@dataclass
class Snapshot:
    files: dict[str, FileState] = field(default_factory=dict)
    complete: bool = True  # False: MAX_FILES reached, later files unseen
    hashed_bytes: int = 0
    skipped: list[str] = field(default_factory=list)  # ignore files not read, and why


def _digest(path: str, size: int, snapshot: Snapshot) -> bytes | None:
    if size > HASH_MAX_FILE_BYTES or snapshot.hashed_bytes + size > HASH_BUDGET_BYTES:
        return None
    try:
        with open(path, "rb") as handle:
            digest = hashlib.file_digest(handle, "blake2b").digest()
    except OSError:
        return None
    snapshot.hashed_bytes += size
    return digest


def _rules(root: Path, rel: str, base: str, snapshot: Snapshot) -> tuple[str, GitIgnoreSpec] | None:
    found = read_confined(root, rel, limit=MAX_IGNORE_FILE_BYTES)
    if found.notice is not None:
        snapshot.skipped.append(found.notice)
    if not found.data:
        return None
    lines = found.data.decode("utf-8", errors="replace").splitlines()
    if not lines:
        return None
    from pathspec import GitIgnoreSpec  # in the snapshot's thread, not with the client's start

    return base, GitIgnoreSpec.from_lines(lines)


def _ignored(rules: list[tuple[str, GitIgnoreSpec]], rel: str, is_dir: bool) -> bool:
    for base, spec in reversed(rules):  # the deepest .gitignore that has a say wins
        if base:
            if not rel.startswith(base + "/"):
                continue
            local = rel[len(base) + 1 :]
        else:
            local = rel
        decision = spec.check_file(local + "/" if is_dir else local).include
        if decision is not None:
            return decision
    return False


def take(root: Path, before: Snapshot | None = None) -> Snapshot:
    """The workspace now. With `before`, a file is hashed only when its size is unchanged but
    its mtime moved (the one case a hash decides); without, every file is (within the budget)."""

    snapshot = Snapshot()
    rules: list[tuple[str, GitIgnoreSpec]] = []
    root = Path(os.path.realpath(root))
    exclude = _rules(root, ".git/info/exclude", "", snapshot)
    if exclude:
        rules.append(exclude)
    _walk(root, str(root), "", rules, snapshot, before)
    return snapshot


def _walk(root: Path, folder: str, rel_folder: str, rules: list[tuple[str, GitIgnoreSpec]], snapshot: Snapshot,
          before: Snapshot | None) -> None:
    own = _rules(root, f"{rel_folder}/.gitignore" if rel_folder else ".gitignore", rel_folder, snapshot)
    if own:
        rules = [*rules, own]
    try:
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        if len(snapshot.files) >= MAX_FILES:
            snapshot.complete = False
            return
        rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
        try:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED_DIRS and not _ignored(rules, rel, True):
                    _walk(root, entry.path, rel, rules, snapshot, before)
                continue
            if not (entry.is_file(follow_symlinks=False) or entry.is_symlink()) or _ignored(rules, rel, False):
                continue
            stat = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        digest = None
        if not entry.is_symlink():
            old = before.files.get(rel) if before is not None else None
            if before is None or (old is not None and old.size == stat.st_size and old.mtime_ns != stat.st_mtime_ns):
                digest = _digest(entry.path, stat.st_size, snapshot)
        snapshot.files[rel] = FileState(stat.st_size, stat.st_mtime_ns, digest)


def changed_files(before: Snapshot, after: Snapshot) -> list[str]:
    """Paths (relative, `/`-separated, sorted) added, removed or modified between the two."""

    changed: list[str] = []
    for rel in sorted(before.files.keys() | after.files.keys()):
        old, new = before.files.get(rel), after.files.get(rel)
        if old is None or new is None:
            if new is None and not after.complete:
                continue  # unseen past the bound, not necessarily removed
            changed.append(rel)
        elif old.size != new.size:
            changed.append(rel)
        elif old.mtime_ns != new.mtime_ns and (old.digest is None or new.digest is None or old.digest != new.digest):
            changed.append(rel)
    return changed


def without_own_outputs(root: Path, changed: list[str], fds: tuple[int, ...] = (1, 2)) -> list[str]:
    """`changed` less the files this process writes its own output to: `run ... > events.jsonl`
    inside the checkout is the run's output, not the agent's change (matched by device and inode)."""

    own: set[tuple[int, int]] = set()
    for fd in fds:
        try:
            info = os.fstat(fd)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            own.add((info.st_dev, info.st_ino))
    if not own:
        return changed
    kept: list[str] = []
    for rel in changed:
        try:
            info = os.stat(os.path.join(root, rel), follow_symlinks=False)
        except OSError:
            kept.append(rel)  # removed: not one of our open outputs
            continue
        if (info.st_dev, info.st_ino) not in own:
            kept.append(rel)
    return kept
