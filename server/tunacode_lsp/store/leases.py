"""Busy leases: who may run a request on a session, across processes.

An owner is "<hostname>:<pid>:<uuid>". A lease whose owner is a process of this host that
no longer exists is stale and may be taken. A lease from another host cannot be checked
and counts as live.
"""

from __future__ import annotations

import os
import socket
import uuid


def new_owner() -> str:
    """An owner string for this process: one per server (or per request), unique."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"


def owner_is_alive(owner: str) -> bool:
    """False only when the owner is surely gone: a dead pid on this host, or a malformed owner."""
    host, pid = _parse(owner)
    if pid is None:
        return False
    if host != socket.gethostname():
        return True
    return pid_is_alive(pid)


def pid_is_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    except OSError:
        return False
    return True


def _parse(owner: str) -> tuple[str, int | None]:
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or not parts[0] or not parts[1].isdigit():
        return "", None
    return parts[0], int(parts[1])
