"""Background processes: `bash {background: true}` starts a command that outlives the call (a
dev server, a watcher), in the same sandbox and after the same approval as any command;
`process_output` reads what it printed since the last read, `process_kill` ends it.

One `BackgroundProcesses` per server (the agent layer holds it); each request's tools see
their session's processes only (`SessionProcesses`). Each process keeps the last
MAX_BUFFER_BYTES of its output; at most MAX_PER_SESSION run per session. They end on
`process_kill`, when their session is deleted (`kill_session`), and when the server exits
(the environment marker every command carries, tools/bash.py `_kill_leftovers`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tunacode_lsp.tools.errors import ToolError

MAX_BUFFER_BYTES = 1024 * 1024  # the newest output kept per process
MAX_PER_SESSION = 8  # running at once
MAX_PER_SERVER = 32  # running at once, all sessions together
KILL_WAIT_SECONDS = 3.0


class OutputRing:
    """The newest `limit` bytes of an output, addressed by absolute offsets."""

    def __init__(self, limit: int = MAX_BUFFER_BYTES) -> None:
        self.limit = limit
        self.data = bytearray()
        self.start = 0  # offset of data[0] in the whole output

    @property
    def end(self) -> int:
        return self.start + len(self.data)

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        extra = len(self.data) - self.limit
        if extra > 0:
            del self.data[:extra]
            self.start += extra

    def since(self, offset: int) -> tuple[bytes, int]:
        """The bytes from `offset` on, and how many before them were dropped already."""
        dropped = max(0, self.start - offset)
        return bytes(self.data[max(0, offset - self.start):]), dropped


@dataclass
class BackgroundProcess:
    process_id: str
    session_id: str
    command: str
    pid: int
    marker: str
    proc: asyncio.subprocess.Process
    started: float = field(default_factory=time.time)
    output: OutputRing = field(default_factory=OutputRing)
    read_to: int = 0  # what process_output has returned so far
    exit_code: int | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    on_exit: Callable[[], object] | None = None  # run once it has ended (off the event loop)

    @property
    def running(self) -> bool:
        return self.exit_code is None

    def describe(self) -> dict[str, Any]:
        return {
            "process_id": self.process_id, "session_id": self.session_id, "command": self.command[:200],
            "pid": self.pid, "running": self.running, "exit_code": self.exit_code,
        }


class BackgroundProcesses:
    def __init__(self) -> None:
        self.processes: dict[str, BackgroundProcess] = {}
        self._ids = itertools.count(1)

    def for_session(self, session_id: str) -> SessionProcesses:
        return SessionProcesses(self, session_id)

    def listing(self) -> list[dict[str, Any]]:
        return [p.describe() for p in self.processes.values()]

    async def start(
        self, session_id: str, argv: list[str], cwd: Path, env: dict[str, str], marker: str, command: str,
        on_exit: Callable[[], object] | None = None,
    ) -> BackgroundProcess:
        if sum(p.running for p in self.processes.values()) >= MAX_PER_SERVER:
            raise ToolError(
                f"{MAX_PER_SERVER} background processes already run in this server: end some with process_kill first."
            )
        running = [p for p in self.processes.values() if p.session_id == session_id and p.running]
        if len(running) >= MAX_PER_SESSION:
            raise ToolError(
                f"{len(running)} background processes already run in this session (at most {MAX_PER_SESSION}): "
                "end one with process_kill first."
            )
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT, start_new_session=True,
            )
        except OSError as exc:
            raise ToolError(f"Cannot start the shell: {exc}.") from None
        process = BackgroundProcess(f"p{next(self._ids)}", session_id, command, proc.pid, marker, proc, on_exit=on_exit)
        self.processes[process.process_id] = process
        process.tasks = [asyncio.create_task(_pump(process)), asyncio.create_task(_watch(process))]
        return process

    async def kill(self, process: BackgroundProcess) -> None:
        _kill(process)
        with contextlib.suppress(TimeoutError):  # its watcher records the end after the clean-up
            await asyncio.wait_for(asyncio.shield(process.tasks[1]), KILL_WAIT_SECONDS + 2.0)

    def kill_session(self, session_id: str) -> int:
        """End a deleted session's processes at once (SIGKILL) and forget them; their exit is
        reaped by their own watcher tasks. Returns how many were running."""
        mine = [p for p in self.processes.values() if p.session_id == session_id]
        running = [p for p in mine if p.running]
        for process in running:
            _kill(process)
        for process in mine:
            self.processes.pop(process.process_id, None)
        return len(running)


def _kill(process: BackgroundProcess) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    from tunacode_lsp.tools.bash import MARKER, kill_marked

    kill_marked(f"{MARKER}={process.marker}".encode())  # what left the group (setsid, nohup)


async def _pump(process: BackgroundProcess) -> None:
    stream = process.proc.stdout
    assert stream is not None
    while chunk := await stream.read(65536):
        process.output.add(chunk)
        process.changed.set()


async def _watch(process: BackgroundProcess) -> None:
    code = await process.proc.wait()
    with contextlib.suppress(TimeoutError):  # the last output, unless a child still holds the pipe
        await asyncio.wait_for(asyncio.shield(process.tasks[0]), 1.0)
    if process.on_exit is not None:
        _kill(process)  # nothing of its group may still write when the clean-up looks
        try:
            await asyncio.to_thread(process.on_exit)
        except Exception:  # noqa: BLE001 - a clean-up must not break the watcher
            logging.getLogger(__name__).exception("clean-up after background process %s failed", process.process_id)
    process.exit_code = code  # "exited" only once the clean-up is done
    process.changed.set()


@dataclass
class SessionProcesses:
    """The background processes of one session, as its tools see them."""

    registry: BackgroundProcesses
    session_id: str

    def get(self, process_id: str) -> BackgroundProcess:
        process = self.registry.processes.get(process_id)
        if process is None or process.session_id != self.session_id:
            known = [p.process_id for p in self.registry.processes.values() if p.session_id == self.session_id]
            raise ToolError(
                f"No background process '{process_id[:40]}' in this session"
                + (f" (there are: {', '.join(known)})." if known else " (none was started).")
            )
        return process

    async def start(
        self, argv: list[str], cwd: Path, env: dict[str, str], marker: str, command: str,
        on_exit: Callable[[], object] | None = None,
    ) -> BackgroundProcess:
        return await self.registry.start(self.session_id, argv, cwd, env, marker, command, on_exit)
