"""The server with its session store on `PRAGMA synchronous = NORMAL`: a what-if, for comparison.

`python -m bench.whatif_server` runs the real server (`tunacode_lsp.cli.main`) with one
change made at start: every store connection commits without an fsync (in WAL mode a commit
still survives the process crashing; only an OS crash or power loss may lose the last ones).
The figures that store messages on their way run against it too, to show what the commit's
fsync costs them. Nothing under server/ is changed.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from tunacode_lsp.session import store as store_module

_REPO = str(Path(__file__).resolve().parents[1])
# `-c` with the repository on sys.path: works whatever the current folder is
WHATIF_COMMAND = [
    sys.executable, "-c",
    f"import sys; sys.path.insert(0, {_REPO!r}); from bench.whatif_server import main; sys.exit(main())",
]
WHATIF_LABEL = "what-if: store synchronous=NORMAL"

_shipped_conn = store_module.SessionStore._conn


def _relaxed_conn(self: store_module.SessionStore) -> sqlite3.Connection:
    fresh = getattr(self._local, "conn", None) is None
    conn = _shipped_conn(self)
    if fresh:
        conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def main() -> int:
    store_module.SessionStore._conn = _relaxed_conn  # type: ignore[method-assign]
    from tunacode_lsp.cli import main as serve

    return serve(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
