"""AgentRequest's exit paths (issue 12, bug 5), in process, with simple fakes for the sink and
the message log and the real scripted model on loopback: whatever ends the loop, the abort
signal is set (tinyagent's background work stops), a message counts as stored only once
its write succeeded, and request_end is the last event."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tunacode_lsp.agent.models import resolve_model
from tunacode_lsp.agent.ports import RequestSpec
from tunacode_lsp.agent.runner import AgentRequest
from tunacode_lsp.contract.protocol import RequestEnd


class FakeSink:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def emit(self, event: Any) -> None:
        self.events.append(event)

    async def ask_approval(self, request: Any) -> str:
        return "deny"


class FailingLog:
    """Fails every write after the first `ok` ones (a locked or full disk)."""

    def __init__(self, ok: int) -> None:
        self.ok = ok
        self.written: list[dict[str, Any]] = []

    async def append(self, message: dict[str, Any], *, usage: Any, thoughts: Any) -> None:
        if len(self.written) >= self.ok:
            raise OSError("database is locked")
        self.written.append(message)


def _spec(server: Any, tmp_path: Path, history: list[dict[str, Any]] | None = None) -> RequestSpec:
    model = resolve_model("openai-compatible:scripted", base_url=server.chat_url, env={})
    return RequestSpec(request_id="req_test", session_id="s1", prompt="hi", model=model, workspace_root=tmp_path,
                       history=history or [], approval="auto")


async def test_a_failed_write_ends_the_request_with_request_end_last_and_the_signal_set(serve, tmp_path):
    server = serve({"turns": [{"steps": [{"text": "Running."}, {"tool_call": {"name": "bash", "arguments": {"command": "echo hi"}}}]},
                              {"steps": [{"text": "Done."}]}]})
    sink, log = FakeSink(), FailingLog(ok=1)  # the prompt is stored, the assistant message is not
    run = AgentRequest(_spec(server, tmp_path), sink, log)
    result = await asyncio.wait_for(run.run(), 15)
    assert result.stop_reason == "error" and "locked" in (result.error.message if result.error else "")
    assert isinstance(sink.events[-1], RequestEnd)
    assert sum(isinstance(e, RequestEnd) for e in sink.events) == 1
    assert run.abort_signal.is_set(), "the loop's background work was not told to stop"
    assert run.state.stored == log.written  # only what was written counts as stored


async def test_a_loop_that_cannot_start_still_ends_with_request_end(serve, tmp_path):
    server = serve({"turns": [{"steps": [{"text": "Done."}]}]})
    sink = FakeSink()
    broken_history = [{"role": "wizard", "content": []}]  # load_message refuses it
    run = AgentRequest(_spec(server, tmp_path, broken_history), sink, FailingLog(ok=10))
    result = await asyncio.wait_for(run.run(), 15)
    assert result.stop_reason == "error"
    assert isinstance(sink.events[-1], RequestEnd)
    assert server.requests == []
