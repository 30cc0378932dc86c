"""Automatic compaction in the request runner, with the scripted model answering the summary call."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tunacode_lsp.agent.compaction import choose_cut
from tunacode_lsp.agent.models import resolve_model
from tunacode_lsp.agent.ports import ApprovalDecision, ApprovalRequest, RequestSpec
from tunacode_lsp.agent.provider.openai_chat import close_shared_client
from tunacode_lsp.agent.runner import AgentRequest, new_request_id
from tunacode_lsp.contract.protocol import Compaction, Event, Notice, Usage
from tunacode_lsp.core.history import violations
from tunacode_lsp.store.session_state import SUMMARY_MARK


class Sink:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        return "deny"


class Log:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.compactions: list[tuple[int, str]] = []

    async def append(self, message: dict[str, Any], *, usage: Usage | None, thoughts: str | None) -> None:
        self.messages.append(message)

    async def save_plan(self, items: list[dict[str, str]]) -> None:
        pass

    async def save_compaction(self, history: list[dict[str, Any]], cut: int, summary: str, usage: Usage) -> bool:
        self.compactions.append((cut, summary))
        return True


def old_turns(n: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = []
    for i in range(n):
        history.append({"role": "user", "content": [{"type": "text", "text": f"OLD-QUESTION-{i} " + "q" * 800}]})
        history.append({"role": "assistant", "content": [{"type": "text", "text": f"OLD-ANSWER-{i} " + "a" * 800}],
                        "stop_reason": "stop"})
    return history


def spec_for(server: Any, tmp_path: Path, history: list[dict[str, Any]], window: int) -> RequestSpec:
    return RequestSpec(
        request_id=new_request_id(), session_id="s", prompt="NEW-PROMPT", history=history,
        model=resolve_model("openai-compatible:scripted", base_url=server.chat_url, env={}),
        workspace_root=tmp_path, approval="auto", context_window=window, compact_threshold=0.8, max_retries=0,
    )


def bodies_text(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"])


async def test_automatic_compaction_replaces_older_turns_by_the_summary(serve, tmp_path: Path) -> None:
    server = serve([
        {"steps": [{"text": "SUMMARY-OF-OLD-TURNS"}, {"usage": {"prompt_tokens": 900, "completion_tokens": 10}}]},
        {"steps": [{"text": "Answer."}, {"usage": {"prompt_tokens": 300, "completion_tokens": 2}}]},
    ])
    history = old_turns(6)  # about 2,500 tokens against a 2,000 window
    log, sink = Log(), Sink()
    result = await AgentRequest(spec_for(server, tmp_path, history, 2_000), sink, log).run()
    await close_shared_client()

    assert result.stop_reason == "end_turn" and result.text == "Answer."
    summary_call, answer_call = server.requests
    assert "tools" not in summary_call  # a separate call, no tools
    asked = bodies_text(summary_call)
    assert "OLD-ANSWER-4" in asked and "NEW-PROMPT" not in asked
    assert "earlier part cut" in asked  # the transcript fits half the (tiny) window, keeping its end
    sent = bodies_text(answer_call)
    assert "SUMMARY-OF-OLD-TURNS" in sent and "NEW-PROMPT" in sent
    assert "OLD-QUESTION-0" not in sent  # older turns replaced ...
    assert "OLD-ANSWER-5" in sent  # ... the recent ones kept word for word
    compactions = [e for e in sink.events if isinstance(e, Compaction)]
    assert len(compactions) == 1 and compactions[0].after < compactions[0].before
    (cut, summary), = log.compactions
    assert summary == "SUMMARY-OF-OLD-TURNS" and 0 < cut < len(history)
    assert result.usage.input_tokens == 1_200  # the summary call's cost is in the request's usage
    assert [m["role"] for m in log.messages] == ["user", "assistant"]  # stored: only the new turn
    assert violations(log.messages) == []


async def test_a_failed_summary_leaves_the_history_as_it_was(serve, tmp_path: Path) -> None:
    server = serve([{"error": {"status": 400, "body": {"error": {"message": "bad summary"}}}}, {"text": "Answer."}])
    history = old_turns(6)
    log, sink = Log(), Sink()
    result = await AgentRequest(spec_for(server, tmp_path, history, 2_000), sink, log).run()
    await close_shared_client()

    assert result.stop_reason == "end_turn"
    assert "OLD-QUESTION-0" in bodies_text(server.requests[1])  # sent whole
    assert log.compactions == [] and not any(isinstance(e, Compaction) for e in sink.events)
    assert any(isinstance(e, Notice) and "Could not compact" in e.message for e in sink.events)


async def test_abort_during_compaction_ends_the_request_and_changes_nothing(serve, tmp_path: Path) -> None:
    server = serve([{"steps": [{"text": "partial"}, {"stall": 30}]}, {"text": "never"}])
    log, sink = Log(), Sink()
    run = AgentRequest(spec_for(server, tmp_path, old_turns(6), 2_000), sink, log)
    task = asyncio.ensure_future(run.run())
    await asyncio.to_thread(server.wait_for_requests, 1, 10.0)
    run.abort()
    result = await asyncio.wait_for(task, 10)
    await close_shared_client()

    assert result.stop_reason == "cancelled"
    assert len(server.requests) == 1  # the request never went on to the model
    assert log.compactions == [] and log.messages == []
    assert not any(isinstance(e, Compaction) for e in sink.events)
    assert await asyncio.to_thread(server.wait_for_closed, 5.0)


async def test_below_the_threshold_nothing_is_compacted(serve, tmp_path: Path) -> None:
    server = serve([{"text": "Answer."}])
    log, sink = Log(), Sink()
    result = await AgentRequest(spec_for(server, tmp_path, old_turns(6), 100_000), sink, log).run()
    await close_shared_client()
    assert result.stop_reason == "end_turn" and len(server.requests) == 1 and log.compactions == []


def test_the_cut_is_at_a_user_turn_and_keeps_a_quarter_of_the_window() -> None:
    view = old_turns(6)
    cut = choose_cut(view, 2_000)
    assert cut is not None and view[cut]["role"] == "user"
    assert choose_cut(view[:2], 100_000) == 2 or choose_cut(view[:2], 100_000) is None
    summary_only = [{"role": "user", "content": [{"type": "text", "text": "s"}], SUMMARY_MARK: True}]
    assert choose_cut(summary_only, 2_000) is None
    assert choose_cut([], 2_000) is None
