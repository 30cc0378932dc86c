"""Starting `run`'s server process, and starting it before the command line is parsed.

The server's start (an interpreter importing pygls, ~0.5 s) is most of a `run`, so it begins
as early as it can: cli/main.py calls `early_server` for `run` before anything else of
`run` is imported (argparse, pathlib, typing and the checks: ~20 ms), guessing the folder
from a literal `--cwd DIR` / `--cwd=DIR` (else the current one). Once the arguments are
parsed and checked, cli/run.py keeps that process only when its folder is the one asked
for (`EarlyServer.fits`); otherwise, or on any error, usage error, `--help` or Ctrl-C, it is
killed and reaped, and a server is started in the right folder. Before `initialize` a
server reads nothing of the workspace and runs nothing of it, so a process started early
and killed has done nothing.

This module stays light (os, subprocess): it is imported before the spawn.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence

from tunacode_lsp.cli.safe_path import safe_python_path

TYPE_CHECKING = False  # not `typing` (~6 ms) before the spawn
if TYPE_CHECKING:
    from pathlib import PurePath

# flags after which a server is not wanted (argparse answers and exits)
NO_SERVER_FLAGS = frozenset({"-h", "--help"})


def server_command() -> list[str]:
    # -P: the working directory (the checkout) is not on sys.path, so no `pygls/` or
    # `tunacode_lsp/` of the workspace is imported; not -I, which would also drop the
    # user's site-packages and PYTHONPATH, where this very package may be installed.
    return [sys.executable, "-P", "-m", "tunacode_lsp"]


def server_env(env: Mapping[str, str]) -> dict[str, str]:
    """The server's environment: `PYTHONPATH` keeps only absolute entries (an empty or
    relative one would put the checkout back on sys.path)."""

    out = dict(env)
    python_path = safe_python_path(out.pop("PYTHONPATH", None))
    if python_path:
        out["PYTHONPATH"] = python_path
    return out


def spawn_server(cwd: str | PurePath, env: Mapping[str, str], command: list[str] | None = None) -> subprocess.Popen[bytes]:
    """Start the server on pipes, in its own session: a terminal's Ctrl-C reaches only us."""

    return subprocess.Popen(
        command or server_command(),
        cwd=str(cwd),
        env=server_env(env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """Kill the server's process group and reap it; its pipes closed."""

    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass
    process.wait()


class EarlyServer:
    """A server started before `run`'s arguments were parsed, and the folder it runs in."""

    def __init__(self, process: subprocess.Popen[bytes], folder: str) -> None:
        self.process = process
        self.folder = folder  # resolved, as RunOptions.cwd is

    def fits(self, cwd: PurePath) -> bool:
        """Started in `cwd` (the parsed, resolved --cwd) and still running."""

        return self.folder == str(cwd) and self.process.poll() is None


def cwd_argument(argv: Sequence[str]) -> str:
    """The folder a literal `--cwd DIR` or `--cwd=DIR` names (the last one wins, as argparse
    has it), else the current one. A guess: `EarlyServer.fits` checks it against the parse."""

    folder = "."
    for index, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--cwd" and index + 1 < len(argv):
            folder = argv[index + 1]
        elif arg.startswith("--cwd="):
            folder = arg.removeprefix("--cwd=")
    return folder


def interrupt_on_term() -> None:
    """Until `run` installs its own handlers: SIGTERM raises KeyboardInterrupt, as a Ctrl-C
    does, so a server started early is stopped on the way out (SIGTERM's default would end
    this process at once and leave the server to notice its closed stdin)."""

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread
        pass


def early_server(argv: Sequence[str], env: Mapping[str, str], box: list[EarlyServer]) -> None:
    """`run`'s server, started now in the folder the command line seems to name, put in `box`
    (nothing when no server is wanted, `--help`, or it cannot start here: the parse then says
    why). A Ctrl-C or SIGTERM during the spawn waits until the process is in `box`, then
    raises KeyboardInterrupt: one arriving inside `Popen` (after the fork, while it waits for
    the exec) would otherwise leave a server nobody holds. The caller stops what `box` holds."""

    if NO_SERVER_FLAGS.intersection(argv):
        return
    folder = os.path.realpath(os.path.expanduser(cwd_argument(argv)))
    if not os.path.isdir(folder):
        return
    fired: list[int] = []

    def hold(signum: int, _frame: object) -> None:
        fired.append(signum)

    previous = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, hold)
    except ValueError:  # not the main thread: nothing to hold
        pass
    try:
        try:
            process = spawn_server(folder, env)
        except OSError:
            return  # started again after the checks, where a failure is reported
        box.append(EarlyServer(process, folder))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if fired:
        raise KeyboardInterrupt
