"""The shell's sandbox: bubblewrap on Linux, and what happens without it.

Inside the sandbox a command sees, denied by default: the system folders read-only (with the
secrets /etc holds masked), the workspace writable (its VCS control files and the files a tool
runs by itself outside the sandbox read-only), and private empty `/tmp`, `/var/tmp`, `/run` and
home; nothing else of the host (no home, other projects, host sockets). It runs in new PID, IPC,
UTS and network namespaces (the server's processes, its `/proc/<pid>/environ` among them, are
invisible; bwrap is PID 1 and was started with the command's allowlisted environment, so its own
environ holds no key; no host abstract socket is reachable); `--die-with-parent` and the PID
namespace end every process the command started (`&`, `nohup`, `setsid`, double forks) when the
command ends, is killed, or the server dies. The network stays on through pasta (a user-mode
stack attached to the sandbox's namespace, its port forwarding off, so the host's loopback
services are not reachable) unless `shellNetwork: false`; without pasta installed the sandbox
shares the host's network namespace.

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
import glob
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tunacode_lsp.core.redact import is_secret_name
from tunacode_lsp.tools.sandbox_protected import runs_code_paths, vcs_control_paths

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
             "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
             "--", "/bin/sh", "-c", "exit 0"],
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


# The system, shown read-only: what programs and their libraries need. Nothing else of the host
# is visible (no /home, /root, /run, /var, /srv, /mnt, /media, host /tmp).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix/store")
SYSTEM_EXTRA = ("/sys/devices/system/cpu",)  # CPU count (os.cpu_count, nproc) without the rest of /sys
# Secrets that /etc holds on common systems, hidden inside (an empty file or folder in their place).
ETC_SECRET_PATTERNS = (
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
    "/etc/ssh/ssh_host_*_key", "/etc/ssl/private", "/etc/NetworkManager/system-connections",
    "/etc/wpa_supplicant", "/etc/docker/key.json", "/etc/krb5.keytab",
)
@functools.cache
def git_identity() -> dict[str, str]:
    """The user's git name and e-mail (their global config, which the sandbox does not show), as
    GIT_AUTHOR_*/GIT_COMMITTER_* variables, so `git commit` works inside. Nothing else of it."""

    names = {"user.name": ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"), "user.email": ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL")}
    git = shutil.which("git")
    env: dict[str, str] = {}
    for key, variables in names.items():
        try:
            done = subprocess.run([git or "git", "config", "--global", "--get", key], capture_output=True, text=True,
                                  timeout=PROBE_SECONDS, cwd="/", env={"PATH": os.defpath, "HOME": os.path.expanduser("~")})
        except (OSError, subprocess.TimeoutExpired):
            return {}
        value = done.stdout.strip()
        if done.returncode == 0 and value and "\n" not in value:
            env.update(dict.fromkeys(variables, value))
    return env


def _masks() -> list[str]:
    argv: list[str] = []
    for pattern in ETC_SECRET_PATTERNS:
        for found in sorted(glob.glob(pattern)):
            if os.path.islink(found):
                continue  # a link into /etc points at a file shown or masked on its own
            argv += ["--tmpfs", found] if os.path.isdir(found) else ["--ro-bind", "/dev/null", found]
    return argv


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _private_home_fits(home: str, workspace: Path) -> bool:
    """An empty home can go at `home` without hiding the system or part of the workspace."""

    if not os.path.isabs(home) or home in ("/", "/tmp", "/run", "/var", "/dev", "/proc"):
        return False
    if any(_within(home, folder) for folder in SYSTEM_DIRS):
        return False
    return home == str(workspace) or not _within(home, str(workspace))


def sandbox_argv(
    bwrap: str,
    *,
    shell: str,
    command: str,
    cwd: Path,
    workspace: Path,
    network: str,
    home: str | None = None,
    read_only: tuple[str, ...] = (),
    info_fd: int | None = None,
    block_fd: int | None = None,
) -> list[str]:
    """bwrap's command line for one shell command. Deny by default: only the system folders
    (read-only), the workspace (read-write, its VCS control files read-only) and private empty
    `/tmp`, `/var/tmp`, `/run` and home exist inside. The network namespace is always new (so no
    host abstract socket is reachable) unless `network` is "host" (no pasta here); with "pasta" the
    caller attaches pasta to it (`info_fd` tells the child's pid, `block_fd` holds the command until
    the network is up); with "none" it stays cut off (loopback only). Order matters:
    the workspace is bound after the tmpfs mounts, so a workspace under /tmp or home stays visible."""

    argv = [bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session"]
    if network != "host":
        argv.append("--unshare-net")
    for folder in SYSTEM_DIRS:
        if os.path.islink(folder):
            argv += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            argv += ["--ro-bind", folder, folder]
    for folder in SYSTEM_EXTRA:
        argv += ["--ro-bind-try", folder, folder]
    argv += _masks()
    argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--tmpfs", "/run",
             "--symlink", "../run", "/var/run"]
    if home and _private_home_fits(os.path.normpath(home), workspace):
        argv += ["--tmpfs", os.path.normpath(home)]
    for extra in read_only:  # shellReadOnlyPaths: the user's own choice (a toolchain in their home)
        if os.path.isabs(extra):
            argv += ["--ro-bind-try", os.path.normpath(extra), os.path.normpath(extra)]
    ws = str(workspace)
    argv += ["--bind", ws, ws]
    protected = [*vcs_control_paths(workspace), *runs_code_paths(workspace)]
    tops = sorted({workspace / p.relative_to(workspace).parts[0] for p in protected if len(p.relative_to(workspace).parts) > 1})
    for top in [workspace / ".git", *tops]:
        if top.is_dir() and not top.is_symlink():
            argv += ["--bind", str(top), str(top)]  # a mount point: cannot be renamed away to get around the rest
    for path in protected:
        argv += ["--ro-bind", str(path), str(path)]
    argv += ["--chdir", str(cwd)]
    if info_fd is not None:
        argv += ["--info-fd", str(info_fd)]
    if block_fd is not None:
        argv += ["--block-fd", str(block_fd)]
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

    return children_of(os.getpid())


def children_of(pid: int) -> set[int]:
    """A process's direct children right now (/proc/<pid>/task/*/children)."""

    children: set[int] = set()
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/children") as handle:
                    children.update(int(child) for child in handle.read().split())
            except (OSError, ValueError):
                continue
    except OSError:
        pass
    return children


def reap_sandbox_inits() -> int:
    """Reap the sandboxes' init processes that bwrap leaves to this process; how many.

    With a pid namespace, bwrap's outer process exits as soon as the sandbox's init reports
    the command's status, before it reaps that init, which is then reparented to the server
    (a child subreaper, `harden_process`) and stays a zombie until the server reaps it. Only
    zombies of a nested pid namespace (`NSpid` with two numbers) are reaped: never a process
    the server started itself, whose exit status belongs to asyncio or subprocess.
    """

    reaped = 0
    for pid in adopted_children():
        try:
            with open(f"/proc/{pid}/status") as handle:
                fields = dict(line.split(":", 1) for line in handle.read().splitlines() if ":" in line)
        except OSError:
            continue
        if not fields.get("State", "").strip().startswith("Z") or len(fields.get("NSpid", "").split()) < 2:
            continue
        try:
            os.waitpid(pid, os.WNOHANG)
            reaped += 1
        except ChildProcessError:
            pass
    return reaped


def has_marker(pid: int, marker: bytes) -> bool:
    """The process's environment holds `marker` (it was started by a given tool call)."""

    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return marker in handle.read().split(b"\0")
    except OSError:
        return False
