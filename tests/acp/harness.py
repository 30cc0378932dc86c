"""Drive the real `tunacode-lsp acp` subprocess with the ACP SDK's own client side.

`RecordingClient` is the client: it records every `session/update`, answers
`session/request_permission` as the test says (or holds it unanswered), and sees every raw
message the agent sends (a connection observer). Tests wait for what they expect with
`wait_for(...)` (an asyncio.Condition, never a sleep).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, schema, spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent

from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

WAIT = 15.0  # seconds: generous, machines are shared


class RecordingClient:
    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []  # (session id, update)
        self.cond = asyncio.Condition()
        self.permission_answer: str | None = "allow"  # an option id; None answers "cancelled"
        self.permission_hold: asyncio.Event | None = None  # while set-and-unreleased, never answer
        self.permission_requests: list[schema.RequestPermissionRequest] = []
        self.updates_before_permission: list[int] = []  # how many updates had arrived when each was asked
        self.incoming: list[dict[str, Any]] = []  # every raw message from the agent
        self.buffers: dict[str, str] = {}  # the editor's unsaved buffers, by absolute path (fs/*)
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []  # fs/write_text_file calls: (path, content)

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **_: Any) -> schema.ReadTextFileResponse:
        self.reads.append(path)
        if path in self.buffers:
            return schema.ReadTextFileResponse(content=self.buffers[path])
        return schema.ReadTextFileResponse(content=Path(path).read_text())

    async def write_text_file(self, session_id: str, path: str, content: str, **_: Any) -> schema.WriteTextFileResponse:
        self.writes.append((path, content))
        self.buffers[path] = content  # the editor keeps it in the buffer, unsaved
        return schema.WriteTextFileResponse()

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        async with self.cond:
            self.updates.append((session_id, update))
            self.cond.notify_all()

    async def request_permission(
        self, session_id: str, tool_call: schema.ToolCallUpdate, options: list[schema.PermissionOption], **_: Any
    ) -> schema.RequestPermissionResponse:
        async with self.cond:
            self.updates_before_permission.append(len(self.updates))
            self.permission_requests.append(
                schema.RequestPermissionRequest(session_id=session_id, tool_call=tool_call, options=options)
            )
            self.cond.notify_all()
        if self.permission_hold is not None:
            await self.permission_hold.wait()
        if self.permission_answer is None:
            return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=self.permission_answer)
        )

    async def observe(self, event: StreamEvent) -> None:
        if event.direction is StreamDirection.INCOMING:
            async with self.cond:
                self.incoming.append(event.message)
                self.cond.notify_all()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = WAIT) -> None:
        async with self.cond:
            await asyncio.wait_for(self.cond.wait_for(predicate), timeout)

    def of_kind(self, kind: str, session_id: str | None = None) -> list[Any]:
        return [u for s, u in self.updates if u.session_update == kind and (session_id is None or s == session_id)]

    def text(self, kind: str = "agent_message_chunk", session_id: str | None = None) -> str:
        return "".join(u.content.text for u in self.of_kind(kind, session_id) if hasattr(u.content, "text"))


@dataclass
class Agent:
    conn: ClientSideConnection
    process: asyncio.subprocess.Process
    client: RecordingClient
    stderr_path: Path

    async def start_session(self, cwd: Path, *, fs: bool = False) -> str:
        capabilities = schema.ClientCapabilities(fs=schema.FileSystemCapabilities(read_text_file=fs, write_text_file=fs))
        init = await self.conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities)
        assert init.protocol_version == PROTOCOL_VERSION
        return (await self.conn.new_session(cwd=str(cwd))).session_id

    async def raw_request(self, method: str, params: Any) -> Any:
        """A request the SDK's typed client has no method for (unknown methods)."""

        return await self.conn._conn.send_request(method, params)

    def write_raw(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line)

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


def scripted_settings(model: ScriptedModelServer, **extra: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {"model": "openai-compatible:scripted", "baseUrl": model.chat_url, "approval": "auto"}
    settings.update(extra)
    return settings


def server_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("TUNACODE_")}
    env.update({"TUNACODE_HOME": str(home), "PYTHONUNBUFFERED": "1"})
    env["XDG_CONFIG_HOME"] = str(home / "config")  # never the developer's own settings and commands
    return env


@asynccontextmanager
async def acp_agent(
    workspace: Path, home: Path, settings: dict[str, Any], *args: str, client: RecordingClient | None = None
) -> AsyncIterator[Agent]:
    client = client or RecordingClient()
    stderr_path = home / f"acp-stderr-{len(list(home.glob('acp-stderr-*')))}.log"
    with open(stderr_path, "wb") as stderr:
        async with spawn_agent_process(
            client, sys.executable, "-m", "tunacode_lsp", "acp", "--settings", json.dumps(settings), *args,
            env=server_env(home), cwd=workspace, transport_kwargs={"stderr": stderr.fileno()},
            observers=[client.observe],
        ) as (conn, process):
            yield Agent(conn, process, client, stderr_path)
