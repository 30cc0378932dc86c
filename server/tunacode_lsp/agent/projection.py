"""A stored session as the protocol events its requests emitted: the one projection of history.

Live and replayed events come from the same functions: a call's `tool_call` and
`tool_call_update`s are built by agent/registry.py (`call_event`, `update_event`) from a
`ToolCallRecord`, live from the running call and here from the record its stored result
keeps (`details.outcome`, written from the same record when the result was stored); the
plan by `plan_of` from todo_write's stored details. Events no message holds (request_start,
notices, compaction, turn_end) are kept as sent in the `meta.events` of the next stored
message (agent/events.py `RequestState.note`), and the ones after the last message
(request_end) in the request's trailer (store: `request_ends`).

Replayed, every request gives: its `meta.events` where they were emitted, the text and
thinking of each assistant message as one delta per run of blocks, each tool call's
`tool_call`, its `awaiting_approval` and `in_progress` updates when it had them, the
events emitted while it ran, its final update, the plan after a completed todo_write, a
steer (a user message inside its request) as `user_message`, and the trailer. What differs
from live: merged deltas; timing (`seq`, durations as measured once); calls of one message
that ran at the same time keep the order their events were emitted in (`ticks`).

Sessions stored before this (no `meta`, no outcome) get a best-effort projection: each
user message starts a request (`request_start` with its text and the session's model), a
result's status is `cancelled` when the server closed it (`details.cancelled`), `failed`
(reason `error`) when it is an error, else `completed`; no turn_end; `request_end` says
`cancelled` after an interrupted answer, `error` after a failed one, else `end_turn`.
"""

from __future__ import annotations

import logging
from typing import Any

from tunacode_lsp.agent.error_kinds import error_kind
from tunacode_lsp.agent.events import RequestState
from tunacode_lsp.agent.ports import AgentSink, ApprovalDecision, ApprovalRequest, MessageLog
from tunacode_lsp.agent.registry import ToolCallRecord, ToolCallRegistry, call_event, outcome_of, preview, update_event
from tunacode_lsp.contract.protocol import (
    FINAL_TOOL_STATUSES,
    TOOL_END_REASONS,
    Compaction,
    ErrorInfo,
    Event,
    Notice,
    Plan,
    PlanItem,
    RequestEnd,
    RequestStart,
    TextDelta,
    ThinkingDelta,
    TurnEnd,
    Usage,
    UserMessageEvent,
    event_from_wire,
    to_wire,
)
from tunacode_lsp.core.history import cancelled_results_for, interrupted_text, meta_of, outcome_of_result

log = logging.getLogger(__name__)

NOTED_EVENTS = (RequestStart, Notice, Compaction, RequestEnd)  # (turn_end: noted by the event table)
STORED_EVENTS = (*NOTED_EVENTS, TurnEnd)  # what a message's meta or a trailer may hold
Wire = dict[str, Any]


# ---------------------------------------------------------------- the live side


class NotingSink:
    """The run's sink: each event no message will hold is noted in the request state."""

    def __init__(self, inner: AgentSink, state: RequestState) -> None:
        self._inner = inner
        self._state = state

    def emit(self, event: Event) -> None:
        if isinstance(event, NOTED_EVENTS):
            self._state.note(event)
        self._inner.emit(event)

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        return await self._inner.ask_approval(request)

    def __getattr__(self, name: str) -> Any:  # close(), progress, ... of the caller's sink
        return getattr(self._inner, name)


def plan_items(details: Any) -> list[dict[str, str]] | None:
    """todo_write's items from its result details, None when they hold none."""
    raw = details.get("items") if isinstance(details, dict) else None
    if not isinstance(raw, list):
        return None
    return [
        {key: str(item.get(key, "")) for key in ("content", "status", "activeForm")}
        for item in raw
        if isinstance(item, dict)
    ]


def plan_of(items: list[dict[str, str]]) -> Plan:
    return Plan([PlanItem(i["content"], i["status"], i["activeForm"]) for i in items])


def stored_results_for(calls: list[dict[str, Any]], registry: ToolCallRegistry, reason: str) -> list[dict[str, Any]]:
    """The results that close `calls` after a stop, each with its outcome; a call the client
    never saw (the loop stopped before it was announced) is `unseen` and replays nothing."""
    results = cancelled_results_for(calls)
    for result in results:
        record = registry.get(str(result.get("tool_call_id")))
        outcome = outcome_of(record) if record is not None and record.final else {"status": "cancelled", "reason": reason, "unseen": True}
        result["details"] = {**result["details"], "outcome": outcome}
    return results


async def save_request_end(log_: MessageLog, state: RequestState) -> None:
    """Keep the events after the request's last stored message (request_end) as its trailer."""
    save = getattr(log_, "save_request_end", None)
    if save is None:
        return
    events, state.unstored = state.unstored, []
    try:
        await save(state.request_id, events)
    except Exception:  # the request is over and answered; its replay falls back (module doc)
        log.exception("could not store the end of request %s", state.request_id)


# ---------------------------------------------------------------- the replay


Trailer = tuple[int, list[Wire]]  # (the session's message count when the request ended, its events)


class _Projector:
    def __init__(self, session_id: str, model: str, trailers: dict[str, Trailer], marks: dict[int, str]) -> None:
        self.session_id = session_id
        self.model = model
        self.trailers = trailers
        self.marks = marks
        self.out: list[Wire] = []
        self.request_id: str | None = None
        self.seq = 0
        self.calls: dict[str, tuple[str, dict[str, Any]]] = {}
        self.last_assistant: dict[str, Any] | None = None
        self.turn_usage: list[Usage] = []
        self.results: list[tuple[float, int, Event | Wire]] = []  # the open run of tool results' events

    def send(self, event: Event | Wire) -> None:
        body = event if isinstance(event, dict) else to_wire(event)
        if body.get("type") == "turn_end":
            self.turn_usage.append(Usage.from_store_dict(_snake(body.get("usage"))))
        self.seq += 1
        self.out.append({"sessionId": self.session_id, "requestId": self.request_id, "seq": self.seq, **body})

    def flush(self) -> None:
        """The events of a run of tool results, in the order they were emitted (by their ticks)."""
        for _, _, event in sorted(self.results, key=lambda item: item[:2]):
            self.send(event)
        self.results = []

    def start(self, request_id: str) -> None:
        self.close()
        self.request_id, self.seq, self.last_assistant, self.turn_usage = request_id, 0, None, []

    def close(self) -> None:
        self.flush()
        if self.request_id is None:
            return
        trailer = self.trailers.get(self.request_id)
        if trailer is not None:
            for event in _stored_events(trailer[1]):
                self.send(event)
        else:
            self.send(self._guessed_end())
        self.request_id = None

    def _guessed_end(self) -> RequestEnd:
        usage = sum(self.turn_usage, Usage())
        last = self.last_assistant or {}
        if last.get("stop_reason") == "aborted":
            return RequestEnd("cancelled", usage)
        if last.get("stop_reason") == "error":
            message = str(last.get("error_message") or "the model provider returned an error")
            return RequestEnd("error", usage, ErrorInfo(message, error_kind(message)))
        return RequestEnd("end_turn", usage)

    def message(self, index: int, message: dict[str, Any]) -> None:
        meta = meta_of(message)
        role = message.get("role")
        request_id = meta.get("requestId") if isinstance(meta.get("requestId"), str) else None
        steer = role == "user" and request_id is not None and request_id == self.request_id
        if request_id is not None and request_id != self.request_id:
            self.start(request_id)
        elif request_id is None and role == "user":
            self.start(self.marks.get(index) or f"stored_{index}")
            self.send(RequestStart(_text(message), self.model))
        elif self.request_id is None:
            self.start(self.marks.get(index) or f"stored_{index}")
        events = _stored_events(meta.get("events"))
        if role == "tool_result":
            self.tool_result(message, events)
            return
        self.flush()
        for event in events:
            self.send(event)
        if role == "assistant":
            self.assistant(message)
        elif steer:  # a user message inside its request: a steer, announced once stored
            self.send(UserMessageEvent(_text(message)))

    def assistant(self, message: dict[str, Any]) -> None:
        self.last_assistant = message
        run: TextDelta | ThinkingDelta | None = None
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type", "text")
            if kind == "tool_call" and isinstance(block.get("id"), str):
                args = block.get("arguments")
                self.calls[block["id"]] = (str(block.get("name") or ""), args if isinstance(args, dict) else {})
                continue
            text = block.get("thinking") if kind == "thinking" else block.get("text") if kind == "text" else None
            if not isinstance(text, str) or not text:
                continue
            cls = ThinkingDelta if kind == "thinking" else TextDelta
            if run is not None and type(run) is not cls:
                self.send(run)
                run = None
            run = cls((run.text if run is not None else "") + text)
        if isinstance(run, TextDelta):
            run = TextDelta(interrupted_text(message, run.text))
        if run is not None and run.text:
            self.send(run)

    def tool_result(self, message: dict[str, Any], during: list[Wire]) -> None:
        call_id = str(message.get("tool_call_id") or "")
        name, args = self.calls.get(call_id, (str(message.get("tool_name") or ""), {}))
        outcome = outcome_of_result(message)
        if outcome is None or outcome["status"] not in FINAL_TOOL_STATUSES:  # none kept, or not one we wrote
            outcome = _guessed_outcome(message)
        raw_ticks = outcome.get("ticks")
        ticks: dict[str, Any] = raw_ticks if isinstance(raw_ticks, dict) else {}
        base = float(2**40 + 10 * len(self.results))  # a result stored without ticks: after the others, in order

        def at(status: str, fallback: float) -> float:
            tick = ticks.get(status)
            return float(tick) if isinstance(tick, int) and not isinstance(tick, bool) else fallback

        def add(key: float, event: Event | Wire) -> None:
            self.results.append((key, len(self.results), event))

        if outcome.get("unseen"):
            for event in during:
                add(base, event)
            return
        record = ToolCallRecord(call_id, name, args, status=str(outcome["status"]))
        record.reason = outcome.get("reason") if outcome.get("reason") in TOOL_END_REASONS else None
        record.asked = bool(outcome.get("asked"))
        record.exit_code = outcome.get("exitCode") if isinstance(outcome.get("exitCode"), int) else None
        opened = at("pending", base)
        add(opened, call_event(call_id, name, args))
        if record.asked:
            add(at("awaiting_approval", base + 1), update_event(record, "awaiting_approval"))
        running = opened
        if outcome.get("started"):
            running = at("in_progress", base + 2)
            add(running, update_event(record, "in_progress"))
        for event in during:  # emitted while it ran (checkpoint notices)
            add(running + 0.5, event)
        result = outcome.get("result")
        final = update_event(record, record.status, result if isinstance(result, str) else None)
        duration = outcome.get("durationMs")
        final.duration_ms = duration if isinstance(duration, int) else None
        ended = at(record.status, base + 3)
        add(ended, final)
        if name == "todo_write" and record.status == "completed":
            items = plan_items(message.get("details"))
            if items is not None:
                add(ended + 0.5, plan_of(items))


def _stored_events(raw: Any) -> list[Wire]:
    """Kept events as the contract says them: anything else (an imported document's, a newer
    server's) is left out, so a client never gets an event of a shape it was not promised."""
    if not isinstance(raw, list):
        return []
    return [
        to_wire(event)
        for item in raw
        if isinstance(item, dict) and isinstance(event := event_from_wire(item), STORED_EVENTS)
    ]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    return "".join(b.get("text") or "" for b in blocks if isinstance(b, dict) and b.get("type", "text") == "text")


def _snake(usage: Any) -> dict[str, Any]:
    names = {"inputTokens": "input_tokens", "outputTokens": "output_tokens", "cacheReadTokens": "cache_read_tokens",
             "cacheWriteTokens": "cache_write_tokens", "totalTokens": "total_tokens", "cost": "cost"}
    return {names[k]: v for k, v in usage.items() if k in names} if isinstance(usage, dict) else {}


def _guessed_outcome(message: dict[str, Any]) -> dict[str, Any]:
    """A result stored without an outcome (module doc): from its structured flags only."""
    raw = message.get("details")
    details: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if details.get("cancelled"):
        return {"status": "cancelled", "reason": "aborted", "result": preview(_text(message))}
    outcome: dict[str, Any] = {"status": "failed" if message.get("is_error") else "completed", "started": True}
    if message.get("is_error"):
        outcome["reason"] = "error"
    outcome["result"] = preview(_text(message))
    if isinstance(details.get("exit_code"), int):
        outcome["exitCode"] = details["exit_code"]
    return outcome


def project_session(
    messages: list[dict[str, Any]],
    *,
    session_id: str,
    model: str,
    trailers: dict[str, Trailer] | None = None,
    marks: dict[int, str] | None = None,
) -> list[Wire]:
    """Every stored request's events, request by request, each with its envelope
    ({sessionId, requestId, seq, type, ...}). `trailers`: request id -> (the message count
    when it ended, the events stored after its last message); a request that stored no
    message (stopped before its prompt was stored) is its trailer alone, at that place.
    `marks`: message index -> the request id of a prompt stored without one (checkpoints)."""
    trailers = trailers or {}
    projector = _Projector(session_id, model, trailers, marks or {})
    seen = {meta_of(m).get("requestId") for m in messages}
    alone = sorted((at, request_id) for request_id, (at, _) in trailers.items() if request_id not in seen)
    for index, message in enumerate(messages):
        while alone and alone[0][0] <= index:
            projector.start(alone.pop(0)[1])
        if isinstance(message, dict):
            projector.message(index, message)
    for _, request_id in alone:
        projector.start(request_id)
    projector.close()
    return projector.out
