"""A guard that ends a whole process tree with the process the server started.

An MCP stdio server runs under a guard (`guarded_argv`): a small Python process, run as a
script with `-I -S` (nothing but the standard library, nothing from the working folder),
that is a child subreaper (`PR_SET_CHILD_SUBREAPER`: every orphan of the tree, double forks
and `setsid` included, becomes its child instead of PID 1's) and gets SIGTERM when the
server dies, however it dies (`PR_SET_PDEATHSIG`, SIGKILL of the server included). It starts
the real command with the same stdin, stdout, stderr, working folder and environment, keeps
no copy of the pipes (so the server sees its stdin close), and:

- when the command exits, kills every process left in the tree, reaps them, and exits with
  the command's status;
- on SIGTERM, SIGINT or SIGHUP (the MCP SDK's stop, or the server's death), sends SIGTERM to
  the tree, gives it `GRACE_SECONDS`, kills what is left, and exits.

So no process an MCP server starts outlives it, nor the language server. Linux only; other
systems run the command as it is (`guarded_argv` returns it unchanged).
"""

from __future__ import annotations

import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
GRACE_SECONDS = 1.0  # the SDK escalates to SIGKILL after 2 s: the guard is done before that
POLL_SECONDS = 0.02
GUARD_PATH = os.path.abspath(__file__)


def guarded_argv(argv: list[str]) -> list[str]:
    """`argv` run under the guard (Linux), bound to this process's life; else `argv` itself."""

    if not sys.platform.startswith("linux"):
        return argv
    return [sys.executable, "-I", "-S", GUARD_PATH, str(os.getpid()), "--", *argv]


# ---------------------------------------------------------------- the guard process itself


def _children() -> set[int]:
    me = os.getpid()
    found: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{me}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{me}/task/{task}/children") as handle:
                found.update(int(pid) for pid in handle.read().split())
        except OSError:
            continue
    return found


def _reap() -> tuple[int, int] | None:
    """Reap one exited child if any: (pid, status), else None."""

    try:
        pid, status = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return None
    return (pid, status) if pid else None


def _signal_all(sig: int) -> None:
    for pid in _children():
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:  # its whole group too: members whose parent lives are not our children yet
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _end_tree(grace: float) -> None:
    """Every process of the tree ended and reaped (each killed one's orphans come to us)."""

    if grace > 0:
        _signal_all(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while _children() and time.monotonic() < deadline:
            while _reap():
                pass
            time.sleep(POLL_SECONDS)
    while True:
        while _reap():
            pass
        if not _children():
            return
        _signal_all(signal.SIGKILL)
        time.sleep(POLL_SECONDS)


def _prctl(option: int, value: int) -> bool:
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


class _Stop(Exception):
    """A stop signal arrived (raised from the handler, so a blocking wait returns)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum: int, _frame: object) -> None:
    raise _Stop(signum)


def main(args: list[str]) -> int:
    if len(args) < 3 or args[1] != "--" or not args[0].isdigit():
        print("usage: process_guard.py PARENT_PID -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    parent, command = int(args[0]), args[2:]
    stops = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    try:
        for sig in stops:
            signal.signal(sig, _on_signal)
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the server died before the line above took effect
            return 1
        main_pid = os.fork()
        if main_pid == 0:
            try:
                for sig in stops:
                    signal.signal(sig, signal.SIG_DFL)
                os.execvp(command[0], command)
            except BaseException as exc:  # noqa: BLE001 - the child must never return into the guard
                print(f"cannot start {command[0]}: {exc}", file=sys.stderr)
            os._exit(127)
        # the command holds the pipes now: the guard keeps none (the server must see stdin close)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        while True:
            try:
                pid, status = os.waitpid(-1, 0)  # blocks; a stop signal interrupts it
            except ChildProcessError:
                return 1
            if pid == main_pid:
                code = os.waitstatus_to_exitcode(status)
                _end_tree(0)
                return code if code >= 0 else 128 - code
    except _Stop as stop:
        for sig in stops:  # ending the tree is not interrupted again
            signal.signal(sig, signal.SIG_IGN)
        _end_tree(GRACE_SECONDS)
        return 128 + stop.signum
    except OSError as exc:
        print(f"cannot start {command[0]}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
