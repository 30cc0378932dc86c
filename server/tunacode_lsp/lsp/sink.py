"""The agent's sink under LSP: `tunacode/event` notifications, `$/progress`, approvals.

Events go out at once as `tunacode/event` with the request's envelope and `seq`. Work-done
progress is derived from the same events by a per-request worker that handles them in
order (creating a server token needs a round trip, and `begin` must follow it). A tool call
gets its own token only when it is still running TOOL_PROGRESS_AFTER seconds after it
started: most calls take a few milliseconds, and their create, its answer, begin and end
were a third of a request's messages (issue 35); the request's token reports every call.
Approvals are `window/showMessageRequest`; no answer is Deny.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from tunacode_lsp.agent.ports import ApprovalDecision, ApprovalRequest
from tunacode_lsp.contract.consent import RUNS_CODE_OUTSIDE_WARNING
from tunacode_lsp.contract.protocol import (
    EVENT_NOTIFICATION,
    FINAL_TOOL_STATUSES,
    ApproveParams,
    Event,
    RequestEnd,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolCallUpdate,
    to_wire,
)
from tunacode_lsp.core.text import clip, visible_blanks
from tunacode_lsp.lsp.client_requests import ClientDidNotAnswer, ask_client
from tunacode_lsp.lsp.editor import client_offers
from tunacode_lsp.lsp.pygls_compat import drop_pending_request, register_progress_token, send_payload

log = logging.getLogger(__name__)

CLIENT_WAIT_SECONDS = 5.0  # for the client's answer to window/workDoneProgress/create
PROGRESS_CLOSE_SECONDS = 0.8  # the progress worker's end, when the request is over
TOOL_PROGRESS_AFTER = 0.1  # a tool call still running this long gets its own progress token

APPROVAL_ACTIONS: dict[str, ApprovalDecision] = {
    "Allow": "allow",
    "Allow for this session": "allow_session",
    "Deny": "deny",
}
ALWAYS_ACTIONS: dict[str, ApprovalDecision] = {  # offered when a rule can allow exactly this call
    "Always allow (user settings)": "allow_always_user",
    "Always allow (project settings)": "allow_always_project",
}
MAX_DELTA_CHARS = 8_000  # one text/thinking notification carries at most this much


APPROVE_REQUEST = "tunacode/approve"
DECISIONS: frozenset[str] = frozenset({"allow", "allow_session", "deny"})


def approval_message(request: ApprovalRequest) -> str:
    """For plain clients: the summary, then exactly what will run (never cut: the detail is
    bounded where it is made, and a diff says when it was cut)."""

    head = f"TunaCode wants to {request.headline or request.summary} ({request.tool_name})"
    if request.rule:
        head += f"\nAsked by the {request.rule}"
    if request.always_allow:
        head += "\n\"Always allow\" saves: " + ", ".join(visible_blanks(r) for r in request.always_allow)
    if request.runs_code_outside:
        head += f"\n\n{RUNS_CODE_OUTSIDE_WARNING}"
    if request.detail_kind == "command":
        return f"{head}\n\nThe whole command:\n{visible_blanks(request.detail)}"
    if request.detail_kind == "diff":
        return f"{head}\n\n{request.detail}"
    return f"{head} with:\n{request.detail}"


def decision_of(answer: Any) -> ApprovalDecision:
    """A showMessageRequest action or a tunacode/approve result; anything else is a denial."""

    title = answer.get("title") if isinstance(answer, dict) else getattr(answer, "title", None)
    if isinstance(title, str):
        return APPROVAL_ACTIONS.get(title) or ALWAYS_ACTIONS.get(title, "deny")
    decision = answer.get("decision") if isinstance(answer, dict) else getattr(answer, "decision", None)
    if decision == "allow_always":
        scope = answer.get("scope") if isinstance(answer, dict) else getattr(answer, "scope", None)
        return "allow_always_project" if scope == "project" else "allow_always_user"
    return decision if isinstance(decision, str) and decision in DECISIONS else "deny"  # type: ignore[return-value]


def first_line(text: str, limit: int = 80) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return clip(line, limit)


class ToolStillRunning:
    """Queued TOOL_PROGRESS_AFTER seconds after a tool call started (see the module docstring)."""

    def __init__(self, tool_call_id: str) -> None:
        self.tool_call_id = tool_call_id


class ProgressReporter:
    """Maps one request's events to work-done progress, in order, on its own task."""

    def __init__(self, ls: LanguageServer, request_id: str, prompt: str, client_token: Any) -> None:
        self._ls = ls
        self._request_id = request_id
        self._prompt = prompt
        self._client_token = client_token
        self._queue: asyncio.Queue[Event | ToolStillRunning | None] = asyncio.Queue()
        self._can_create = bool(
            ls.client_capabilities.window and ls.client_capabilities.window.work_done_progress
        )
        self.token: Any = None
        self._tool_tokens: dict[str, Any] = {}
        self._summaries: dict[str, str] = {}  # tool call id -> the tool_call event's summary
        self._running: dict[str, str] = {}  # tool call id -> name: in progress, as the worker has seen
        self._timers: dict[str, asyncio.TimerHandle] = {}  # tool call id -> its ToolStillRunning, to come
        self._open: set[Any] = set()  # tokens begun and not yet ended: ended whatever happens
        self._closing = False
        self._task = asyncio.ensure_future(self._work())

    def push(self, event: Event) -> None:
        if isinstance(event, ToolCallUpdate):
            if event.status == "in_progress" and self._can_create and event.tool_call_id not in self._timers:
                self._timers[event.tool_call_id] = asyncio.get_running_loop().call_later(
                    TOOL_PROGRESS_AFTER, self._queue.put_nowait, ToolStillRunning(event.tool_call_id))
            elif event.status in FINAL_TOOL_STATUSES and (timer := self._timers.get(event.tool_call_id)) is not None:
                timer.cancel()  # done before it: no token of its own
        self._queue.put_nowait(event)

    async def close(self) -> None:
        self._closing = True  # a create answered from now on is never begun
        for timer in self._timers.values():
            timer.cancel()
        self._queue.put_nowait(None)
        done, _ = await asyncio.wait({self._task}, timeout=PROGRESS_CLOSE_SECONDS)
        if not done:  # never hold the request's answer on the client: an open create is withdrawn
            self._task.cancel()
            await asyncio.wait({self._task}, timeout=PROGRESS_CLOSE_SECONDS)

    async def _create(self, token: str) -> bool:
        if not self._can_create:
            return False
        try:  # bounded: a client that never answers gets no progress, and the request goes on
            await ask_client(
                self._ls, types.WINDOW_WORK_DONE_PROGRESS_CREATE, types.WorkDoneProgressCreateParams(token=token),
                timeout=CLIENT_WAIT_SECONDS, label="tunacode-progress",
            )
        except Exception as exc:  # a client that refuses gets no progress, nothing else changes
            log.debug("progress token %s refused: %s", token, exc)
            self._can_create = not isinstance(exc, ClientDidNotAnswer)  # do not wait on it again
            return False
        register_progress_token(self._ls, token)
        return True

    async def _work(self) -> None:
        progress = self._ls.work_done_progress
        if self._client_token is not None:
            self.token = self._client_token
        elif await self._create(f"tunacode/{self._request_id}"):
            self.token = f"tunacode/{self._request_id}"
        if self.token is not None:
            progress.begin(
                self.token,
                types.WorkDoneProgressBegin(title="TunaCode", message=first_line(self._prompt), cancellable=True),
            )
            self._open.add(self.token)
        try:
            while (event := await self._queue.get()) is not None:
                await self._on_event(event)
        finally:
            # a client slow to answer a create (the worker was cancelled, or the request ended
            # meanwhile): every progress it was shown ends, never a spinner left forever
            for token in list(self._open):
                self._end(token, "ended")
            for token in [self.token, *self._tool_tokens.values()]:
                if token is not None:
                    progress.tokens.pop(token, None)

    def end_now(self, message: str) -> None:
        """End every progress begun and not ended, at once (the process is about to go)."""

        for token in list(self._open):
            self._end(token, message)

    def _end(self, token: Any, message: str) -> None:
        if token in self._open:
            self._open.discard(token)
            try:
                self._ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
            except Exception as exc:  # noqa: BLE001 - the client is gone: nothing to end
                log.debug("progress end for %s failed: %s", token, exc)

    async def _on_event(self, event: Event | ToolStillRunning) -> None:
        if isinstance(event, ToolStillRunning):
            await self._begin_tool(event.tool_call_id)
        elif isinstance(event, ToolCallEvent):
            self._summaries[event.tool_call_id] = event.summary
        elif isinstance(event, ToolCallUpdate):
            await self._on_tool_update(event)
        elif isinstance(event, RequestEnd) and self.token is not None:
            for token in list(self._tool_tokens.values()):
                self._end(token, event.stop_reason)
            self._end(self.token, event.stop_reason)

    async def _on_tool_update(self, event: ToolCallUpdate) -> None:
        progress = self._ls.work_done_progress
        summary = self._summaries.get(event.tool_call_id, "")
        if event.status == "in_progress":
            if self.token is not None:
                progress.report(self.token, types.WorkDoneProgressReport(message=f"{event.name} {summary}".strip()))
            self._running[event.tool_call_id] = event.name
        elif event.status == "awaiting_approval" and self.token is not None:
            progress.report(self.token, types.WorkDoneProgressReport(message=f"waiting for approval: {event.name}"))
        elif event.status in FINAL_TOOL_STATUSES:
            self._running.pop(event.tool_call_id, None)
            outcome = _outcome(event)
            if self.token is not None:
                progress.report(self.token, types.WorkDoneProgressReport(message=f"{event.name} {outcome}"))
            token = self._tool_tokens.pop(event.tool_call_id, None)
            if token is not None:
                self._end(token, outcome)
                progress.tokens.pop(token, None)


    async def _begin_tool(self, tool_call_id: str) -> None:
        """The tool call's own token, when it is still running (the worker has seen no final
        status for it): created, then begun."""

        name = self._running.get(tool_call_id)
        if name is None or self._closing or tool_call_id in self._tool_tokens:
            return
        token = f"tunacode/{self._request_id}/{tool_call_id}"
        if await self._create(token) and not self._closing:  # created late: never begun
            self._tool_tokens[tool_call_id] = token
            self._ls.work_done_progress.begin(
                token, types.WorkDoneProgressBegin(title=name, message=self._summaries.get(tool_call_id, "")))
            self._open.add(token)


def _outcome(event: ToolCallUpdate) -> str:
    if event.status == "completed":
        return f"completed in {event.duration_ms or 0} ms"
    if event.status == "failed":
        return f"failed: {first_line(event.result or 'error', 120)}"
    return "cancelled"


class LspSink:
    """AgentSink for one request over LSP.

    Adjacent text (or thinking) deltas are merged and sent at most every DELTA_INTERVAL
    seconds, as the contract allows: a fast model sends hundreds of tiny chunks a second,
    and each notification costs the server and the client far more than its few bytes.
    Any other event flushes the pending delta first, so the order is kept. No delta
    notification carries more than MAX_DELTA_CHARS (a bigger one is split).
    """

    DELTA_INTERVAL = 0.016

    def __init__(
        self, ls: LanguageServer, *, session_id: str, request_id: str, prompt: str, client_token: Any, seq: int = 0
    ) -> None:
        self._ls = ls
        self._session_id = session_id
        self._request_id = request_id
        self._seq = seq  # events already sent for this request (a queued one's request_queued)
        self._pending: TextDelta | ThinkingDelta | None = None
        self._flush_handle: asyncio.TimerHandle | None = None
        self.progress = ProgressReporter(ls, request_id, prompt, client_token)

    def emit(self, event: Event) -> None:
        if isinstance(event, TextDelta | ThinkingDelta):
            text = event.text
            for start in range(0, len(text), MAX_DELTA_CHARS):  # a model may send megabytes at once
                self._merge(type(event)(text[start : start + MAX_DELTA_CHARS]))
            return
        self._flush()
        self._send(event)
        self.progress.push(event)

    def _merge(self, delta: TextDelta | ThinkingDelta) -> None:
        pending = self._pending
        if type(pending) is type(delta) and len(pending.text) + len(delta.text) <= MAX_DELTA_CHARS:
            self._pending = type(delta)(pending.text + delta.text)
            return
        self._flush()
        self._pending = delta
        self._flush_handle = asyncio.get_running_loop().call_later(self.DELTA_INTERVAL, self._flush)

    def _flush(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if self._pending is not None:
            pending, self._pending = self._pending, None
            self._send(pending)

    def _send(self, event: Event) -> None:
        """One `tunacode/event`, written as a plain JSON-RPC object: the payload is JSON data
        already, so pygls's notification type and its unstructuring of it are skipped."""

        self._seq += 1
        payload = {"sessionId": self._session_id, "requestId": self._request_id, "seq": self._seq}
        payload.update(to_wire(event))
        send_payload(self._ls.protocol, {"jsonrpc": "2.0", "method": EVENT_NOTIFICATION, "params": payload})

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask the user; the request is withdrawn ($/cancelRequest) if the run stops waiting."""

        if client_offers(self._ls, "approve"):
            method = APPROVE_REQUEST
            params: Any = to_wire(ApproveParams(
                self._session_id, self._request_id, request.tool_call_id, request.tool_name, request.summary,
                request.detail, request.detail_kind, request.truncated, request.runs_code_outside,
                rule=request.rule or None, always_allow=list(request.always_allow) or None,
            ))
        else:
            method = types.WINDOW_SHOW_MESSAGE_REQUEST
            params = types.ShowMessageRequestParams(
                type=types.MessageType.Warning,
                message=approval_message(request),
                actions=[
                    types.MessageActionItem(title=t)
                    for t in [*APPROVAL_ACTIONS, *(ALWAYS_ACTIONS if request.always_allow else ())]
                ],
            )
        msg_id = f"tunacode-approval-{request.tool_call_id}-{self._seq}"
        future = asyncio.wrap_future(self._ls.protocol.send_request(method, params, msg_id=msg_id))
        try:
            answer = await future
        except asyncio.CancelledError:
            drop_pending_request(self._ls, msg_id)  # a late answer is dropped quietly
            self._ls.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            raise
        except Exception as exc:  # the client failed to ask: nothing runs unasked
            log.warning("approval request failed: %s", exc)
            return "deny"
        return decision_of(answer)

    async def close(self) -> None:
        self._flush()
        await self.progress.close()
