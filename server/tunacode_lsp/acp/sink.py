"""The agent's sink under ACP: events become `session/update`s, approvals `session/request_permission`.

Events are queued and sent in order by one task per request (emit is synchronous, sending
is not); adjacent text or thinking deltas already queued are sent as one chunk of at most
MAX_DELTA_CHARS. Before asking a permission the queue is drained, so the client has seen
the tool call it is asked about. The permission wait is bounded: no answer is a denial.

For write_file and edit_file the file's text is kept when the call starts, and the
completed call carries a `diff` content (old and new text): the texts the edit was planned on
and wrote when it went through the client (acp/documents.py), else the disk before and after.
"""

from __future__ import annotations

import asyncio
import logging
import re
import stat
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import Any

from acp import schema
from acp.interfaces import Client

from tunacode_lsp.acp import updates
from tunacode_lsp.acp.documents import AcpDocuments
from tunacode_lsp.agent.ports import ApprovalDecision, ApprovalRequest
from tunacode_lsp.contract.protocol import Event, TextDelta, ThinkingDelta, ToolCallEvent, ToolCallUpdate
from tunacode_lsp.core.text import visible_blanks
from tunacode_lsp.tools.beneath import read_beneath
from tunacode_lsp.tools.errors import ToolError

log = logging.getLogger(__name__)

MAX_DELTA_CHARS = 8_000
MAX_DIFF_FILE_BYTES = 1_000_000  # larger files get no diff content (the result text says what changed)
CLOSE_SECONDS = 1.5

PERMISSION_OPTIONS: dict[str, tuple[str, schema.PermissionOptionKind, ApprovalDecision]] = {
    "allow": ("Allow once", "allow_once", "allow"),
    "allow_session": ("Always allow in this session", "allow_always", "allow_session"),
    "deny": ("Reject", "reject_once", "deny"),
}
ALWAYS_OPTIONS: dict[str, tuple[str, schema.PermissionOptionKind, ApprovalDecision]] = {  # when a rule can allow it
    "allow_always_user": ("Always allow (user settings)", "allow_always", "allow_always_user"),
    "allow_always_project": ("Always allow (project settings)", "allow_always", "allow_always_project"),
}


def _read_text(real_root: Path, path: Path) -> str | None:
    """A regular text file's text for a diff; None for anything else (never opens a FIFO or
    device for reading in a way that blocks, never follows a link out of the root)."""

    try:
        info, data = read_beneath(real_root, path, str(path), MAX_DIFF_FILE_BYTES)
        if not stat.S_ISREG(info.st_mode) or len(data) > MAX_DIFF_FILE_BYTES:
            return None
        return data.decode("utf-8")
    except (OSError, ValueError, ToolError):
        return None


RUNS_CODE_OUTSIDE_NOTE = (
    "**Warning: your editor or tools run this file by themselves, outside the sandbox** "
    "(e.g. VS Code tasks on folder open, direnv, git hooks, CI)."
)


def fenced(text: str, lang: str) -> str:
    """A Markdown code block the text cannot close (its fence is longer than any backtick run
    in it), so a hostile command cannot render as anything but code in the client's prompt."""

    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def permission_content(request: ApprovalRequest) -> str:
    if request.runs_code_outside:  # an edit of .vscode/tasks.json, .envrc, ...: say so first
        return RUNS_CODE_OUTSIDE_NOTE + "\n\n" + permission_content(replace(request, runs_code_outside=False))
    said = ""
    if request.rule:
        said += f"\n\nAsked by the {request.rule}"
    if request.always_allow:
        said += "\n\n\"Always allow\" saves: " + ", ".join(f"`{visible_blanks(r)}`" for r in request.always_allow)
    return _permission_body(request) + said


def _permission_body(request: ApprovalRequest) -> str:
    if request.detail_kind == "command":
        return f"{request.summary}\n\n{fenced(visible_blanks(request.detail), 'sh')}"
    if request.detail_kind == "diff":
        cut = "\n\n(the diff was cut)" if request.truncated else ""
        return f"{request.summary}\n\n{fenced(request.detail, 'diff')}{cut}"
    return f"{request.summary}\n\n{fenced(request.detail, 'json')}"


def decision_of(response: Any) -> ApprovalDecision:
    """The client's answer; anything but a known selected option is a denial."""

    outcome = getattr(response, "outcome", None)
    if isinstance(outcome, schema.AllowedOutcome) and outcome.option_id in PERMISSION_OPTIONS:
        return PERMISSION_OPTIONS[outcome.option_id][2]
    if isinstance(outcome, schema.AllowedOutcome) and outcome.option_id in ALWAYS_OPTIONS:
        return ALWAYS_OPTIONS[outcome.option_id][2]
    return "deny"


class AcpSink:
    """AgentSink for one prompt of one ACP session."""

    def __init__(
        self, client: Client, session_id: str, real_root: Path, permission_timeout: float,
        documents: AcpDocuments | None = None,
    ) -> None:
        self._client = client
        self._session_id = session_id
        self._root = real_root
        self._permission_timeout = permission_timeout
        self._documents = documents  # edits that went through the client: their texts for the diff
        self._pending: deque[Event] = deque()  # emitted, not sent yet
        self._wake = asyncio.Event()  # something was emitted, or the sink closes
        self._idle = asyncio.Event()  # nothing is waiting or being sent
        self._idle.set()
        self._closing = False
        self._names: dict[str, tuple[str, dict[str, Any]]] = {}  # tool call id -> (name, args)
        self._before: dict[str, tuple[Path, str | None]] = {}  # edit calls: the file's text at the start
        self._task = asyncio.ensure_future(self._work())

    # ------------------------------------------------------------ events

    def emit(self, event: Event) -> None:
        if isinstance(event, ToolCallEvent):
            self._names[event.tool_call_id] = (event.name, event.args)
            if event.kind == "edit":
                path = updates.file_path(event.name, event.args, self._root)
                if path is not None:
                    self._before[event.tool_call_id] = (path, _read_text(self._root, path))
        if isinstance(event, TextDelta | ThinkingDelta) and len(event.text) > MAX_DELTA_CHARS:
            text = event.text  # a model may send megabytes at once
            self._pending.extend(type(event)(text[i : i + MAX_DELTA_CHARS]) for i in range(0, len(text), MAX_DELTA_CHARS))
        else:
            self._pending.append(event)
        self._idle.clear()
        self._wake.set()

    def _next(self) -> Event:
        """The oldest event; adjacent deltas of one kind already waiting are merged into it."""

        event = self._pending.popleft()
        if isinstance(event, TextDelta | ThinkingDelta):
            text = event.text
            while self._pending and isinstance(nxt := self._pending[0], type(event)):
                if len(text) + len(nxt.text) > MAX_DELTA_CHARS:
                    break
                text += nxt.text
                self._pending.popleft()
            event = type(event)(text)
        return event

    async def _work(self) -> None:
        while True:
            if not self._pending:
                self._idle.set()
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            event = self._next()
            try:
                update = self._update_of(event)
                if update is not None:
                    await self._client.session_update(session_id=self._session_id, update=update)
            except Exception as exc:  # noqa: BLE001 - a client that is gone loses updates, the run goes on
                log.info("session/update not sent: %s", exc)

    def _update_of(self, event: Event) -> updates.Update | None:
        if isinstance(event, ToolCallUpdate):
            extra: list[Any] = []
            if event.status == "completed" and event.tool_call_id in self._before:
                path, old = self._before.pop(event.tool_call_id)
                through_client = self._documents.applied.pop(path, None) if self._documents is not None else None
                new: str | None
                if through_client is not None:
                    old, new = through_client
                else:
                    new = _read_text(self._root, path)
                if new is not None and new != old:
                    extra.append(updates.diff_content(path, old, new))
            return updates.tool_progress(event, extra)
        return updates.simple_update(event, self._root)

    async def drained(self, timeout: float) -> None:
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            log.warning("updates for %s not sent within %.1f s", self._session_id, timeout)

    # ------------------------------------------------------------ approvals

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        """`session/request_permission`; a denial when the client fails, refuses or does not answer in time."""

        await self.drained(self._permission_timeout)
        name, args = self._names.get(request.tool_call_id, (request.tool_name, request.args))
        tool_call = schema.ToolCallUpdate(
            tool_call_id=request.tool_call_id,
            title=updates.tool_title(name, args),
            kind=updates.tool_kind(name),
            status="pending",
            content=[updates.text_content(permission_content(request))],
            locations=updates.locations(name, args, self._root),
            raw_input=args,
        )
        options = [
            schema.PermissionOption(option_id=option_id, name=label, kind=kind)
            for option_id, (label, kind, _) in [
                *PERMISSION_OPTIONS.items(), *(ALWAYS_OPTIONS.items() if request.always_allow else ())
            ]
        ]
        try:
            response = await asyncio.wait_for(
                self._client.request_permission(session_id=self._session_id, tool_call=tool_call, options=options),
                self._permission_timeout,
            )
        except TimeoutError:
            log.warning("no answer to the permission request for %s within %g s: denied",
                        request.tool_call_id, self._permission_timeout)
            return "deny"
        except Exception as exc:  # noqa: BLE001 - nothing runs that the user did not allow
            log.warning("the permission request for %s failed: %s; denied", request.tool_call_id, exc)
            return "deny"
        return decision_of(response)

    async def close(self) -> None:
        self._closing = True
        self._wake.set()
        done, _ = await asyncio.wait({self._task}, timeout=CLOSE_SECONDS)
        if not done:
            self._task.cancel()
