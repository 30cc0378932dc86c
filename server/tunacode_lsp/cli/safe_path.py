"""Keeping the working directory off `sys.path`: no code from the workspace runs in the server.

`python -m tunacode_lsp` (without `-P`) puts the working directory first on `sys.path`, and
so does an empty or `.` entry in `PYTHONPATH`; a checkout holding `pygls/`, `orjson.py` or
`httpx/` would then be imported in place of the real package, in a process holding every
key of its environment. Every start command the project writes runs `python -P` (or the
console script); this is the second line for a start command someone else wrote: the entry
points drop such an entry before anything is imported from it. It imports only `os` and
`sys` (both loaded before any path entry is searched).
"""

from __future__ import annotations

import os
import sys


def safe_python_path(value: str | None) -> str | None:
    """`PYTHONPATH` without its empty and relative entries (each one means the working
    directory, or a folder in it, to Python); None when nothing is left."""

    if not value:
        return None
    kept = [entry for entry in value.split(os.pathsep) if entry and os.path.isabs(entry)]
    return os.pathsep.join(kept) or None


def drop_working_directory() -> None:
    """Remove the working directory (as '' or as its full path) from `sys.path`, unless this
    package itself was loaded from it (a source tree run where it lies)."""

    if not sys.path:
        return
    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:  # the working directory was removed
        cwd = ""
    package_home = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    if cwd == package_home:
        return
    sys.path[:] = [entry for entry in sys.path if entry != "" and (not cwd or os.path.realpath(entry) != cwd)]
