"""Running requests for any front end (LSP, ACP, tests): reserve, build, track, abort, finish.

A request is registered the moment its handler starts (`begin`, synchronous, before any
await): from then on every abort route reaches it, and a second request on the same
session is refused before anything is awaited. Each request holds the session's store
lease under an owner of its own, so two requests of one server can never share it.

Per-session memory of this process (the "Allow for this session" set, the line numberings
the model has read, the busy reservation) lives in one `SessionState`, dropped when the
session is deleted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from tunacode_lsp.agent.checkpoints import Checkpoints
from tunacode_lsp.agent.config import ServerOptions
from tunacode_lsp.agent.detached import DetachedResults
from tunacode_lsp.agent.models import (
    ModelNotUsable,
    ResolvedModel,
    default_model,
    provider_settings,
    resolve_model,
    split_model_string,
)
from tunacode_lsp.agent.sessions import SessionService, StoreMessageLog
from tunacode_lsp.contract.errors import CommandError
from tunacode_lsp.contract.protocol import (
    MODEL_NOT_USABLE,
    SESSION_BUSY,
    UNKNOWN_SESSION,
    ActiveRequest,
    ParamsError,
    RequestParams,
    RequestResult,
    SettingsFileInfo,
    SettingsInfo,
    SettingValue,
    parse_context,
)
from tunacode_lsp.core.text import shown
from tunacode_lsp.store.errors import UnreadableMessageError
from tunacode_lsp.store.leases import new_owner
from tunacode_lsp.store.locations import data_dir
from tunacode_lsp.store.records import iso_from_us

if TYPE_CHECKING:  # the agent loop and the tools load with the first request, not at start-up
    from tinyagent.agent_types import AgentTool

    from tunacode_lsp.agent.context import TextOf
    from tunacode_lsp.agent.ports import AgentSink
    from tunacode_lsp.agent.runner import RequestRun
    from tunacode_lsp.tools import LineRefLedger
    from tunacode_lsp.tools.background import BackgroundProcesses
    from tunacode_lsp.tools.diagnostics import DiagnosticsSource
    from tunacode_lsp.tools.documents import DocumentOverlay

    class ClosableSink(AgentSink, Protocol):
        async def close(self) -> None: ...

log = logging.getLogger(__name__)

SINK_CLOSE_SECONDS = 2.0  # the answer never waits longer on the client's side of the sink
MAX_EARLY_STEERS = 8  # steers kept for a request that is still starting
MAX_QUEUED = 16  # requests waiting for their turn on one session (queue: true); more is -32002


SinkFactory = Callable[[str, str, str], "ClosableSink"]  # (session_id, request_id, prompt) -> sink


class SessionUnreadable(Exception):
    """The session's stored history cannot be read back (an internal error for the client)."""


@dataclass
class SessionState:
    """What this process remembers of one session between its requests."""

    allowed_tools: set[str] = field(default_factory=set)  # "Allow for this session"
    line_refs: LineRefLedger = field(default_factory=lambda: _new_ledger())  # line numberings the model saw
    running: PendingRun | None = None  # the busy reservation
    waiting: deque[PendingRun] = field(default_factory=deque)  # queued requests, next first
    notices: set[str] = field(default_factory=set)  # once-per-session notices already given


def _new_ledger() -> LineRefLedger:
    from tunacode_lsp.tools import LineRefLedger

    return LineRefLedger()


class PendingRun:
    """One request, from its handler's first line to its answer.

    `run` exists once the agent run is built; an abort before that is remembered and given
    to the run as soon as it exists, so the model is never called for an aborted request."""

    def __init__(self, request_id: str, session_id: str | None, tag: Any) -> None:
        self.request_id = request_id
        self.session_id = session_id
        self.tag = tag  # the front end's handle: the JSON-RPC message id under LSP
        self.started_at = time.time()
        self.run: RequestRun | None = None
        self.abort_reason: str | None = None
        self.sink: ClosableSink | None = None
        self.steers: list[str] = []  # steers that came before the run was built
        self.queued = False  # waiting for the session (queue: true); its turn resolves True, or False if dropped
        self.turn: asyncio.Future[bool] | None = None

    def abort(self, reason: str = "cancelled") -> bool:
        """Stop the request now (a queued one is dropped); False when it was already stopping."""

        if self.abort_reason is not None:
            return False
        self.abort_reason = reason
        if self.run is not None:
            self.run.abort(reason)
        if self.turn is not None and not self.turn.done():
            self.turn.set_result(False)
        return True

    def steer(self, text: str) -> bool:
        """A user message for the running request's next turn boundary (RequestRun.steer)."""

        if self.abort_reason is not None or self.queued or not self.request_id:
            return False
        if self.run is not None:
            return self.run.steer(text)
        if len(self.steers) >= MAX_EARLY_STEERS:
            return False
        self.steers.append(text)  # given to the run as soon as it exists
        return True

    def info(self) -> ActiveRequest:
        return ActiveRequest(
            self.request_id, self.session_id or "", iso_from_us(int(self.started_at * 1_000_000)), self.queued
        )


class RunService:
    """Every request of this process, by request id; the per-session states."""

    def __init__(
        self,
        sessions: Callable[[], SessionService],
        options: Callable[[], ServerOptions],
        workspace_root: Callable[[], Path],
    ) -> None:
        self._sessions = sessions
        self._options = options
        self._workspace_root = workspace_root
        self._pending: dict[str, PendingRun] = {}
        self._states: dict[str, SessionState] = {}
        self._idle: asyncio.Event | None = None  # set when no request is pending
        self.checkpoints = Checkpoints(sessions)  # the workspace before and after each request
        self._background: BackgroundProcesses | None = None
        self.detached = DetachedResults()  # detached requests' outcomes, until read

    # ------------------------------------------------------------ lookups

    def active(self) -> list[ActiveRequest]:
        return [p.info() for p in self._pending.values() if p.session_id is not None]

    def pending(self) -> list[PendingRun]:
        return list(self._pending.values())

    def is_busy(self, session_id: str) -> bool:
        state = self._states.get(session_id)
        return state is not None and state.running is not None

    def session_state(self, session_id: str) -> SessionState:
        return self._states.setdefault(session_id, SessionState())

    @property
    def background_processes(self) -> BackgroundProcesses:
        """The background commands of this server's sessions (tools/background.py)."""
        if self._background is None:
            from tunacode_lsp.tools.background import BackgroundProcesses

            self._background = BackgroundProcesses()
        return self._background

    def forget_session(self, session_id: str) -> None:
        """Drop what this process remembers of a deleted session."""

        if self._background is not None:
            self._background.kill_session(session_id)  # its background commands end with it

        self.detached.forget_session(session_id)
        state = self._states.get(session_id)
        if state is not None and state.running is None and not state.waiting:
            del self._states[session_id]

    def abort(self, *, session_id: str | None = None, request_id: str | None = None, reason: str = "cancelled") -> int:
        """Abort by request id (a queued request is dropped), or the running request of a
        session (its queued requests keep their place: the next one then starts)."""

        count = 0
        for pending in list(self._pending.values()):
            if (request_id is not None and pending.request_id == request_id) or (
                session_id is not None and pending.session_id == session_id and not pending.queued
            ):
                count += pending.abort(reason)
        return count

    def abort_all(self, reason: str = "cancelled") -> int:
        return sum(p.abort(reason) for p in list(self._pending.values()))

    def steer(self, session_id: str, text: str) -> bool:
        """`text` for the session's running request (False: none, or no turn boundary left)."""

        state = self._states.get(session_id)
        return state is not None and state.running is not None and state.running.steer(text)

    def find(self, predicate: Callable[[PendingRun], bool]) -> PendingRun | None:
        return next((p for p in self._pending.values() if predicate(p)), None)

    # ------------------------------------------------------------ models

    async def effective_options(self, root: Path | None = None) -> ServerOptions:
        """The editor's settings under the settings files (user, then project), as a request sees them."""

        from tunacode_lsp.agent.settings_files import effective_settings

        return (await effective_settings(self._options(), root or self._workspace_root())).options

    def model_spec(self, spec: str | None, options: ServerOptions | None = None) -> str:
        """The model string a new session records: checked for form, not for a key."""

        spec = spec or (options or self._options()).model or default_model()
        try:
            split_model_string(spec)
        except ModelNotUsable as exc:
            raise ParamsError(f"params.model: {exc}") from None
        return spec

    def check_model(self, spec: str | None, options: ServerOptions | None = None) -> None:
        """-32003 now when the model cannot be used (a detached request checks before it answers,
        with the settings files' `options`, as the request itself will)."""

        self._model(spec, options)

    def _model(self, spec: str | None, options: ServerOptions | None = None) -> ResolvedModel:
        options = options or self._options()
        try:
            return resolve_model(
                spec or options.model,
                base_url=options.base_url,
                read_timeout=options.stream_read_timeout,
                text_tool_calls=options.text_tool_calls,  # auto | on | off
                **provider_settings(options),
            )
        except ModelNotUsable as exc:
            raise CommandError(MODEL_NOT_USABLE, str(exc)) from None

    # ------------------------------------------------------------ settings files

    async def settings_info(self, root: Path | None = None) -> SettingsInfo:
        """The effective settings and where each came from (`tunacode.status`)."""

        from tunacode_lsp.agent.settings_files import effective_settings

        effective = await effective_settings(self._options(), root or self._workspace_root())
        return SettingsInfo(
            {key: SettingValue(value, source) for key, (value, source) in effective.values.items()},
            [
                SettingsFileInfo(f.source, f.path, f.exists, f.fingerprint, f.consented, list(f.held_back), list(f.problems))
                for f in effective.files
            ],
        )

    async def consent_project_settings(self, fingerprint: str, persist: bool, root: Path | None = None) -> str:
        """Consent to the project settings file as it is now; ParamsError when `fingerprint` is
        not its current content's (it changed since the user looked)."""

        from tunacode_lsp.agent.settings_consent import record_consent
        from tunacode_lsp.agent.settings_files import load_settings_files

        root = root or self._workspace_root()
        _user, project = await asyncio.to_thread(load_settings_files, root)
        if project.fingerprint is None or project.fingerprint != fingerprint:
            raise ParamsError(
                f"params.fingerprint is not that of {project.path} as it is now (it changed, or it cannot be read); "
                "look at the file again (tunacode.status) and consent to what you see"
            )
        await asyncio.to_thread(record_consent, root, fingerprint, persist=persist)
        return project.path

    # ------------------------------------------------------------ a request

    def begin(self, params: RequestParams, *, tag: Any = None) -> PendingRun:
        """Register a request and reserve its session, synchronously (no await before it).

        With `params.queue` a busy session queues the request instead (`wait_turn`)."""

        from tunacode_lsp.agent.runner import new_request_id

        pending = PendingRun(new_request_id(), params.session_id, tag)
        if params.session_id is not None:
            state = self.session_state(params.session_id)
            if params.queue and state.running is not None:
                if len(state.waiting) >= MAX_QUEUED:
                    raise CommandError(SESSION_BUSY, f"session {params.session_id} already has {MAX_QUEUED} queued requests")
                pending.queued = True
                pending.turn = asyncio.get_running_loop().create_future()
                state.waiting.append(pending)
            else:
                self._reserve(params.session_id, pending)
        self._pending[pending.request_id] = pending
        return pending

    def queue_position(self, pending: PendingRun) -> int:
        """1 for the next request to start; 0 when it is not queued."""

        state = self._states.get(pending.session_id or "")
        if state is None or pending not in state.waiting:
            return 0
        return list(state.waiting).index(pending) + 1

    async def wait_turn(self, pending: PendingRun) -> bool:
        """Until the session is this request's (True at once when it was not queued); False
        when it was dropped while it waited (its own cancel or abort, a shutdown)."""

        if pending.turn is None:
            return True
        return await pending.turn

    def _promote(self, state: SessionState) -> None:
        """The session is free: its next queued request (not dropped meanwhile) starts."""

        while state.waiting and state.running is None:
            nxt = state.waiting.popleft()
            if nxt.abort_reason is not None:
                continue
            state.running = nxt
            nxt.queued = False
            if nxt.turn is not None and not nxt.turn.done():
                nxt.turn.set_result(True)

    def _reserve(self, session_id: str, pending: PendingRun) -> None:
        state = self.session_state(session_id)
        if state.running is not None and state.running is not pending:
            raise CommandError(SESSION_BUSY, f"session {session_id} is busy with another request")
        state.running = pending
        pending.session_id = session_id

    @contextmanager
    def holding(self, session_id: str) -> Iterator[None]:
        """Reserve an idle session for a command that rewrites it (a rewind): a request on it is
        refused meanwhile (-32002), and the command is refused while one runs."""

        marker = PendingRun("", session_id, None)
        self._reserve(session_id, marker)
        try:
            yield
        finally:
            state = self._states.get(session_id)
            if state is not None and state.running is marker:
                state.running = None
                self._promote(state)

    async def settled(self, timeout: float) -> bool:
        """Wait (bounded) until every pending request has ended; False on timeout."""

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if self._pending:
            self._idle = self._idle or asyncio.Event()
            try:
                await asyncio.wait_for(self._idle.wait(), timeout)
            except TimeoutError:
                return False
        # stopped requests' last snapshots: recorded before the process goes
        return await self.checkpoints.settled(None, max(0.0, deadline - loop.time()))

    def end(self, pending: PendingRun) -> None:
        """Forget a request (every path: answered, failed, refused)."""

        self._pending.pop(pending.request_id, None)
        if not self._pending and self._idle is not None:
            self._idle.set()
            self._idle = None
        if pending.session_id is not None:
            state = self._states.get(pending.session_id)
            if state is not None:
                if pending in state.waiting:
                    state.waiting.remove(pending)
                if state.running is pending:
                    state.running = None
                    self._promote(state)

    async def run(
        self,
        pending: PendingRun,
        params: RequestParams,
        make_sink: SinkFactory,
        *,
        text_of: TextOf | None = None,
        diagnostics: DiagnosticsSource | None = None,
        extra_tools: tuple[list[AgentTool], frozenset[str]] = ([], frozenset()),
        documents: DocumentOverlay | None = None,
        workspace_root: Path | None = None,
        approval: str | None = None,
    ) -> RequestResult:
        """Resolve the model and session, hold the lease, run the agent, release everything.

        `workspace_root` overrides the service's root for this request (ACP: each session has
        its own cwd). The caller calls `end(pending)` afterwards, whatever happened."""

        from tunacode_lsp.agent.catalog import model_facts
        from tunacode_lsp.agent.commands import allowed_tool_names, expand_prompt
        from tunacode_lsp.agent.context import resolve_context
        from tunacode_lsp.agent.ports import RequestSpec
        from tunacode_lsp.agent.runner import RequestRun
        from tunacode_lsp.agent.settings_files import effective_settings, save_allow_rules
        from tunacode_lsp.tools import ToolSettings
        from tunacode_lsp.tools.kept_outputs import keeping_outputs, session_outputs_dir

        options = self._options()
        sessions = self._sessions()
        root = workspace_root if workspace_root is not None else self._workspace_root()
        settings = await effective_settings(options, root)  # the settings files, under the editor's settings
        options = settings.options
        if approval is not None:  # the session's own choice (ACP configOptions)
            options = attrs.evolve(options, approval=approval)
        command = await asyncio.to_thread(expand_prompt, params.prompt, root) if params.prompt.lstrip().startswith("/") else None
        if command is not None:  # `/name args`: the command's body (agent/commands.py)
            if not command.prompt.strip():
                raise ParamsError(f"params.prompt: the command /{command.command.name} has an empty body")
            params = attrs.evolve(params, prompt=command.prompt, model=params.model or command.command.model)

        if params.session_id is not None:
            record = await sessions.get(params.session_id)
            if record is None:
                raise CommandError(UNKNOWN_SESSION, f"unknown session {shown(params.session_id)}")
            # the request's model, else the configured one (setting, flag, TUNACODE_MODEL), else the session's own
            model = self._model(params.model or options.model or record.model or None, options)
        else:
            record, model = None, self._model(params.model, options)
        facts = await asyncio.to_thread(  # the catalog is read on first use: off the event loop
            model_facts, model.provider, model.model_id, context_window=options.context_window,
            image_input=options.image_input, model_cost=options.model_cost,
        )
        context = await asyncio.to_thread(
            resolve_context, parse_context(params.context), root,
            model_id=model.model_id, image_input=facts.image_input, text_of=text_of,
        ) if params.context else None  # checked before anything is created
        if record is None:
            record = await sessions.create(cwd=str(root), model=model.spec)
            self._reserve(record.session_id, pending)
        session_id = record.session_id
        state = self.session_state(session_id)

        notices: list[str] = []
        for notice in settings.notices():  # once per session: a held-back project file, a bad rule
            if f"settings:{notice}" not in state.notices:
                state.notices.add(f"settings:{notice}")
                notices.append(notice)
        if facts.notice and f"catalog:{model.spec}" not in state.notices:
            state.notices.add(f"catalog:{model.spec}")
            notices.append(facts.notice)
        if options.shell_sandbox == "auto" and "sandbox" not in state.notices:
            from tunacode_lsp.tools.sandbox import sandbox_state

            sandbox = await asyncio.to_thread(sandbox_state, options.shell_sandbox)  # a probe, once per process
            if not sandbox.active:
                state.notices.add("sandbox")
                notices.append(
                    f"Shell commands run without a sandbox: {sandbox.reason}. They can write outside the "
                    "workspace; set shellSandbox to \"required\" to refuse them instead (docs/tools.md)."
                )
        owner = new_owner()  # one lease owner per request
        if not await sessions.acquire(session_id, owner):
            raise CommandError(SESSION_BUSY, f"session {session_id} is busy with another request")
        try:
            checkpoint = await self.checkpoints.begin(session_id, pending.request_id, root)  # before the prompt is stored
            notices += checkpoint.notices
            try:
                history = await sessions.history(session_id)
            except UnreadableMessageError as exc:
                raise SessionUnreadable(f"session {session_id} cannot be read: {exc}") from None
            spec = RequestSpec(
                request_id=pending.request_id,
                session_id=session_id,
                prompt=params.prompt,
                model=model,
                workspace_root=root,  # never a stored cwd: an imported document must not widen confinement
                history=history,
                max_turns=params.max_turns or options.max_turns,
                max_cost=params.max_cost,
                timeout=options.request_timeout,
                max_retries=options.max_retries,
                approval=options.approval,
                tool_settings=ToolSettings(
                    shell_inherit_secrets=options.shell_inherit_secrets,
                    shell_sandbox=options.shell_sandbox,
                    shell_network=options.shell_network,
                    tool_timeouts=dict(options.tool_timeouts or {}),
                    outputs_dir=session_outputs_dir(data_dir(), session_id),  # cut results kept whole
                    background=self.background_processes.for_session(session_id),
                    web_private_addresses=options.web_fetch_private_addresses,
                    shell_env_passthrough=tuple(options.shell_env_passthrough),
                    shell_read_only_paths=tuple(options.shell_read_only_paths),
                ),
                tool_concurrency=options.tool_concurrency,
                history_token_budget=options.history_token_budget,
                context_window=facts.context_window,
                model_cost=facts.cost,
                compact_threshold=options.compact_threshold,
                session_allowed_tools=state.allowed_tools,
                session_notices=state.notices,
                line_refs=state.line_refs,
                context=context,
                diagnostics=diagnostics,
                extra_tools=keeping_outputs(extra_tools[0], session_outputs_dir(data_dir(), session_id)),  # MCP: cut results kept whole
                extra_changing_tools=extra_tools[1],
                start_notices=notices,
                documents=documents,
                checkpoint=checkpoint.step,
                rules=settings.rules,
                hooks=settings.hooks,
                mode=params.mode or "agent",
                allowed_tools=allowed_tool_names(command.command) if command is not None else None,
                save_rules=lambda scope, rules: asyncio.to_thread(save_allow_rules, scope, rules, root),
            )
            sink = make_sink(session_id, pending.request_id, params.prompt)
            pending.sink = sink
            run = RequestRun(spec, sink, StoreMessageLog(sessions, session_id, model.spec))
            pending.run = run
            if pending.abort_reason is not None:  # aborted while it was starting
                run.abort(pending.abort_reason)
            for text in pending.steers:  # steered while it was starting
                run.steer(text)
            started = time.monotonic()
            try:
                result = await run.run()
                edits = documents.buffer_edits() if documents is not None else []
                if result.stop_reason in ("cancelled", "timeout"):
                    # a stopped request answers at once: its last snapshot (a `git status` of the
                    # workspace, ~100 ms at 30,000 files) is taken after the answer
                    checkpoint.finish_later(edits)
                else:
                    result.changed_files = await checkpoint.finish(edits)
            finally:
                await sessions.release(session_id, owner)  # never waits on the client
                try:
                    await asyncio.wait_for(sink.close(), SINK_CLOSE_SECONDS)
                except TimeoutError:
                    log.warning("the sink of %s did not close within %.1f s", spec.request_id, SINK_CLOSE_SECONDS)
            log.info(
                "request %s in %s ended: %s after %.2f s",
                spec.request_id, session_id, result.stop_reason, time.monotonic() - started,
            )
            return result
        except BaseException:
            if pending.run is None:
                await sessions.release(session_id, owner)
            raise
