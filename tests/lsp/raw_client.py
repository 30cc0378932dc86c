"""A raw stdio client for the real server: exact bytes in, framed messages out (for the
lifecycle and framing rules pytest-lsp's client keeps us from breaking on purpose)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any


class RawServer:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.messages: list[dict[str, Any]] = []

    @classmethod
    async def start(cls, home: Path, cwd: Path) -> RawServer:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("TUNACODE_")}
        env.update({"TUNACODE_HOME": str(home), "PYTHONUNBUFFERED": "1"})
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tunacode_lsp", cwd=cwd, env=env,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        )
        return cls(proc)

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def request(self, msg_id: Any, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def read(self, timeout: float = 10.0) -> dict[str, Any]:
        assert self.proc.stdout is not None
        length = None
        while True:
            line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
            if not line:
                raise EOFError("the server closed stdout")
            line = line.strip()
            if not line:
                break
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        assert length is not None
        body = await asyncio.wait_for(self.proc.stdout.readexactly(length), timeout)
        message = json.loads(body)
        self.messages.append(message)
        return message

    async def answer_to(self, msg_id: Any, timeout: float = 10.0) -> dict[str, Any]:
        """Read until the response to `msg_id` (answering server requests with null)."""

        while True:
            message = await self.read(timeout)
            if message.get("id") == msg_id and "method" not in message:
                return message
            if "method" in message and "id" in message:  # a server->client request
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})

    async def initialize(self, workspace: Path, options: dict[str, Any] | None = None) -> dict[str, Any]:
        self.request(1, "initialize", {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {},
                                       "initializationOptions": options or {}})
        answer = await self.answer_to(1)
        self.notify("initialized", {})
        return answer

    async def close(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
