"""An MCP server for the process-tree and consent tests: the demo server (demo_server.py),
after doing what the environment asks:

- `MARKER_FILE`: write a JSON file there with this process's id and the `SEEN` variable
  (what `${VAR}` became), so a test can tell the server started and what it got;
- `HELPER_PIDFILE`: double-fork a helper first (`setsid`, then fork again: it leaves the
  server's process group and session) that writes its pid there and sleeps;
- `HANG=1`: never answer (the server stays `starting`).
Run: python tests/mcp/tree_server.py
"""

from __future__ import annotations

import json
import os
import runpy
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _helper(pidfile: str) -> None:
    first = os.fork()
    if first == 0:
        os.setsid()
        if os.fork() == 0:
            tmp = pidfile + ".tmp"
            Path(tmp).write_text(str(os.getpid()))
            os.replace(tmp, pidfile)
            for fd in (0, 1, 2):  # a daemon lets go of the server's pipes
                os.close(fd)
            time.sleep(3600)
        os._exit(0)
    os.waitpid(first, 0)


if __name__ == "__main__":
    if os.environ.get("HELPER_PIDFILE"):
        _helper(os.environ["HELPER_PIDFILE"])
    if os.environ.get("MARKER_FILE"):
        Path(os.environ["MARKER_FILE"]).write_text(json.dumps({"pid": os.getpid(), "seen": os.environ.get("SEEN")}))
    if os.environ.get("HANG") == "1":
        time.sleep(3600)
    runpy.run_path(str(HERE / "demo_server.py"), run_name="__main__")
