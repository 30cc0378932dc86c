"""tinyagent events -> protocol events, stored messages and request state; one handler per type.

`EventTable.handle` is called for every event `Agent.stream` yields, in order. Handlers
update the request state (text, usage, turns), the tool-call registry, store finished
messages through the message log, and emit protocol events to the sink.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from tinyagent import AgentEvent, AssistantMessage, ToolResultMessage, UserMessage, extract_text
from tinyagent.agent_types import TextContent, ThinkingContent, ToolCallContent

from tunacode_lsp.agent.catalog import ModelCost
from tunacode_lsp.agent.ports import AgentSink, MessageLog
from tunacode_lsp.agent.registry import ToolCallRegistry, outcome_of
from tunacode_lsp.agent.usage import normalize_usage
from tunacode_lsp.contract.protocol import Event, TextDelta, ThinkingDelta, TurnEnd, Usage, UserMessageEvent, to_wire
from tunacode_lsp.core.codec import dump_message
from tunacode_lsp.core.history import mark_interrupted


@dataclass
class RequestState:
    """What one request has seen so far."""

    cost: ModelCost | None  # the model's prices (agent/catalog.py), None: unknown (cost 0)
    usage: Usage = field(default_factory=Usage)
    usage_counted_for: int | None = None  # id() of the last assistant message whose usage `usage` holds
    turns: int = 0
    text: str = ""  # the latest assistant text (partial while streaming)
    last_stop_reason: str | None = None
    last_error: str | None = None
    stored: list[dict[str, Any]] = field(default_factory=list)
    skip_store: set[int] = field(default_factory=set)  # id() of messages not to store (the nudge)
    steers: dict[int, Any] = field(default_factory=dict)  # id() -> steer messages not emitted by the loop yet
    context_estimate: int = 0  # estimated input tokens of the latest model call
    context_window: int = 0  # the model's context window (0: unknown)
    request_id: str = ""
    # events no stored message holds (request_start, notices, compaction, turn_end), as sent,
    # since the last stored message: kept in the next one's `meta` (agent/projection.py)
    unstored: list[dict[str, Any]] = field(default_factory=list)

    def note(self, event: Event) -> None:
        """An event the projection cannot derive from messages was emitted: keep it."""
        self.unstored.append(to_wire(event))

    def meta(self) -> dict[str, Any]:
        """The `meta` of the next stored message (core/history.py); takes the kept events."""
        meta: dict[str, Any] = {"requestId": self.request_id}
        if self.unstored:
            meta["events"], self.unstored = self.unstored, []
        return meta


def tool_result_text(result: Any) -> str:
    content = getattr(result, "content", None) or []
    return "".join(getattr(block, "text", "") or "" for block in content if getattr(block, "type", "") == "text")


def _thinking_text(message: AssistantMessage) -> str:
    return "\n".join(
        block.thinking for block in message.content if isinstance(block, ThinkingContent) and block.thinking
    )


def finished_assistant_dump(message: AssistantMessage) -> dict[str, Any] | None:
    """The assistant message as it is stored, or None when nothing of it is worth keeping.

    tinyagent runs no tool of a message that ended in error or abort, so its tool calls are
    dropped (they would dangle); an aborted message keeps its partial text, marked.
    """

    dump = dump_message(message)
    if message.stop_reason in ("error", "aborted"):
        dump["content"] = [b for b in dump.get("content", []) if b and b.get("type") != "tool_call"]
        has_text = any(
            (b.get("type") == "text" and (b.get("text") or "").strip())
            or (b.get("type") == "thinking" and (b.get("thinking") or "").strip())
            for b in dump["content"]
        )
        if not has_text:
            return None
        if message.stop_reason == "aborted":
            dump = mark_interrupted(dump)
    elif not any(
        isinstance(b, ToolCallContent)
        or (isinstance(b, TextContent) and (b.text or "").strip())
        or (isinstance(b, ThinkingContent) and (b.thinking or "").strip())
        for b in message.content
    ):
        return None
    return dump


class EventTable:
    def __init__(
        self,
        state: RequestState,
        sink: AgentSink,
        log: MessageLog,
        registry: ToolCallRegistry,
    ) -> None:
        self.state = state
        self.sink = sink
        self.log = log
        self.registry = registry
        self._handlers: dict[str, Callable[[Any], Awaitable[None] | None]] = {
            "message_update": self._on_message_update,
            "message_end": self._on_message_end,
            "tool_execution_start": self._on_tool_start,
            "tool_execution_end": self._on_tool_end,
            "turn_end": self._on_turn_end,
        }

    async def handle(self, event: AgentEvent) -> None:
        handler = self._handlers.get(event.type)
        if handler is not None:
            result = handler(event)
            if result is not None:
                await result

    def _on_message_update(self, event: Any) -> None:
        ame = event.assistant_message_event
        if ame is None or not ame.delta:
            return
        if ame.type == "text_delta":
            if isinstance(event.message, AssistantMessage):
                self.state.text = extract_text(event.message)
            self.sink.emit(TextDelta(ame.delta))
        elif ame.type == "thinking_delta":
            self.sink.emit(ThinkingDelta(ame.delta))

    async def _on_message_end(self, event: Any) -> None:
        message = event.message
        if message is None or id(message) in self.state.skip_store:
            return
        if isinstance(message, AssistantMessage):
            await self._store_assistant(message)
        elif isinstance(message, UserMessage | ToolResultMessage):
            dump = dump_message(message)
            if isinstance(message, ToolResultMessage):
                dump["timestamp"] = int(time.time() * 1000)  # tinyagent stamps loop time, not wall time
                record = self.registry.get(message.tool_call_id or "")
                if record is not None and record.final:  # how it ended, for the replay
                    dump["details"] = {**(dump.get("details") or {}), "outcome": outcome_of(record)}
            steer = self.state.steers.pop(id(message), None)
            await self._store(dump, usage=None, thoughts=None)
            if steer is not None:  # a steer, stored where the model sees it
                self.sink.emit(UserMessageEvent(extract_text(message)))

    async def _store_assistant(self, message: AssistantMessage) -> None:
        state = self.state
        usage = normalize_usage(message.usage, state.cost)
        state.usage = state.usage + usage
        state.usage_counted_for = id(message)
        state.last_stop_reason = message.stop_reason
        state.last_error = message.error_message if message.stop_reason == "error" else None
        state.text = extract_text(message)
        dump = finished_assistant_dump(message)
        if dump is not None:
            await self._store(dump, usage=usage, thoughts=_thinking_text(message) or None)

    async def _store(self, dump: dict[str, Any], *, usage: Usage | None, thoughts: str | None) -> None:
        dump["meta"] = self.state.meta()
        await self.log.append(dump, usage=usage, thoughts=thoughts)
        self.state.stored.append(dump)  # only once it is really stored

    def _on_tool_start(self, event: Any) -> None:
        self.registry.announce(event.tool_call_id, event.tool_name, event.args)
        self.registry.mark_in_order(event.tool_call_id)

    def _on_tool_end(self, event: Any) -> None:
        # Calls that never reached a tool (unknown tool, bad JSON, declined) end here.
        status = "failed" if event.is_error else "completed"
        self.registry.finish(event.tool_call_id, status, tool_result_text(event.result), name=event.tool_name)

    def _on_turn_end(self, event: Any) -> None:
        self.state.turns += 1
        message = event.message
        usage = normalize_usage(getattr(message, "usage", None), self.state.cost)
        reported = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        context_tokens = reported or self.state.context_estimate
        event = TurnEnd(self.state.turns, usage, context_tokens, self.state.context_window)
        self.state.note(event)
        self.sink.emit(event)
