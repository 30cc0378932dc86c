"""The one reader for files the server reads because the workspace has them.

Instruction files (AGENTS.md), `.mcp.json`, `.tunacode/**`, ignore files the server parses
itself and context files are written by whoever wrote the checkout: a link to
`~/.aws/credentials`, a FIFO that never answers, a 10 GB file. Every such read goes through
`read_confined` (or `read_confined_async` from a coroutine), which:

- opens the file beneath the workspace root without following a link out of it
  (tools/beneath.py: `openat2(RESOLVE_BENEATH)`, or a walk with `O_NOFOLLOW`); an absolute
  link, a `..` out, or a link in a folder on the way is refused;
- reads regular files only: the path is first opened `O_PATH` (no side effect, no wait on
  a FIFO or a device) and checked, then opened again `O_NONBLOCK` and checked to be the
  same file; a FIFO, device, socket or folder is skipped;
- reads at most `limit` bytes (`truncate=True`: the first `limit` bytes, marked truncated;
  else a larger file is skipped);
- never runs on the event loop (`read_confined_async` runs the read in a thread).

A file that is missing gives `data=None` and no notice; a file that is skipped gives
`data=None` and a `notice` naming it and saying why, for the caller to show the user (and
never its content).
"""

from __future__ import annotations

import asyncio
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from tunacode_lsp.tools.beneath import open_beneath
from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.paths import is_inside, workspace_real_root

DEFAULT_LIMIT = 1024 * 1024  # 1 MB: no file a checkout hands the server needs more


@dataclass(frozen=True)
class ConfinedFile:
    """What `read_confined` found at one workspace path."""

    shown: str  # the path relative to the root, as notices name it
    data: bytes | None = None  # None: missing or skipped
    truncated: bool = False  # only with truncate=True: the file held more than `limit` bytes
    notice: str | None = None  # why it was skipped (names the file), for the user

    def text(self) -> str | None:
        """The content as text (undecodable bytes as U+FFFD), or None."""
        return None if self.data is None else self.data.decode("utf-8", errors="replace")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


def _skipped(shown: str, why: str) -> ConfinedFile:
    return ConfinedFile(shown, notice=f"{shown} skipped: {why}; it was not read.")


def read_confined(root: Path, path: Path | str, *, limit: int = DEFAULT_LIMIT, truncate: bool = False) -> ConfinedFile:
    """Read `path` (relative to `root`, or absolute inside it) as the workspace's file.

    Blocking: call it from a thread (or `read_confined_async`). Never raises for what the
    file is; an error the caller cannot do anything about (EIO) is a skip with a notice too.
    """

    real_root = workspace_real_root(root)
    raw = Path(path)
    # the path as written, made absolute (not resolved: that would follow the links refused here)
    if raw.is_absolute():
        candidate = Path(os.path.normpath(raw))
        unresolved = Path(os.path.abspath(root))  # a path given through the root as the caller wrote it
        if not is_inside(real_root, candidate) and is_inside(unresolved, candidate):
            candidate = real_root / candidate.relative_to(unresolved)
    else:
        candidate = Path(os.path.normpath(real_root / raw))
    if not is_inside(real_root, candidate):
        return _skipped(str(path), f"it is outside the workspace ({real_root})")
    shown = candidate.relative_to(real_root).as_posix() if candidate != real_root else "."
    try:
        probe = open_beneath(real_root, candidate, os.O_PATH, shown)  # links inside are followed
    except FileNotFoundError:
        return ConfinedFile(shown)
    except ToolError:
        return _skipped(shown, "its path leads out of the workspace (a link out, or a file where a folder belongs)")
    except OSError as exc:
        return _skipped(shown, f"it cannot be opened ({exc.strerror or exc})")
    try:
        info = os.fstat(probe)
    finally:
        os.close(probe)
    if not stat.S_ISREG(info.st_mode):
        return _skipped(shown, f"it is {_kind(info.st_mode)}, not a regular file")
    if info.st_size > limit and not truncate:
        return _skipped(shown, f"it is larger than {limit:,} bytes ({info.st_size:,})")
    try:
        fd = open_beneath(real_root, candidate, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY, shown)
    except FileNotFoundError:
        return ConfinedFile(shown)
    except (ToolError, OSError) as exc:
        return _skipped(shown, f"it changed while it was opened ({getattr(exc, 'strerror', None) or exc})")
    with os.fdopen(fd, "rb") as handle:
        again = os.fstat(handle.fileno())
        if (again.st_dev, again.st_ino) != (info.st_dev, info.st_ino) or not stat.S_ISREG(again.st_mode):
            return _skipped(shown, "it changed while it was opened")
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            return _skipped(shown, f"it cannot be read ({exc.strerror or exc})")
    if len(data) > limit:
        if not truncate:
            return _skipped(shown, f"it is larger than {limit:,} bytes")
        return ConfinedFile(shown, data[:limit], truncated=True)
    return ConfinedFile(shown, data)


async def read_confined_async(
    root: Path, path: Path | str, *, limit: int = DEFAULT_LIMIT, truncate: bool = False
) -> ConfinedFile:
    """`read_confined` in a worker thread: the event loop never waits on the file."""

    return await asyncio.to_thread(read_confined, root, path, limit=limit, truncate=truncate)
