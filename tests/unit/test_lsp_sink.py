"""The LSP sink (lsp/sink.py) in process, with a fake language server that records what
would go on the wire and lets the test answer (or never answer) server->client requests."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from typing import Any

from lsprotocol import types

from tunacode_lsp.agent.ports import ApprovalRequest
from tunacode_lsp.contract.protocol import RequestEnd, RequestStart, TextDelta, Usage
from tunacode_lsp.lsp import sink as sink_module
from tunacode_lsp.lsp.sink import LspSink, decision_of


class FakeProtocol:
    def __init__(self) -> None:
        self.notified: list[tuple[str, Any]] = []
        self.sent: list[tuple[str, str, Any]] = []  # (id, method, params)
        self._request_futures: dict[str, concurrent.futures.Future] = {}
        self._result_types: dict[str, Any] = {}
        self.requested = asyncio.Event()  # set when the sink has sent a request
        self.noticed = asyncio.Event()  # set when the sink has sent a notification

    def notify(self, method: str, params: Any = None) -> None:
        self.notified.append((method, params))
        self.noticed.set()

    def _send_data(self, data: Any) -> None:  # a raw JSON-RPC object (lsp/pygls_compat.send_payload)
        self.notified.append((data["method"], data["params"]))
        self.noticed.set()

    async def wait_for_notification(self, notification: tuple[str, Any], timeout: float = 2) -> None:
        async with asyncio.timeout(timeout):
            while notification not in self.notified:
                self.noticed.clear()
                await self.noticed.wait()

    def send_request(self, method: str, params: Any = None, msg_id: Any = None) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._request_futures[msg_id] = future
        self._result_types[msg_id] = object
        self.sent.append((msg_id, method, params))
        self.requested.set()
        return future

    def answer(self, method: str, value: Any) -> None:
        msg_id = next(i for i, m, _ in self.sent if m == method)
        self._request_futures.pop(msg_id).set_result(value)


class FakeProgress:
    def __init__(self, protocol: FakeProtocol) -> None:
        self.tokens: dict[Any, Any] = {}
        self._protocol = protocol

    def _register_token(self, token: Any) -> None:  # lsp/pygls_compat.register_progress_token
        self.tokens[token] = None

    def begin(self, token: Any, value: Any) -> None:
        self._protocol.notify("$/progress", ("begin", token))

    def report(self, token: Any, value: Any) -> None:
        self._protocol.notify("$/progress", ("report", token))

    def end(self, token: Any, value: Any) -> None:
        self._protocol.notify("$/progress", ("end", token))


class FakeServer:
    def __init__(self, progress: bool = True) -> None:
        self.protocol = FakeProtocol()
        self.work_done_progress = FakeProgress(self.protocol)
        self.client_capabilities = types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=progress))


def _sink(ls: FakeServer, token: Any = None) -> LspSink:
    return LspSink(ls, session_id="s1", request_id="r1", prompt="hi", client_token=token)  # type: ignore[arg-type]


def _approval() -> ApprovalRequest:
    return ApprovalRequest("call1", "bash", "touch x", {"command": "touch x"})


def test_decision_of_only_accepts_an_offered_title():
    assert decision_of({"title": "Allow"}) == "allow"
    assert decision_of({"title": "Allow for this session"}) == "allow_session"
    for raw in ["Allow", None, {}, {"title": 5}, {"title": "allow"}, ["Allow"]]:
        assert decision_of(raw) == "deny", raw


async def test_a_bare_string_answer_is_a_denial_at_once():
    ls = FakeServer()
    sink = _sink(ls)
    ask = asyncio.ensure_future(sink.ask_approval(_approval()))
    await asyncio.wait_for(ls.protocol.requested.wait(), 2)
    ls.protocol.answer(types.WINDOW_SHOW_MESSAGE_REQUEST, "Allow")
    assert await asyncio.wait_for(ask, 2) == "deny"


async def test_a_cancelled_approval_is_withdrawn():
    ls = FakeServer()
    sink = _sink(ls)
    ask = asyncio.ensure_future(sink.ask_approval(_approval()))
    await asyncio.wait_for(ls.protocol.requested.wait(), 2)
    prompt_id = next(i for i, m, _ in ls.protocol.sent if m == types.WINDOW_SHOW_MESSAGE_REQUEST)
    ask.cancel()
    await asyncio.gather(ask, return_exceptions=True)
    cancels = [p for m, p in ls.protocol.notified if m == "$/cancelRequest"]
    assert [c.id for c in cancels] == [prompt_id]
    assert prompt_id not in ls.protocol._request_futures  # a late answer finds nothing to resolve


async def test_close_is_bounded_when_the_client_never_answers_progress_create(monkeypatch):
    monkeypatch.setattr(sink_module, "CLIENT_WAIT_SECONDS", 0.1)
    ls = FakeServer()
    sink = _sink(ls)
    sink.emit(RequestStart("hi", "m"))
    sink.emit(RequestEnd("end_turn", Usage()))
    started = time.monotonic()
    await asyncio.wait_for(sink.close(), 3)
    assert time.monotonic() - started < 2
    create_id = next(i for i, m, _ in ls.protocol.sent if m == types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    assert create_id in [p.id for m, p in ls.protocol.notified if m == "$/cancelRequest"]


async def test_deltas_merge_and_keep_their_order():
    ls = FakeServer(progress=False)
    sink = _sink(ls)
    for word in ["a", "b", "c"]:
        sink.emit(TextDelta(word))
    sink.emit(RequestEnd("end_turn", Usage()))
    await sink.close()
    events = [p for m, p in ls.protocol.notified if m == "tunacode/event"]
    assert [e["type"] for e in events] == ["text_delta", "request_end"]
    assert events[0]["text"] == "abc" and [e["seq"] for e in events] == [1, 2]


async def test_a_short_tool_call_gets_no_progress_token_of_its_own():
    """issue 35: every tool call's create, its answer, begin and end were a third of a
    request's messages, for calls that mostly take a few milliseconds."""

    from tunacode_lsp.contract.protocol import ToolCallEvent, ToolCallUpdate

    ls = FakeServer()
    sink = _sink(ls)
    sink.emit(RequestStart("hi", "m"))
    await asyncio.wait_for(ls.protocol.requested.wait(), 2)
    ls.protocol.answer(types.WINDOW_WORK_DONE_PROGRESS_CREATE, None)  # the request's own token
    sink.emit(ToolCallEvent("call1", "read_file", {"filepath": "a.txt"}, summary="a.txt"))
    sink.emit(ToolCallUpdate("call1", "read_file", "in_progress"))
    sink.emit(ToolCallUpdate("call1", "read_file", "completed", result="x", duration_ms=1))
    await asyncio.sleep(sink_module.TOOL_PROGRESS_AFTER * 2)  # past the timer's deadline: a claim that nothing comes
    sink.emit(RequestEnd("end_turn", Usage()))
    await asyncio.wait_for(sink.close(), 3)
    creates = [p.token for _, m, p in ls.protocol.sent if m == types.WINDOW_WORK_DONE_PROGRESS_CREATE]
    assert creates == ["tunacode/r1"]
    reports = [p for m, p in ls.protocol.notified if m == "$/progress"]
    assert {token for _, token in reports} == {"tunacode/r1"}


async def test_a_tool_call_still_running_gets_its_own_token_begun_and_ended(monkeypatch):
    from tunacode_lsp.contract.protocol import ToolCallEvent, ToolCallUpdate

    monkeypatch.setattr(sink_module, "TOOL_PROGRESS_AFTER", 0.02)
    ls = FakeServer()
    sink = _sink(ls)
    sink.emit(RequestStart("hi", "m"))
    await asyncio.wait_for(ls.protocol.requested.wait(), 2)
    ls.protocol.answer(types.WINDOW_WORK_DONE_PROGRESS_CREATE, None)
    ls.protocol.requested.clear()
    sink.emit(ToolCallEvent("call1", "bash", {"command": "sleep 1"}, summary="sleep 1"))
    sink.emit(ToolCallUpdate("call1", "bash", "in_progress"))
    await asyncio.wait_for(ls.protocol.requested.wait(), 2)  # the tool's create, once it ran a while
    tool_create = ls.protocol.sent[-1]
    assert tool_create[1] == types.WINDOW_WORK_DONE_PROGRESS_CREATE and tool_create[2].token == "tunacode/r1/call1"
    ls.protocol._request_futures.pop(tool_create[0]).set_result(None)
    await ls.protocol.wait_for_notification(("$/progress", ("begin", "tunacode/r1/call1")))  # begun once answered
    sink.emit(ToolCallUpdate("call1", "bash", "completed", result="x", duration_ms=30))
    sink.emit(RequestEnd("end_turn", Usage()))
    await asyncio.wait_for(sink.close(), 3)
    tool = [kind for m, (kind, token) in ((m, p) for m, p in ls.protocol.notified if m == "$/progress")
            if token == "tunacode/r1/call1"]
    assert tool == ["begin", "end"]
