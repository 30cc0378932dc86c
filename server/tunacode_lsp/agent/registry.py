"""The tool-call registry of one request: pending -> running -> completed | failed | cancelled.

It is the single owner of tool-call state and the only place that emits `tool_call` and
`tool_call_update` events. Two paths report to it: tinyagent's event queue (start/end
events, which arrive late because the loop runs in its own task) and our tool wrapper
(which sees a call start and finish as it happens). Whichever comes first wins; the
registry keeps the order valid: one `tool_call`, then updates, then exactly one final update.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tunacode_lsp.contract.protocol import FINAL_TOOL_STATUSES, Event, ToolCallEvent, ToolCallSummary, ToolCallUpdate
from tunacode_lsp.core.text import clip
from tunacode_lsp.tools.spec import spec_of

PREVIEW_CHARS = 400


# Bounds of the args a `tool_call` event shows (the tool itself gets them whole).
ARG_STRING_CHARS = 2_000
ARG_ITEMS = 50
ARG_DEPTH = 6


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    text = text.strip()
    return clip(text, limit)


def bounded_args(value: Any, depth: int = 0) -> Any:
    """Tool call args for an event: long strings, long lists and objects, deep nesting cut.

    A model may send megabytes of arguments (a whole file to write); the event is for a
    tool card, so it carries a bounded copy and says what was cut.
    """

    if isinstance(value, str):
        if len(value) <= ARG_STRING_CHARS:
            return value
        return value[:ARG_STRING_CHARS] + f"… [{len(value) - ARG_STRING_CHARS:,} more characters]"
    if not isinstance(value, dict | list):
        return value
    if depth >= ARG_DEPTH:
        return "…"
    if isinstance(value, list):
        kept = [bounded_args(item, depth + 1) for item in value[:ARG_ITEMS]]
        return kept + ([f"… [{len(value) - ARG_ITEMS:,} more items]"] if len(value) > ARG_ITEMS else [])
    items = list(value.items())
    kept_items = {str(k)[:ARG_STRING_CHARS]: bounded_args(v, depth + 1) for k, v in items[:ARG_ITEMS]}
    if len(items) > ARG_ITEMS:
        kept_items["…"] = f"[{len(items) - ARG_ITEMS:,} more fields]"
    return kept_items


@dataclass
class ToolCallRecord:
    tool_call_id: str
    name: str
    args: dict[str, Any]
    status: str = "pending"
    started: float | None = None
    ended: float | None = None
    result: str | None = None
    announced_at: float = field(default_factory=time.monotonic)
    reason: str | None = None  # why it ended failed/cancelled (contract TOOL_END_REASONS), set where decided
    asked: bool = False  # an approval was asked for it
    ticks: dict[str, int] = field(default_factory=dict)  # status -> when its event was emitted (request order)
    exit_code: int | None = None  # of the command a bash call ran

    @property
    def final(self) -> bool:
        return self.status in FINAL_TOOL_STATUSES

    @property
    def duration_ms(self) -> int | None:
        if self.ended is None:
            return None
        return round((self.ended - (self.started or self.announced_at)) * 1000)

    @property
    def end_reason(self) -> str | None:
        """The final update's `reason`: the one set where the call was refused or stopped,
        else `error` for a failure and `aborted` for a cancellation; None when completed."""
        if self.status == "completed" or not self.final:
            return None
        return self.reason or ("error" if self.status == "failed" else "aborted")


def call_event(tool_call_id: str, name: str, args: dict[str, Any]) -> ToolCallEvent:
    """The `tool_call` event of a call (live, and replayed from the store: agent/projection.py)."""
    spec = spec_of(name)
    return ToolCallEvent(
        tool_call_id, name, bounded_args(args), summary=spec.summary(args), kind=spec.kind, title=spec.title(args)
    )


def update_event(record: ToolCallRecord, status: str, result: str | None = None) -> ToolCallUpdate:
    """A `tool_call_update` of the call in `record` (live, and replayed from the store)."""
    final = status in FINAL_TOOL_STATUSES
    reason = record.end_reason if final else None
    return ToolCallUpdate(
        record.tool_call_id,
        record.name,
        status,
        result=result,
        duration_ms=record.duration_ms if final else None,
        denied=True if reason in ("denied", "policy") else None,
        exit_code=record.exit_code if final else None,
        reason=reason,
    )


def outcome_of(record: ToolCallRecord) -> dict[str, Any]:
    """What the store keeps of a finished call (the tool result's `details.outcome`, see
    core/history.py): everything its replayed updates are built from."""
    outcome: dict[str, Any] = {"status": record.status}
    if record.end_reason is not None:
        outcome["reason"] = record.end_reason
    if record.asked:
        outcome["asked"] = True
    if record.started is not None:
        outcome["started"] = True
    if record.result is not None:
        outcome["result"] = record.result
    if record.exit_code is not None:
        outcome["exitCode"] = record.exit_code
    if record.duration_ms is not None:
        outcome["durationMs"] = record.duration_ms
    if record.ticks:
        outcome["ticks"] = dict(record.ticks)
    return outcome


class ToolCallRegistry:
    def __init__(self, emit: Callable[[Event], None]) -> None:
        self._emit = emit
        self._calls: dict[str, ToolCallRecord] = {}
        self._seen_in_order: dict[str, asyncio.Event] = {}
        self._ticks = 0  # events emitted so far: the order of calls that run at the same time

    def _seen(self, tool_call_id: str) -> asyncio.Event:
        return self._seen_in_order.setdefault(tool_call_id, asyncio.Event())

    def mark_in_order(self, tool_call_id: str) -> None:
        """The event consumer reached this call's start event: everything the model said
        before the call (its text) has been emitted."""

        self._seen(tool_call_id).set()

    async def wait_in_order(self, tool_call_id: str) -> None:
        """Before the tool side emits anything for a call, wait until the consumer reached
        it; tinyagent's loop runs ahead of the consumer, so otherwise a call's events could
        overtake the text that came before it."""

        await self._seen(tool_call_id).wait()

    def get(self, tool_call_id: str) -> ToolCallRecord | None:
        return self._calls.get(tool_call_id)

    def announce(self, tool_call_id: str, name: str, args: dict[str, Any] | None) -> ToolCallRecord:
        record = self._calls.get(tool_call_id)
        if record is None:
            record = ToolCallRecord(tool_call_id, name, dict(args or {}))
            self._calls[tool_call_id] = record
            self._tick(record, "pending")
            self._emit(call_event(tool_call_id, name, record.args))
        return record

    def _update(self, record: ToolCallRecord, status: str, result: str | None = None) -> None:
        record.status = status
        self._tick(record, status)
        self._emit(update_event(record, status, result))

    def _tick(self, record: ToolCallRecord, status: str) -> None:
        self._ticks += 1
        record.ticks[status] = self._ticks

    def awaiting_approval(self, tool_call_id: str, name: str, args: dict[str, Any]) -> None:
        record = self.announce(tool_call_id, name, args)
        if record.status == "pending":
            record.asked = True
            self._update(record, "awaiting_approval")

    def mark_denied(self, tool_call_id: str, name: str, args: dict[str, Any], reason: str = "denied") -> None:
        """The call was refused: by the user (`denied`) or by a mode, a rule or a hook
        (`policy`); its final update says so in `reason` (and `denied: true`)."""
        self.announce(tool_call_id, name, args).reason = reason

    def start(self, tool_call_id: str, name: str, args: dict[str, Any]) -> None:
        record = self.announce(tool_call_id, name, args)
        if record.final or record.status == "in_progress":
            return
        record.started = time.monotonic()
        self._update(record, "in_progress")

    def finish(
        self, tool_call_id: str, status: str, result: str | None = None, *, name: str = "",
        exit_code: int | None = None, reason: str | None = None,
    ) -> None:
        assert status in FINAL_TOOL_STATUSES, status
        record = self._calls.get(tool_call_id) or self.announce(tool_call_id, name, {})
        if record.final:
            return
        if reason is not None:
            record.reason = reason
        record.exit_code = exit_code
        record.ended = time.monotonic()
        record.result = preview(result) if result is not None else None
        self._update(record, status, record.result)

    def settle_open(self, status: str = "cancelled", result: str = "cancelled", reason: str | None = None) -> None:
        """Give every call still open its final update (abort, timeout, a crash of the loop)."""

        for record in list(self._calls.values()):
            if not record.final:
                self.finish(record.tool_call_id, status, result, reason=reason)

    def summaries(self) -> list[ToolCallSummary]:
        return [
            ToolCallSummary(r.tool_call_id, r.name, r.status, r.duration_ms) for r in self._calls.values()
        ]

    def __len__(self) -> int:
        return len(self._calls)
