"""The server's bytecode caches, as every installed copy has them, before start-up is timed.

pip compiles an installed package's modules (`.pyc` in `__pycache__`); an editable install
in a shell with `PYTHONDONTWRITEBYTECODE=1` (this machine's) never writes them, so each
server start compiles ~170 of our modules from source while pygls, lsprotocol and tinyagent
load from their caches: ~0.2 s more for `run hi` and ~2.4 MB more idle RSS (the compiler's
leftovers), a cost no user's install pays (docs/performance.md, start-up, fourth session).
The start-up figures compile the package first, so they measure the server, not the shell.
"""

from __future__ import annotations

import compileall
from pathlib import Path

import tunacode_lsp


def ensure_server_bytecode() -> None:
    """Write (or refresh) the `.pyc` of every module of the server package; quiet, idempotent."""

    compileall.compile_dir(str(Path(tunacode_lsp.__file__).parent), quiet=1, workers=1)
