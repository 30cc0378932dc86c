"""Our request runner without LSP: a sink that keeps nothing and a message log in memory.

The in-process baseline of the overhead figure: the same `AgentRequest` (our provider, our
tools, tinyagent's loop) the server runs, minus JSON-RPC, progress and the session store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tunacode_lsp.agent.models import resolve_model
from tunacode_lsp.agent.ports import ApprovalDecision, ApprovalRequest, RequestSpec
from tunacode_lsp.agent.runner import AgentRequest, new_request_id
from tunacode_lsp.contract.protocol import Event, RequestResult, Usage

MODEL = "openai-compatible:scripted"


class NullSink:
    def __init__(self) -> None:
        self.count = 0

    def emit(self, event: Event) -> None:
        self.count += 1

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        return "allow"


class MemoryLog:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.plan: list[dict[str, str]] = []

    async def append(self, message: dict[str, Any], *, usage: Usage | None, thoughts: str | None) -> None:
        self.messages.append(message)

    async def save_plan(self, items: list[dict[str, str]]) -> None:
        self.plan = items

    async def save_compaction(self, history: list[dict[str, Any]], cut: int, summary: str, usage: Usage) -> bool:
        return False  # the bench keeps no sessions


async def run_in_process(
    chat_url: str, workspace: Path, prompt: str, log: MemoryLog, *, session_id: str = "bench", max_turns: int = 40
) -> RequestResult:
    """One request on our runner, its history from `log` and its messages appended there."""
    spec = RequestSpec(
        request_id=new_request_id(),
        session_id=session_id,
        prompt=prompt,
        model=resolve_model(MODEL, base_url=chat_url, env={}),
        workspace_root=workspace,
        history=list(log.messages),
        max_turns=max_turns,
        approval="auto",
    )
    return await AgentRequest(spec, NullSink(), log).run()
