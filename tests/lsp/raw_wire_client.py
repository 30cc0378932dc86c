"""A raw-bytes stdio client: spawn `python -m tunacode_lsp`, write any bytes to its stdin,
read the JSON-RPC messages it writes to stdout. For what pytest-lsp cannot send (broken
framing, malformed JSON-RPC) or answer (never, or wrongly)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

WAIT = 15.0


def frame(payload: Any) -> bytes:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


class RawClient:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.messages: list[dict[str, Any]] = []
        self._changed = asyncio.Condition()
        self._reader = asyncio.ensure_future(self._read())
        self._next_id = 0
        # answer server->client requests by method: fn(params) -> result, or None to stay silent
        self.answers: dict[str, Callable[[Any], Any]] = {}

    @classmethod
    async def start(cls, home: Path, workspace: Path, env: dict[str, str] | None = None) -> RawClient:
        server_env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("TUNACODE_")}
        server_env.update({"TUNACODE_HOME": str(home), "PYTHONUNBUFFERED": "1",
                           "XDG_CONFIG_HOME": str(home / "config")}, **(env or {}))  # never the developer's own settings files
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tunacode_lsp", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=server_env, cwd=str(workspace),
        )
        return cls(process)

    async def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        while True:
            length = None
            while True:
                line = await stdout.readline()
                if not line:
                    return
                if not line.strip():
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            assert length is not None
            message = json.loads(await stdout.readexactly(length))
            async with self._changed:
                self.messages.append(message)
                self._changed.notify_all()
            if "method" in message and "id" in message and message["method"] in self.answers:
                result = self.answers[message["method"]](message.get("params"))
                if result is not NO_ANSWER:
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)

    def send(self, payload: Any) -> None:
        self.write(frame(payload))

    def request(self, method: str, params: Any = None) -> int:
        self._next_id += 1
        self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return self._next_id

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = WAIT) -> dict[str, Any]:
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: any(predicate(m) for m in self.messages)), timeout)
        return next(m for m in self.messages if predicate(m))

    async def response(self, msg_id: Any, timeout: float = WAIT) -> dict[str, Any]:
        return await self.wait_for(lambda m: m.get("id") == msg_id and "method" not in m, timeout)

    async def call(self, method: str, params: Any = None, timeout: float = WAIT) -> dict[str, Any]:
        return await self.response(self.request(method, params), timeout)

    async def initialize(self, workspace: Path, init_options: Any = None, capabilities: Any = None) -> dict[str, Any]:
        answer = await self.call("initialize", {
            # by default a client that can show questions (it answers window/showMessageRequest)
            "processId": None, "rootUri": workspace.as_uri(), "capabilities": capabilities or {"window": {"showMessage": {}}},
            "initializationOptions": init_options,
        })
        self.notify("initialized", {})
        return answer

    async def command(self, name: str, args: Any = None, timeout: float = WAIT) -> dict[str, Any]:
        return await self.call("workspace/executeCommand", {"command": name, "arguments": [args or {}]}, timeout)

    async def exit_code(self, timeout: float = WAIT) -> int:
        return await asyncio.wait_for(self.process.wait(), timeout)

    async def stderr(self) -> str:
        assert self.process.stderr is not None
        return (await self.process.stderr.read()).decode(errors="replace")

    async def close(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        self._reader.cancel()


NO_ANSWER = object()
