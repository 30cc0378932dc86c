"""The runs service (agent/runs.py) in process, with simple fakes for its collaborators
(the session service, the sink) and the real scripted model on loopback."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from tunacode_lsp.agent import runs as runs_module
from tunacode_lsp.agent.config import ServerOptions
from tunacode_lsp.agent.runs import RequestService
from tunacode_lsp.contract.errors import CommandError
from tunacode_lsp.contract.protocol import RequestEnd, RequestParams, SessionInfo, Usage


class FakeSessions:
    """An in-memory session service: records, messages, leases."""

    def __init__(self) -> None:
        self.messages: dict[str, list[dict[str, Any]]] = {}
        self.leases: dict[str, str] = {}
        self.records: dict[str, SessionInfo] = {}

    def _record(self, session_id: str) -> SessionInfo:
        return SessionInfo(session_id=session_id, title="", cwd="/", project_id="p", model="",
                             created_at="2026-01-01T00:00:00.000Z", modified_at="2026-01-01T00:00:00.000Z", message_count=0,
                           usage=Usage(), busy=False)

    async def get(self, session_id: str) -> SessionInfo | None:
        return self.records.get(session_id)

    async def create(self, *, cwd: str, model: str, title: str = "") -> SessionInfo:
        sid = f"s{len(self.records) + 1}"
        self.records[sid] = self._record(sid)
        self.messages[sid] = []
        return self.records[sid]

    async def acquire(self, session_id: str, owner: str) -> bool:
        if self.leases.get(session_id, owner) != owner:
            return False
        self.leases[session_id] = owner
        return True

    async def release(self, session_id: str, owner: str) -> None:
        if self.leases.get(session_id) == owner:
            del self.leases[session_id]

    async def history(self, session_id: str) -> list[dict[str, Any]]:
        return list(self.messages[session_id])

    async def append(self, session_id: str, message: dict[str, Any], **_: Any) -> int:
        self.messages[session_id].append(message)
        return len(self.messages[session_id])


class FakeSink:
    def __init__(self, close_forever: bool = False) -> None:
        self.events: list[Any] = []
        self.close_forever = close_forever
        self.closed = False

    def emit(self, event: Any) -> None:
        self.events.append(event)

    async def ask_approval(self, request: Any) -> str:
        return "deny"

    async def close(self) -> None:
        if self.close_forever:
            await asyncio.Event().wait()  # a client that never answers
        self.closed = True


def _service(model_url: str | None, sessions: FakeSessions, tmp_path: Path) -> RequestService:
    options = ServerOptions(model="openai-compatible:scripted", base_url=model_url, approval="auto")
    return RequestService(lambda: sessions, lambda: options, lambda: tmp_path)  # type: ignore[arg-type, return-value]


async def test_begin_reserves_the_session_synchronously(tmp_path):
    sessions = FakeSessions()
    service = _service(None, sessions, tmp_path)
    first = service.begin(RequestParams(prompt="a", session_id="s1"))
    with pytest.raises(CommandError) as info:
        service.begin(RequestParams(prompt="b", session_id="s1"))
    assert info.value.code == -32002
    assert service.is_busy("s1")
    service.end(first)
    assert not service.is_busy("s1")
    service.begin(RequestParams(prompt="c", session_id="s1"))  # free again


async def test_an_abort_before_the_run_exists_means_no_model_call(serve, tmp_path):
    model = serve({"turns": [{"steps": [{"text": "never"}]}]})
    sessions = FakeSessions()
    service = _service(model.chat_url, sessions, tmp_path)
    params = RequestParams(prompt="hi")
    pending = service.begin(params)
    assert service.abort_all() == 1
    sink = FakeSink()
    result = await service.run(pending, params, lambda *_: sink)
    service.end(pending)
    assert result.stop_reason == "cancelled"
    assert model.requests == []
    assert isinstance(sink.events[-1], RequestEnd)
    assert sessions.leases == {}


async def test_a_sink_that_never_closes_does_not_hold_the_answer_or_the_lease(serve, tmp_path, monkeypatch):
    monkeypatch.setattr(runs_module, "SINK_CLOSE_SECONDS", 0.2)
    model = serve({"turns": [{"steps": [{"text": "Done."}]}]})
    sessions = FakeSessions()
    service = _service(model.chat_url, sessions, tmp_path)
    params = RequestParams(prompt="hi")
    pending = service.begin(params)
    started = time.monotonic()
    result = await asyncio.wait_for(service.run(pending, params, lambda *_: FakeSink(close_forever=True)), 10)
    assert result.stop_reason == "end_turn"
    assert time.monotonic() - started < 5
    assert sessions.leases == {}


async def test_settled_returns_when_the_last_request_ends(tmp_path):
    service = _service(None, FakeSessions(), tmp_path)
    pending = service.begin(RequestParams(prompt="a", session_id="s1"))
    assert await service.settled(0.05) is False
    asyncio.get_running_loop().call_soon(service.end, pending)  # runs once settled() is waiting
    assert await service.settled(5) is True


async def test_queue_order_bound_and_abort_routes() -> None:
    """queue: true: at most 16 wait on a session; abort by session stops only the running one
    and the next queued request gets the session; abort by id drops a queued one."""

    from tunacode_lsp.agent.runs import MAX_QUEUED

    service = RequestService(lambda: FakeSessions(), lambda: ServerOptions(), lambda: Path("/"))  # type: ignore[arg-type, return-value]
    running = service.begin(RequestParams(prompt="a", session_id="s"))
    queued = [service.begin(RequestParams(prompt=f"q{n}", session_id="s", queue=True)) for n in range(MAX_QUEUED)]
    with pytest.raises(CommandError) as full:
        service.begin(RequestParams(prompt="one too many", session_id="s", queue=True))
    assert full.value.code == -32002
    assert [service.queue_position(q) for q in queued[:3]] == [1, 2, 3]
    assert service.abort(session_id="s") == 1 and running.abort_reason == "cancelled"
    assert all(q.abort_reason is None for q in queued)
    assert service.abort(request_id=queued[0].request_id) == 1
    assert await service.wait_turn(queued[0]) is False
    assert service.steer("s", "late") is False  # the running request is stopping: no turn is left
    service.end(queued[0])
    service.end(running)  # the running one answered: the next queued request (not dropped) starts
    assert await asyncio.wait_for(service.wait_turn(queued[1]), 1) is True
    assert not queued[1].queued and service.queue_position(queued[2]) == 1
    assert service.steer("s", "now") is True and queued[1].steers == ["now"]  # kept until its run is built
    assert service.steer("t", "no request") is False
