"""Running requests under the server: start, track, abort, finish.

Each `tunacode.request` runs as the command's own asyncio task and is tracked here by
request id, session id, JSON-RPC message id and progress token, so that `tunacode.abort`,
`$/cancelRequest` and `window/workDoneProgress/cancel` all reach the same run. A session
runs one request at a time: in this process (the active table) and across processes (the
store's lease).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInternalError, JsonRpcRequestCancelled

from tunacode_lsp.agent.config import ServerOptions
from tunacode_lsp.agent.models import ModelNotUsable, ResolvedModel, default_model, resolve_model, split_model_string
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
)
from tunacode_lsp.core.text import shown
from tunacode_lsp.store.errors import UnreadableMessageError
from tunacode_lsp.store.records import iso_from_us

if TYPE_CHECKING:
    from tunacode_lsp.agent.runner import RequestRun
    from tunacode_lsp.lsp.server import TunaLanguageServer
    from tunacode_lsp.tools import LineRefLedger

# What a request needs and start-up does not: imported with the first request, or earlier
# on a worker thread by `warm_up` once the client is initialized.
AGENT_MODULES = ("tunacode_lsp.agent.runner", "tunacode_lsp.lsp.sink", "tunacode_lsp.store.session_store")


def warm_up() -> None:
    import importlib

    try:
        for name in AGENT_MODULES:
            importlib.import_module(name)
    except Exception:  # the first request will import (and report) it again
        log.exception("warming up the agent modules failed")

log = logging.getLogger(__name__)


@dataclass
class ActiveRun:
    run: RequestRun
    msg_id: Any
    cancelled_by_rpc: bool = False

    @property
    def request_id(self) -> str:
        return self.run.spec.request_id

    @property
    def session_id(self) -> str:
        return self.run.spec.session_id


class RequestService:
    def __init__(self, ls: TunaLanguageServer) -> None:
        self._ls = ls
        self._active: dict[str, ActiveRun] = {}
        self._session_allowed: dict[str, set[str]] = {}  # "Allow for this session"
        self._line_refs: dict[str, LineRefLedger] = {}  # what each session's model has read

    # ------------------------------------------------------------ lookups

    def active(self) -> list[ActiveRequest]:
        return [ActiveRequest(a.request_id, a.session_id, iso_from_us(int(a.run.started_at * 1_000_000))) for a in self._active.values()]

    def is_busy(self, session_id: str) -> bool:
        return any(a.session_id == session_id for a in self._active.values())

    def abort(self, *, session_id: str | None = None, request_id: str | None = None) -> int:
        count = 0
        for active in list(self._active.values()):
            if (request_id is not None and active.request_id == request_id) or (
                session_id is not None and active.session_id == session_id
            ):
                count += active.run.abort("cancelled")
        return count

    def cancel_by_msg_id(self, msg_id: Any) -> bool:
        """`$/cancelRequest` for a pending tunacode.request: abort it and answer RequestCancelled."""

        for active in self._active.values():
            if active.msg_id == msg_id:
                active.cancelled_by_rpc = True
                active.run.abort("cancelled")
                return True
        return False

    def cancel_by_progress_token(self, token: Any) -> bool:
        for active in self._active.values():
            progress = getattr(active.run.sink, "progress", None)
            if progress is not None and progress.token == token:
                active.run.abort("cancelled")
                return True
        return False

    # ------------------------------------------------------------ a request

    def model_spec(self, spec: str | None) -> str:
        """The model string a new session records: checked for form, not for a key."""

        spec = spec or self._ls.options.model or default_model()
        try:
            split_model_string(spec)
        except ModelNotUsable as exc:
            raise ParamsError(f"params.model: {exc}") from None
        return spec

    def _model(self, spec: str | None) -> ResolvedModel:
        options = self._ls.options
        try:
            return resolve_model(spec or options.model, base_url=options.base_url, read_timeout=options.stream_read_timeout)
        except ModelNotUsable as exc:
            raise CommandError(MODEL_NOT_USABLE, str(exc)) from None

    async def run(self, params: RequestParams, *, work_done_token: Any, msg_id: Any) -> RequestResult:
        from tunacode_lsp.agent.ports import RequestSpec
        from tunacode_lsp.agent.runner import RequestRun, new_request_id
        from tunacode_lsp.lsp.sink import LspSink
        from tunacode_lsp.tools import LineRefLedger, ToolSettings

        ls = self._ls
        options: ServerOptions = ls.options
        sessions: SessionService = ls.sessions
        root = ls.workspace_root

        if params.session_id is not None:
            record = await sessions.get(params.session_id)
            if record is None:
                raise CommandError(UNKNOWN_SESSION, f"unknown session {shown(params.session_id)}")
            model = self._model(params.model or record.model or None)
            session_id = record.session_id
        else:
            model = self._model(params.model)
            record = await sessions.create(cwd=str(root), model=model.spec)
            session_id = record.session_id

        if self.is_busy(session_id) or not await sessions.acquire(session_id):
            raise CommandError(SESSION_BUSY, f"session {session_id} is busy with another request")
        try:
            try:
                history = await sessions.history(session_id)
            except UnreadableMessageError as exc:
                raise JsonRpcInternalError(message=f"session {session_id} cannot be read: {exc}") from None
            spec = RequestSpec(
                request_id=new_request_id(),
                session_id=session_id,
                prompt=params.prompt,
                model=model,
                workspace_root=root,  # never a stored cwd: an imported document must not widen confinement
                history=history,
                max_turns=params.max_turns or options.max_turns,
                timeout=options.request_timeout,
                max_retries=options.max_retries,
                approval=options.approval,
                tool_settings=ToolSettings(shell_inherit_secrets=options.shell_inherit_secrets),
                tool_concurrency=options.tool_concurrency,
                history_token_budget=options.history_token_budget,
                session_allowed_tools=self._session_allowed.setdefault(session_id, set()),
                line_refs=self._line_refs.setdefault(session_id, LineRefLedger()),
            )
            sink = LspSink(
                ls,
                session_id=session_id,
                request_id=spec.request_id,
                prompt=params.prompt,
                client_token=work_done_token,
            )
            run = RequestRun(spec, sink, StoreMessageLog(sessions, session_id, model.spec))
            active = ActiveRun(run, msg_id)
            self._active[spec.request_id] = active
            started = time.monotonic()
            try:
                result = await run.run()
            finally:
                del self._active[spec.request_id]
                await sink.close()
            log.info(
                "request %s in %s ended: %s after %.2f s",
                spec.request_id, session_id, result.stop_reason, time.monotonic() - started,
            )
        finally:
            await sessions.release(session_id)
        if active.cancelled_by_rpc:
            raise JsonRpcRequestCancelled(message=f"request {spec.request_id} was cancelled")
        return result
