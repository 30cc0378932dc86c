"""Workspace confinement: every path a tool touches is resolved here and must stay inside the root."""

from __future__ import annotations

import os
from pathlib import Path

from tunacode_lsp.core.text import clip
from tunacode_lsp.tools.errors import ToolError


def workspace_real_root(root: Path) -> Path:
    """The workspace root with symlinks resolved, as every check compares against it."""
    return Path(os.path.realpath(root))


def is_inside(real_root: Path, real_path: Path | str) -> bool:
    """True when an already resolved path is the root or lies below it."""
    root_text = str(real_root)
    path_text = str(real_path)
    return path_text == root_text or path_text.startswith(root_text.rstrip(os.sep) + os.sep)


def resolve_in_workspace(real_root: Path, raw: str, *, field: str = "filepath") -> Path:
    """Resolve a path given by the model (relative to the root, or absolute) to a real path inside.

    Symlinks are followed (also in the parts that exist of a path that does not yet exist), so
    `..`, absolute paths elsewhere and links pointing out all end up outside and are refused.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise ToolError(f"'{field}' is empty: give a path relative to the workspace root.")
    if "\x00" in raw:
        raise ToolError(f"'{field}' contains a NUL byte: give a plain path.")
    candidate = Path(raw) if os.path.isabs(raw) else real_root / raw
    try:
        real = Path(os.path.realpath(candidate))
    except (OSError, ValueError) as exc:
        raise ToolError(f"Cannot resolve path '{raw}': {exc}.") from exc
    if not is_inside(real_root, real):
        raise ToolError(
            f"Path '{clip(raw, 200)}' is outside the workspace ({real_root}); only files inside it can be "
            "used. Give a path relative to the workspace root."
        )
    metadata = vcs_metadata_part(real_root, real) or vcs_metadata_part(real_root, Path(os.path.normpath(candidate)))
    if metadata:
        raise ToolError(
            f"'{clip(raw, 200)}' is inside {metadata}/, the version-control metadata of the repository: the file "
            "tools do not read or change it (a change there can run commands, e.g. hooks or core.fsmonitor). "
            "Use the shell for version control, e.g. `git status`."
        )
    return real


VCS_METADATA = frozenset({".git", ".hg", ".svn", ".jj"})


def vcs_metadata_part(real_root: Path, path: Path) -> str | None:
    """The VCS metadata folder a path lies in (at any depth below the root), or None."""

    try:
        parts = path.relative_to(real_root).parts
    except ValueError:
        return None
    return next((part for part in parts if part in VCS_METADATA), None)


def display_path(real_root: Path, real_path: Path) -> str:
    """The path as the model should write it: relative to the root, with forward slashes."""
    if real_path == real_root:
        return "."
    return real_path.relative_to(real_root).as_posix()


def special_file_problem(real_path: Path, shown: str) -> str | None:
    """Why a path that exists cannot be used by a file tool: a FIFO, a device or a socket (links
    are already resolved by resolve_in_workspace, so a link to one is one). Opening a FIFO by
    name blocks until a writer comes, a device may never end: every tool refuses them alike."""

    import stat

    try:
        mode = os.stat(real_path).st_mode
    except OSError:
        return None  # missing: the caller says so in its own words
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return special_file_message(shown)


def special_file_message(shown: str) -> str:
    return f"'{shown}' is not a regular file (device, socket or pipe): refusing to read it."


def refuse_special(real_path: Path, shown: str) -> None:
    problem = special_file_problem(real_path, shown)
    if problem:
        raise ToolError(problem)
