"""The shell's sandbox: bubblewrap on Linux, and what happens without it.

Inside the sandbox a command sees the whole file system read-only except the workspace
(writable) and a private `/tmp`; it runs in a new PID namespace (the server's processes,
its `/proc/<pid>/environ` among them, are invisible; bwrap is PID 1 and was started with the
cleaned environment, so its own environ holds no keys); `--die-with-parent` and the PID
namespace end every process the command started (`&`, `nohup`, `setsid`, double forks) when
the command ends, is killed, or the server dies. The network stays on unless
`shellNetwork: false` (`--unshare-net`).

`shellSandbox`: `auto` (default) uses the sandbox when bwrap works here and otherwise runs
unsandboxed (with a notice, and `sandbox.active: false` in `tunacode.status`); `required`
refuses to run a command without it; `off` never uses it. Unsandboxed, the server is a
child subreaper (`PR_SET_CHILD_SUBREAPER`), so orphans of a command become its children and
are killed when the call ends. The server also clears the keys out of its own initial
environment block (what `/proc/<pid>/environ` shows, to root too) and makes itself
non-dumpable; its `os.environ` keeps them for the model requests.
On macOS there is no sandbox yet: `auto` runs unsandboxed, `required` refuses.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tunacode_lsp.core.redact import is_secret_name

log = logging.getLogger(__name__)

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PROBE_SECONDS = 10.0
MODES = ("auto", "required", "off")


@dataclass(frozen=True)
class SandboxState:
    mode: str  # auto | required | off
    active: bool  # commands run inside bwrap
    reason: str | None = None  # why not, when not


@functools.cache
def _probe(bwrap: str) -> str | None:
    """None when bwrap can build our sandbox here, else why not."""

    try:
        done = subprocess.run(
            [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
             "--unshare-pid", "--die-with-parent", "--", "/bin/sh", "-c", "exit 0"],
            capture_output=True, timeout=PROBE_SECONDS, env={"PATH": "/usr/bin:/bin"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap did not run: {exc}"
    if done.returncode != 0:
        return "bwrap cannot create namespaces here: " + done.stderr.decode(errors="replace").strip()[:200]
    return None


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def sandbox_state(mode: str) -> SandboxState:
    if mode == "off":
        return SandboxState(mode, False, "shellSandbox is off")
    if not sys.platform.startswith("linux"):
        return SandboxState(mode, False, f"no sandbox on {sys.platform} yet")
    bwrap = bwrap_path()
    if bwrap is None:
        return SandboxState(mode, False, "bwrap (bubblewrap) is not installed")
    reason = _probe(bwrap)
    return SandboxState(mode, reason is None, reason)


def sandbox_argv(bwrap: str, *, shell: str, command: str, cwd: Path, workspace: Path, network: bool) -> list[str]:
    """bwrap's command line for one shell command (order matters: the workspace is bound
    after the /tmp tmpfs, so a workspace under /tmp stays visible)."""

    argv = [
        bwrap,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--bind", str(workspace), str(workspace),
        "--chdir", str(cwd),
        "--unshare-pid",
        "--die-with-parent",
        "--new-session",
    ]
    if not network:
        argv.append("--unshare-net")
    return [*argv, "--", shell, "-c", command]


# /proc/<pid>/stat fields 50 and 51 (1-based): the initial environment block's bounds. Counted
# from field 3, the first after the command name's closing parenthesis.
ENV_START_FIELD = 50 - 3


def scrub_environment_block() -> list[str]:
    """Zero the values of secret variables (`*_API_KEY`) in this process's initial environment
    block, the memory `/proc/<pid>/environ` reads, so no process (root included, which
    non-dumpable does not stop) can read a key there. `os.environ` is Python's own copy and keeps
    them; C's environ gets them back as heap copies (setenv), which /proc does not show.
    Returns the names scrubbed (Linux only; elsewhere nothing)."""

    with open("/proc/self/stat", "rb") as handle:
        fields = handle.read().rsplit(b")", 1)[1].split()
    start, end = int(fields[ENV_START_FIELD]), int(fields[ENV_START_FIELD + 1])
    if not 0 < start < end:
        return []
    block = ctypes.string_at(start, end - start)
    scrubbed: list[str] = []
    offset = 0
    for entry in block.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        text_name = name.decode(errors="replace")
        if sep and value and is_secret_name(text_name):
            ctypes.memset(start + offset + len(name) + 1, 0, len(value))
            current = os.environ.get(text_name)
            if current is not None:
                os.putenv(text_name, current)  # C getenv sees the value again, from the heap
            scrubbed.append(text_name)
        offset += len(entry) + 1
    return scrubbed


@functools.cache
def harden_process() -> None:
    """Once per process: become a child subreaper and non-dumpable, and take the keys out of
    the environment block /proc shows (Linux; a no-op elsewhere)."""

    if not sys.platform.startswith("linux"):
        return
    try:
        scrub_environment_block()
    except (OSError, ValueError, IndexError) as exc:
        log.warning("cannot clear the keys from the server's environment block: %s", exc)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            log.warning("PR_SET_CHILD_SUBREAPER failed: errno %d", ctypes.get_errno())
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            log.warning("PR_SET_DUMPABLE failed: errno %d", ctypes.get_errno())
    except (OSError, AttributeError) as exc:
        log.warning("cannot harden the server process: %s", exc)


def adopted_children() -> set[int]:
    """Our direct children right now (orphans of commands are adopted by a subreaper)."""

    me = os.getpid()
    children: set[int] = set()
    try:
        for task in os.listdir(f"/proc/{me}/task"):
            try:
                with open(f"/proc/{me}/task/{task}/children") as handle:
                    children.update(int(pid) for pid in handle.read().split())
            except OSError:
                continue
    except OSError:
        pass
    return children


def has_marker(pid: int, marker: bytes) -> bool:
    """The process's environment holds `marker` (it was started by a given tool call)."""

    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return marker in handle.read().split(b"\0")
    except OSError:
        return False
