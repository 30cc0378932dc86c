"""The real server over stdio, driven by a pygls client that timestamps what arrives.

`BenchServer.start()` spawns `python -m tunacode_lsp` with its own TUNACODE_HOME and
initializes it (as the LSP tests do, with pytest-lsp's client and VS Code's capabilities).
Every `tunacode/event` is recorded with `time.perf_counter()` at arrival, as its message is
decoded (`record_events_on_arrival`), so a timestamp is not delayed by the client's event loop
scheduling a task, and the bench's own client, on the same cores as the server, does not pay
pygls's dispatch of a notification (a uuid4, a Future, runtime protocol checks) for each event.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.client import JsonRPCClient
from pygls.protocol import default_converter
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from tunacode_lsp.cli.lsp_client import keep_raw_params

EVENT = "tunacode/event"
WAIT = 30.0  # seconds: a generous bound on anything the bench waits for

EventPredicate = Callable[[dict[str, Any]], bool]


@dataclass
class Arrival:
    event: dict[str, Any]
    at: float  # perf_counter seconds


class EventLog:
    """Events in arrival order, and futures for the first event that matches a predicate."""

    def __init__(self) -> None:
        self.arrivals: list[Arrival] = []
        self._waiters: list[tuple[EventPredicate, asyncio.Future[Arrival]]] = []

    def record(self, event: dict[str, Any]) -> None:
        arrival = Arrival(event, time.perf_counter())
        self.arrivals.append(arrival)
        still: list[tuple[EventPredicate, asyncio.Future[Arrival]]] = []
        for predicate, future in self._waiters:
            if future.done():
                continue
            if predicate(event):
                future.set_result(arrival)
            else:
                still.append((predicate, future))
        self._waiters = still

    def expect(self, predicate: EventPredicate) -> asyncio.Future[Arrival]:
        """A future for the first matching event, past or to come."""
        future: asyncio.Future[Arrival] = asyncio.get_running_loop().create_future()
        for arrival in self.arrivals:
            if predicate(arrival.event):
                future.set_result(arrival)
                return future
        self._waiters.append((predicate, future))
        return future

    def clear(self) -> None:
        self.arrivals.clear()


def event_is(type_: str, **fields: Any) -> EventPredicate:
    return lambda e: e.get("type") == type_ and all(e.get(k) == v for k, v in fields.items())


def server_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("TUNACODE_")}
    env.update({"TUNACODE_HOME": str(home), "PYTHONUNBUFFERED": "1"})
    return env


def make_client(events: EventLog) -> LanguageClient:
    client = LanguageClient(converter_factory=default_converter)
    register_lsp_features(client, dict(DEFAULT_CLIENT_FEATURES))
    keep_raw_params(client)

    @client.feature(EVENT)
    def on_event(params: Any) -> None:  # synchronous: timestamped on arrival
        events.record(params)

    record_events_on_arrival(client, events)
    return client


_RECORDED = object()  # stands in for a `tunacode/event` already recorded


def record_events_on_arrival(client: LanguageClient, events: EventLog) -> None:
    """Each `tunacode/event` recorded as its message is decoded (pygls decodes a message with
    `structure_message` as json's object_hook, so the whole message is the last dict it is
    given), and not dispatched further: pygls would give each notification a uuid4, a Future
    and a handler call, and check it against three runtime protocols first (a bench-client
    cost, not the server's: ~40% of this client's CPU a request in the 20-turn session).
    Every other message goes through pygls as before."""

    protocol = client.protocol
    structure, handle = protocol.structure_message, protocol.handle_message

    def structure_message(data: dict[str, Any]) -> Any:
        if "jsonrpc" in data and data.get("method") == EVENT and "id" not in data:
            events.record(data.get("params"))
            return _RECORDED
        return structure(data)

    def handle_message(message: Any) -> Any:
        return None if message is _RECORDED else handle(message)

    protocol.structure_message = structure_message  # type: ignore[method-assign]
    protocol.handle_message = handle_message  # type: ignore[method-assign]


def scripted_options(chat_url: str, **extra: Any) -> dict[str, Any]:
    options: dict[str, Any] = {"model": "openai-compatible:scripted", "baseUrl": chat_url, "approval": "auto"}
    options.update(extra)
    return options


class BenchServer:
    """One server process and its client."""

    def __init__(self, workspace: Path, home: Path) -> None:
        self.workspace = workspace
        self.home = home
        self.events = EventLog()
        self.client: LanguageClient | None = None
        self.spawned_at = 0.0
        self.initialized_at = 0.0

    async def start(
        self, init_options: dict[str, Any] | None = None, *, command: list[str] | None = None,
        env: dict[str, str] | None = None, renders_events: bool = False,
    ) -> BenchServer:
        """Spawn the server (or `command`, another stdio LSP server) and initialize it; `env`
        adds to the server's environment (a provider's key and base URL). `renders_events`
        declares `capabilities.experimental.tunacode` (no optional feature), as the VS Code
        extension and the Neovim plugin do: the server then knows the client shows the
        request's events and does not also send it each answer as a log and a shown message."""
        command = command or [sys.executable, "-m", "tunacode_lsp"]
        client = make_client(self.events)
        self.spawned_at = time.perf_counter()
        # pygls's own start_io: pytest-lsp's would copy the server's log lines onto our stderr
        await JsonRPCClient.start_io(client, *command, env={**server_env(self.home), **(env or {})})
        self.client = client
        assert client._server is not None and client._server.stderr is not None
        self._stderr_drain = asyncio.ensure_future(_drain(client._server.stderr, self.home / "server-stderr.log"))
        capabilities = client_capabilities("visual-studio-code")
        if renders_events:
            capabilities.experimental = {**(capabilities.experimental or {}), "tunacode": {}}
        await client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities,
                root_uri=self.workspace.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=self.workspace.as_uri(), name="ws")],
                initialization_options=init_options,
            )
        )
        self.initialized_at = time.perf_counter()
        return self

    @property
    def pid(self) -> int:
        assert self.client is not None and self.client._server is not None
        return self.client._server.pid

    def rss_mb(self) -> float:
        return rss_mb(self.pid)

    def send(self, name: str, args: dict[str, Any] | None = None) -> Sent:
        """Send a command now, without waiting for its answer."""
        assert self.client is not None
        sent_at = time.perf_counter()
        future = self.client.protocol.send_request_async(
            types.WORKSPACE_EXECUTE_COMMAND, types.ExecuteCommandParams(command=name, arguments=[args or {}])
        )
        return Sent(asyncio.ensure_future(future), sent_at)

    async def command(self, name: str, args: dict[str, Any] | None = None) -> Any:
        return await self.send(name, args).answer()

    async def stop(self) -> None:
        client, self.client = self.client, None
        if client is None:
            return
        try:
            await asyncio.wait_for(client.shutdown_session(), WAIT)
        except Exception:  # a server that does not shut down cleanly is stopped anyway
            if client._server is not None and client._server.returncode is None:
                client._server.kill()
        await client.stop()
        await self._stderr_drain


class Sent:
    """A command on its way: `sent_at`, and `answered_at` stamped when the answer arrives."""

    def __init__(self, future: asyncio.Future[Any], sent_at: float) -> None:
        self.sent_at = sent_at
        self.answered_at = 0.0
        self.future = future
        future.add_done_callback(self._stamp)

    def _stamp(self, _future: asyncio.Future[Any]) -> None:
        self.answered_at = time.perf_counter()

    async def answer(self, timeout: float = WAIT) -> Any:
        return await asyncio.wait_for(asyncio.shield(self.future), timeout)

    @property
    def latency(self) -> float:
        """Seconds from sending to the answer."""
        return self.answered_at - self.sent_at


async def _drain(stream: asyncio.StreamReader, path: Path) -> None:
    """Keep the server's stderr pipe empty (a full pipe would block its logging) into a file."""
    with path.open("ab") as out:
        while chunk := await stream.read(65536):
            out.write(chunk)


def rss_mb(pid: int) -> float:
    """Resident set size of a process, from /proc (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no VmRSS for pid {pid}")
