"""Opening a path inside the workspace without following a link out at any moment.

`paths.resolve_in_workspace` checks a path once; a folder swapped for a symlink right after
that check would still lead outside when the file is opened by name. Here every open starts
from a descriptor of the workspace root: `openat2(2)` with `RESOLVE_BENEATH |
RESOLVE_NO_MAGICLINKS` where the kernel has it (Linux 5.6+; links that stay inside are
followed, anything that would leave the root fails), else a walk component by component
with `O_NOFOLLOW` directory descriptors (no symlink followed at all). Writes go to a
temporary file in the target's folder descriptor, renamed within it.

Hard links are not links to follow: a hard link inside the workspace to a file outside it
(made before, by someone with access to both) is the same file, and is read and written as
one.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tunacode_lsp.tools.errors import ToolError

SYS_OPENAT2 = 437  # the same number on x86_64 and aarch64
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_BENEATH = 0x08


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_have_openat2 = _libc is not None


def _openat2(dirfd: int, rel: str, flags: int, mode: int) -> int:
    global _have_openat2
    assert _libc is not None
    # the kernel refuses a mode without O_CREAT
    how = _OpenHow(flags | os.O_CLOEXEC, mode if flags & os.O_CREAT else 0, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
    fd = _libc.syscall(SYS_OPENAT2, dirfd, rel.encode(), ctypes.byref(how), ctypes.sizeof(how))
    if fd >= 0:
        return int(fd)
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EPERM) and not os.path.isabs(rel):  # no openat2 (old kernel, seccomp)
        _have_openat2 = False
        return _walk(dirfd, rel, flags, mode)
    raise OSError(err, os.strerror(err), rel)


def _walk(dirfd: int, rel: str, flags: int, mode: int) -> int:
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    current = os.dup(dirfd)
    try:
        for part in parts[:-1]:
            if part == "..":
                raise OSError(errno.EXDEV, "a '..' component", rel)
            following = os.open(part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=current)
            os.close(current)
            current = following
        last = parts[-1] if parts else "."
        return os.open(last, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=current)
    finally:
        os.close(current)


def _relative(real_root: Path, path: Path) -> str:
    try:
        return path.relative_to(real_root).as_posix() or "."
    except ValueError:
        raise ToolError(f"'{path}' is outside the workspace.") from None


def _moved_out(shown: str, exc: OSError) -> ToolError:
    return ToolError(
        f"'{shown}' could not be opened inside the workspace: a part of its path is (now) a link "
        f"leading out of it, or it changed while it was opened ({exc.strerror}). Nothing was read or written."
    )


def open_beneath(real_root: Path, path: Path, flags: int, shown: str, mode: int = 0o644) -> int:
    """A descriptor of `path` (resolved, inside `real_root`), opened relative to the root."""

    rel = _relative(real_root, path)
    root_fd = os.open(real_root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return _openat2(root_fd, rel, flags, mode) if _have_openat2 else _walk(root_fd, rel, flags, mode)
    except OSError as exc:
        if exc.errno in (errno.EXDEV, errno.ELOOP, errno.ENOTDIR):
            raise _moved_out(shown, exc) from None
        raise
    finally:
        os.close(root_fd)


@contextmanager
def folder_beneath(real_root: Path, folder: Path, shown: str) -> Iterator[int]:
    fd = open_beneath(real_root, folder, os.O_PATH | os.O_DIRECTORY, shown)
    try:
        yield fd
    finally:
        os.close(fd)


def read_beneath(real_root: Path, path: Path, shown: str, limit: int) -> tuple[os.stat_result, bytes]:
    """(the file's stat, its bytes) for a regular file of at most `limit` bytes (else only its stat)."""

    fd = open_beneath(real_root, path, os.O_RDONLY | os.O_NONBLOCK, shown)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return info, b""
        return info, handle.read(limit + 1)


def create_beneath(real_root: Path, path: Path, data: bytes, shown: str) -> None:
    """Create a new file (and its missing folders); never follows a link, never overwrites."""

    rel_parts = _relative(real_root, path).split("/")
    fd = os.open(real_root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in rel_parts[:-1]:
            try:
                os.mkdir(part, dir_fd=fd)
            except FileExistsError:
                pass
            try:
                following = os.open(part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode):
                    raise _moved_out(shown, exc) from None
                raise  # a file where a folder belongs: the caller says so
            os.close(fd)
            fd = following
        out = os.open(rel_parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=fd)
        with os.fdopen(out, "wb") as handle:
            handle.write(data)
    finally:
        os.close(fd)


def replace_beneath(real_root: Path, path: Path, data: bytes, shown: str) -> None:
    """Replace a regular file's content: a temporary file in its folder, renamed over it."""

    with folder_beneath(real_root, path.parent, shown) as folder:
        try:
            info = os.stat(path.name, dir_fd=folder, follow_symlinks=False)
        except OSError as exc:
            raise _moved_out(shown, exc) from None
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"'{shown}' is no longer a regular file (a link or a folder now): nothing was written.")
        temp = f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        out = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
        try:
            with os.fdopen(out, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
                os.fchmod(handle.fileno(), stat.S_IMODE(info.st_mode))
            os.rename(temp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            try:
                os.unlink(temp, dir_fd=folder)
            except FileNotFoundError:
                pass
            raise
