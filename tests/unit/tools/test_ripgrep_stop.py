"""ripgrep stopped early (a tool's bound on lines reached): the call returns at once, and the
stop leaves no process behind, not even a zombie.

Found by bench `big_workspace`: `list_files` in a 60,000-file workspace (more than its 50,000
counted paths) sometimes hung until its 60 s bound. rg's output left unread filled asyncio's
stream buffer, which paused the pipe, so its end of file was never read; and asyncio's
`Process.wait()` answers only once every pipe is closed, unless the exit was seen before the
wait began. A worker thread holding the GIL (the first snapshot of the workspace) delayed
that exit notice. Killing only the bwrap that the server started also orphaned bwrap's own
child (the sandbox's init): a server is a child subreaper, so each such stop left it a zombie.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tunacode_lsp.tools.base import ToolCall
from tunacode_lsp.tools.ripgrep import run_rg

LINES = 200_000


@pytest.fixture
def big_output(tmp_path: Path) -> Path:
    (tmp_path / "lines.txt").write_text("match this line of the file\n" * LINES)
    return tmp_path


def _hold_the_gil(stop: threading.Event) -> None:
    while not stop.is_set():
        sum(range(10_000))


async def test_an_early_stop_returns_at_once_while_another_thread_is_busy(big_output: Path) -> None:
    stop = threading.Event()
    busy = threading.Thread(target=_hold_the_gil, args=(stop,), daemon=True)
    busy.start()
    try:
        for _ in range(12):
            call = ToolCall(tool_call_id="t", signal=asyncio.Event(), on_update=None)
            started = time.monotonic()
            found = await asyncio.wait_for(run_rg(["-n", "match", "lines.txt"], big_output, call, max_lines=100, max_chars=1 << 20), 20)
            assert found.stopped and len(found.lines) == 100
            assert time.monotonic() - started < 10
    finally:
        stop.set()
        busy.join()


SUBREAPER_RUN = textwrap.dedent("""
    import asyncio, ctypes, os, sys
    from pathlib import Path
    from tunacode_lsp.tools.base import ToolCall
    from tunacode_lsp.tools.ripgrep import run_rg

    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER, as the server is

    def children():
        me = os.getpid()
        found = []
        for task in os.listdir(f"/proc/{me}/task"):
            found += open(f"/proc/{me}/task/{task}/children").read().split()
        return found

    async def main():
        for _ in range(5):
            call = ToolCall(tool_call_id="t", signal=asyncio.Event(), on_update=None)
            found = await run_rg(["-n", "match", "lines.txt"], Path(sys.argv[1]), call, max_lines=100, max_chars=1 << 20)
            assert found.stopped
        # run_rg has reaped the process it started: an orphan of it was reparented to us before
        print("children:", " ".join(children()))

    asyncio.run(main())
""")


def test_an_early_stop_leaves_no_zombie_in_a_subreaper(big_output: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SUBREAPER_RUN, str(big_output)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[3] / "server")},
    )
    assert done.returncode == 0, done.stderr
    # at most the last run's sandbox init, if it had not exited yet when that run was reaped
    assert len(done.stdout.split()) <= 2, done.stdout
