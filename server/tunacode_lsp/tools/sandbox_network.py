"""The shell sandbox's network: pasta (Debian package passt), a user-mode network stack attached
from outside to the sandbox's own network namespace before the command starts, its port
forwarding and gateway mapping off so the host's loopback services are not reachable."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import tempfile

PASTA_SECONDS = 5.0
# pasta's defaults forward every port bound on the host's loopback into the namespace and map the
# gateway address to the host's loopback: both would reach the host's local services. Off.
PASTA_CLOSED = ["-t", "none", "-u", "none", "-T", "none", "-U", "none", "--no-map-gw"]


def pasta_path() -> str | None:
    return shutil.which("pasta")


def network_mode(sandboxed: bool, network: bool) -> str:
    """How a command reaches the network: "pasta" (sandboxed, its own namespace through pasta),
    "none" (shellNetwork false: loopback only), "host" (unsandboxed, or sandboxed without pasta
    installed: the host's network namespace, its abstract sockets and loopback services included)."""

    if not sandboxed:
        return "host"
    if not network:
        return "none"
    return "pasta" if pasta_path() else "host"


def _loopback_resolver() -> bool:
    """The host resolves names through a resolver on its loopback (systemd-resolved's 127.0.0.53)."""

    try:
        with open("/etc/resolv.conf") as handle:
            lines = handle.read(65536).splitlines()
    except OSError:
        return False
    return any(line.split()[1:2] and (line.split()[1].startswith("127.") or line.split()[1] == "::1")
               for line in lines if line.startswith("nameserver"))


def pasta_argv(pasta: str, netns_fd: int, pidfile: str, userns_fd: int | None = None) -> list[str]:
    """pasta's command line: join the sandbox's network namespace (given as an open descriptor,
    since pasta, having dropped its capabilities, may not open another process's /proc/<pid>/ns);
    with `userns_fd` it joins the user namespace bwrap made first (unprivileged bwrap), as entering
    a network namespace needs CAP_SYS_ADMIN over its owner."""

    argv = [pasta, "--config-net", "--quiet", "--pid", pidfile, *PASTA_CLOSED]
    if _loopback_resolver():
        argv[argv.index("-U") + 1] = "53"  # DNS (only) to the host's loopback resolver
    if os.geteuid() == 0:
        argv += ["--runas", "0"]  # pasta would otherwise switch to `nobody` and fail here
    owner = ["--userns", f"/proc/self/fd/{userns_fd}"] if userns_fd is not None else ["--netns-only"]
    return [*argv, *owner, "--netns", f"/proc/self/fd/{netns_fd}"]


def _child_userns(child: int) -> int | None:
    """The user namespace bwrap made for its child, opened, or None when it is our own (bwrap run
    as root or setuid makes none)."""

    try:
        if os.stat(f"/proc/{child}/ns/user").st_ino == os.stat("/proc/self/ns/user").st_ino:
            return None
        return os.open(f"/proc/{child}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


async def _read_child_pid(info_fd: int) -> int:
    """bwrap's --info-fd JSON, read until the child's pid (EOF when bwrap died first)."""

    def read() -> bytes:
        data = b""
        while b"}" not in data:
            chunk = os.read(info_fd, 4096)
            if not chunk:
                break
            data += chunk
        return data

    data = await asyncio.to_thread(read)
    try:
        return int(json.loads(data)["child-pid"])
    except (ValueError, KeyError, TypeError):
        raise OSError(f"bwrap did not report its child ({data[:200]!r})") from None


async def start_network(info_fd: int, env: dict[str, str]) -> int:
    """Attach pasta (a user-mode network stack) to the sandbox's new network namespace; returns
    pasta's pid (it runs in the background until `stop_network`). Raises OSError when it cannot."""

    pasta = pasta_path()
    if pasta is None:
        raise OSError("pasta (Debian package passt) is not installed")
    child = await asyncio.wait_for(_read_child_pid(info_fd), PASTA_SECONDS)
    netns = os.open(f"/proc/{child}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    userns = _child_userns(child)
    fds = (netns,) if userns is None else (netns, userns)
    with tempfile.TemporaryDirectory(prefix="tunacode-pasta-") as folder:
        pidfile = os.path.join(folder, "pid")
        try:
            proc = await asyncio.create_subprocess_exec(
                *pasta_argv(pasta, netns, pidfile, userns), pass_fds=fds, env=env,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        finally:
            for fd in fds:
                os.close(fd)
        try:
            _, err = await asyncio.wait_for(proc.communicate(), PASTA_SECONDS)
        except TimeoutError:
            proc.kill()
            stop_network(_pid_in(pidfile))
            raise OSError(f"pasta did not start within {PASTA_SECONDS:g} s") from None
        pid = _pid_in(pidfile)
    if proc.returncode != 0 or pid <= 0:
        lines = [line for line in err.decode(errors="replace").splitlines() if not line.startswith("Failed to send")]
        raise OSError(f"pasta failed (exit {proc.returncode}): {' '.join(lines)[:300]}")
    return pid


def _pid_in(pidfile: str) -> int:
    try:
        with open(pidfile) as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return 0


def stop_network(pid: int) -> None:
    """End a pasta started by `start_network` (the caller reaps it: it was adopted by this subreaper)."""

    if pid <= 0:
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return
