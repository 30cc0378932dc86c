"""Requests under LSP: the agent's runs service plus the LSP routes to them.

`tunacode.abort`, `$/cancelRequest` (by JSON-RPC message id, through lsp/cancels.py) and
`window/workDoneProgress/cancel` (by progress token) all reach the same `RequestSlot`
(agent/runs.py), from the moment the command's handler starts.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pygls import uris
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcRequestCancelled

from tunacode_lsp.agent.detached import DetachedError
from tunacode_lsp.agent.runs import RequestService, RequestSlot, SessionUnreadable
from tunacode_lsp.contract.errors import CommandError
from tunacode_lsp.contract.protocol import (
    EVENT_NOTIFICATION,
    ErrorInfo,
    Event,
    ParamsError,
    RequestEnd,
    RequestParams,
    RequestQueued,
    RequestResult,
    Usage,
    to_wire,
)
from tunacode_lsp.lsp.editor import diagnostics_source
from tunacode_lsp.lsp.plain_answers import announce_answer
from tunacode_lsp.lsp.pygls_compat import workspace_ready

if TYPE_CHECKING:
    from tunacode_lsp.agent.context import TextOf
    from tunacode_lsp.lsp.server import TunaLanguageServer

log = logging.getLogger(__name__)

# What a request needs and start-up does not is imported with the first request. `warm_up`
# imported it on a worker thread once the client was initialized: the first request was
# ~0.5 s faster, but an idle server held ~15 MB more (tinyagent, pydantic, httpx, the
# providers' modules: issue 35, idle RSS goal <= 1.2x of pygls + lsprotocol). Now it imports
# nothing; the modules load on first use.
AGENT_MODULES: tuple[str, ...] = ()


def warm_up(shell_sandbox: str = "off") -> None:
    """On a worker thread: the agent modules once the client is initialized (none now), and
    with the first request the shell sandbox's probe (a bubblewrap process, ~30 ms, once per
    process), which then runs while the request imports the agent instead of after it. Not
    at `initialized`: an idle server's `tunacode.status` would then meet the probe running
    and need a second worker thread (~0.2 MB of idle RSS)."""

    import importlib

    try:
        for name in AGENT_MODULES:
            importlib.import_module(name)
        if shell_sandbox != "off":
            from tunacode_lsp.tools.sandbox import sandbox_state

            sandbox_state(shell_sandbox)
    except Exception:  # the first request will import (and report) it again
        log.exception("warming up the agent modules failed")


class LspRequests(RequestService):
    """The runs service with the LSP cancel routes."""

    def __init__(self, ls: TunaLanguageServer) -> None:
        super().__init__(lambda: ls.sessions, lambda: ls.options, lambda: ls.workspace_root)
        self._ls = ls
        self._cancelled_by_rpc: set[str] = set()
        self._sandbox_probe_started = False

    def begin_lsp(self, params: RequestParams, msg_id: Any) -> RequestSlot:
        """`begin`, with its `$/cancelRequest` route in the server's registry (lsp/cancels.py):
        a cancel that overtook the handler's start applies at once."""

        if not self._sandbox_probe_started:  # see warm_up
            self._sandbox_probe_started = True
            asyncio.get_running_loop().run_in_executor(None, warm_up, self._ls.options.shell_sandbox)
        pending = self.begin(params, tag=msg_id)
        self._ls.cancels.register(msg_id, lambda: self._cancel_by_rpc(pending))
        return pending

    def _cancel_by_rpc(self, pending: RequestSlot) -> None:
        """`$/cancelRequest` for a pending tunacode.request: abort it and answer RequestCancelled."""

        self._cancelled_by_rpc.add(pending.request_id)
        pending.abort("cancelled")

    def end(self, pending: RequestSlot) -> None:
        if pending.tag is not None:
            self._ls.cancels.unregister(pending.tag)
        super().end(pending)

    def cancel_by_progress_token(self, token: Any) -> bool:
        def has_token(p: RequestSlot) -> bool:
            progress = getattr(p.sink, "progress", None)
            return progress is not None and progress.token == token

        pending = self.find(has_token)
        if pending is None:
            return False
        pending.abort("cancelled")
        return True

    def end_progress_now(self, message: str) -> None:
        """Every open `$/progress` of every request gets its `end` now (before `exit`)."""

        for pending in self.pending():
            progress = getattr(pending.sink, "progress", None)
            if progress is not None:
                progress.end_now(message)

    def open_documents(self) -> TextOf:
        """The editor's text of the documents open now (a snapshot taken on the event loop)."""

        texts: dict[str, str] = {}
        if workspace_ready(self._ls):
            for uri, document in self._ls.workspace.text_documents.items():
                if uri.startswith("file:"):
                    texts[os.path.realpath(uris.to_fs_path(uri) or "")] = document.source
        return lambda path: texts.get(str(path))

    def _notify(self, pending: RequestSlot, sent: int, event: Event) -> int:
        """One event of a request that has no sink yet (queued); the count of events sent."""

        payload = {"sessionId": pending.session_id or "", "requestId": pending.request_id, "seq": sent + 1}
        payload.update(to_wire(event))
        self._ls.protocol.notify(EVENT_NOTIFICATION, payload)
        return sent + 1

    async def serve_detached(self, pending: RequestSlot, params: RequestParams) -> None:
        """A detached request to its end: the outcome is kept for tunacode.request.result, and
        a request that failed before its first event still ends with `request_end`."""

        outcome: RequestResult | DetachedError
        try:
            outcome = await self.serve(pending, params, work_done_token=None)  # the server's own progress token
        except (CommandError, JsonRpcException) as exc:
            outcome = DetachedError(exc.code, exc.message, getattr(exc, "data", None))
        except ParamsError as exc:
            outcome = DetachedError(-32602, str(exc))
        except Exception as exc:  # noqa: BLE001 - kept as the answer it would have been
            log.exception("detached request %s failed", pending.request_id)
            outcome = DetachedError(-32603, f"internal error: {exc}")
        if isinstance(outcome, DetachedError) and pending.sink is None:  # it never started: no request_end yet
            self._notify(pending, 1 if pending.turn is not None else 0, RequestEnd("error", Usage(), ErrorInfo(outcome.message)))
        self.detached.ended(pending.request_id, outcome)

    async def serve(self, pending: RequestSlot, params: RequestParams, *, work_done_token: Any) -> RequestResult:
        """Run a registered request to its answer (the caller registered it with `begin`)."""

        from tunacode_lsp.lsp.documents import LspDocuments  # the tools load with the first request
        from tunacode_lsp.lsp.sink import LspSink

        sent = 0  # events sent before the run's own (request_queued)
        if pending.queued:
            sent = self._notify(pending, sent, RequestQueued(self.queue_position(pending)))
            if not await self.wait_turn(pending):  # dropped while it waited: it never started
                self.end(pending)
                self._notify(pending, sent, RequestEnd("cancelled", Usage()))
                if pending.request_id in self._cancelled_by_rpc:
                    self._cancelled_by_rpc.discard(pending.request_id)
                    raise JsonRpcRequestCancelled(message=f"request {pending.request_id} was cancelled before it started")
                return RequestResult(pending.session_id or "", pending.request_id, "cancelled", "", Usage(), 0, [])

        def make_sink(session_id: str, request_id: str, prompt: str) -> LspSink:
            return LspSink(
                self._ls, session_id=session_id, request_id=request_id, prompt=prompt, client_token=work_done_token, seq=sent
            )

        try:
            mcp_tools = self._ls.mcp.agent_tools() if self._ls.mcp is not None else ([], frozenset())
            result = await self.run(
                pending, params, make_sink,
                text_of=self.open_documents(), diagnostics=diagnostics_source(self._ls), extra_tools=mcp_tools,
                documents=LspDocuments(self._ls, Path(os.path.realpath(self._ls.workspace_root))),
            )
        except SessionUnreadable as exc:
            raise JsonRpcInternalError(message=str(exc)) from None
        finally:
            self.end(pending)
            cancelled = pending.request_id in self._cancelled_by_rpc
            self._cancelled_by_rpc.discard(pending.request_id)
        if cancelled:
            raise JsonRpcRequestCancelled(message=f"request {pending.request_id} was cancelled")
        announce_answer(self._ls, self._ls.client_name, result)  # a plain client sees the answer too
        return result
