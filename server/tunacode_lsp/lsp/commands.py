"""The command handlers (`workspace/executeCommand`): thin, each parses its params into a
typed object (a bad field is InvalidParams naming it), calls one service function and
returns a wire dict.

lsp/server.py registers every command's name with pygls (the `initialize` answer lists them)
and loads this module with the first command: it brings the wire types (contract/protocol.py),
the session and request services and the models catalog, none of which `initialize` needs
(docs/performance.md, start-up).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from tunacode_lsp import __version__
from tunacode_lsp.agent.models import default_model, list_models
from tunacode_lsp.agent.sessions import session_info
from tunacode_lsp.contract.errors import CommandError
from tunacode_lsp.contract.protocol import (
    COMMAND_ABORT,
    COMMAND_CHANGES,
    COMMAND_COMMANDS_LIST,
    COMMAND_MODELS_LIST,
    COMMAND_REQUEST,
    COMMAND_REQUEST_RESULT,
    COMMAND_SESSION_ALLOWS,
    COMMAND_SESSION_COMPACT,
    COMMAND_SESSION_DELETE,
    COMMAND_SESSION_EXPORT,
    COMMAND_SESSION_FORK,
    COMMAND_SESSION_GET,
    COMMAND_SESSION_IMPORT,
    COMMAND_SESSION_LIST,
    COMMAND_SESSION_NEW,
    COMMAND_SESSION_REWIND,
    COMMAND_SETTINGS_CONSENT,
    COMMAND_STATUS,
    COMMAND_STEER,
    PROTOCOL_VERSION,
    REQUEST_RUNNING,
    SESSION_BUSY,
    UNKNOWN_SESSION,
    AbortParams,
    AbortResult,
    BackgroundProcessInfo,
    ChangesParams,
    CommandsListResult,
    DeleteResult,
    DetachedRequest,
    EmptyParams,
    McpServerInfo,
    ModelsListResult,
    ParamsError,
    RequestIdParams,
    RequestMark,
    RequestParams,
    RewindParams,
    SandboxInfo,
    SessionAllowsParams,
    SessionAllowsResult,
    SessionForkParams,
    SessionGetParams,
    SessionGetResult,
    SessionIdParams,
    SessionImportParams,
    SessionListParams,
    SessionListResult,
    SessionNewParams,
    SettingsConsentParams,
    SettingsConsentResult,
    StatusResult,
    SteerParams,
    SteerResult,
    parse_params,
    to_wire,
)
from tunacode_lsp.lsp import mcp
from tunacode_lsp.lsp.client_support import require_approval_channel
from tunacode_lsp.lsp.server import SETTINGS_WAIT_SECONDS
from tunacode_lsp.store.errors import DocumentError, SessionNotFound

if TYPE_CHECKING:
    from tunacode_lsp.lsp.server import TunaLanguageServer

log = logging.getLogger(__name__)

DEFAULT_LIST_LIMIT = 50
RESULT_WAIT_SECONDS = 8.0  # tunacode.request.result right after request_end (the last checkpoint, the lease): under eglot's 10 s

# command name -> the handler lsp/server.py's registration calls
HANDLERS: dict[str, Callable[[TunaLanguageServer, types.ExecuteCommandParams], Awaitable[Any]]] = {}


async def wait_for_settings(ls: TunaLanguageServer) -> None:
    """A command sent right after `initialized` must see the client's settings (bounded wait)."""

    try:
        await asyncio.wait_for(ls.settings_ready.wait(), SETTINGS_WAIT_SECONDS)
    except TimeoutError:
        log.warning("no workspace/configuration answer within %s s; using the options I have", SETTINGS_WAIT_SECONDS)
        ls.settings_ready.set()


def command(name: str, *, waits_for_settings: bool = True):
    """Register a command handler `fn(ls, params: ExecuteCommandParams)`; errors become JSON-RPC errors.

    A handler that must register itself before any await (tunacode.request) waits for the
    settings itself (`waits_for_settings=False`)."""

    def register(fn):
        async def handler(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> Any:
            try:
                if waits_for_settings:
                    await wait_for_settings(ls)
                return await fn(ls, params)
            except ParamsError as exc:
                raise JsonRpcInvalidParams(message=str(exc)) from None
            except SessionNotFound as exc:
                raise JsonRpcException(code=UNKNOWN_SESSION, message=str(exc)) from None
            except CommandError as exc:
                raise JsonRpcException(code=exc.code, message=exc.message, data=exc.data) from None

        HANDLERS[name] = handler
        return fn

    return register



@command(COMMAND_REQUEST, waits_for_settings=False)
async def request(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    p = parse_params(RequestParams, params.arguments)
    if p.detach:
        return to_wire(await request_detached(ls, p))
    pending = ls.requests.begin_lsp(p, ls.protocol.msg_id)  # registered and reserved before any await
    try:
        await wait_for_settings(ls)
        require_approval_channel(ls, ls.options.approval)  # a client that cannot be asked: an error now
    except BaseException:
        ls.requests.end(pending)
        raise
    return to_wire(await ls.requests.serve(pending, p, work_done_token=params.work_done_token))


async def request_detached(ls: TunaLanguageServer, p: RequestParams) -> DetachedRequest:
    """`detach: true`: checked and registered like any request, then answered at once; it runs
    on in the background and its outcome waits for tunacode.request.result."""

    import attrs

    pending = ls.requests.begin(p) if p.session_id is not None else None  # a named session is reserved before any await
    try:
        await wait_for_settings(ls)
        options = await ls.requests.effective_options()  # the settings files too, as the request will see them
        if p.session_id is None:  # the answer names the session: create it now
            model = ls.requests.model_spec(p.model, options)
            ls.requests.check_model(model, options)
            record = await ls.sessions.create(cwd=str(ls.workspace_root), model=model)
            p = attrs.evolve(p, session_id=record.session_id)
            pending = ls.requests.begin(p)
        else:
            found = await ls.sessions.get(p.session_id)
            if found is None:
                raise SessionNotFound(p.session_id)
            record = found
            ls.requests.check_model(p.model or options.model or record.model or None, options)
    except BaseException:
        if pending is not None:
            ls.requests.end(pending)
        raise
    assert pending is not None
    ls.requests.detached.started(pending.request_id, record.session_id)  # before the answer: result is -32005 from now
    ls.track(ls.requests.serve_detached(pending, p))
    return DetachedRequest(pending.request_id, record.session_id)


@command(COMMAND_REQUEST_RESULT)
async def request_result(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    """A detached request's RequestResult once it ended (read once); -32005 while it runs."""
    from tunacode_lsp.agent.detached import DetachedError

    p = parse_params(RequestIdParams, params.arguments)
    pending = ls.requests.find(lambda x: x.request_id == p.request_id)
    if pending is not None and getattr(pending.run, "end_sent", False):  # request_end is out: the answer follows
        await ls.requests.detached.wait_ended(p.request_id, RESULT_WAIT_SECONDS)
    if ls.requests.detached.is_running(p.request_id):
        raise CommandError(REQUEST_RUNNING, f"request {p.request_id} is still running; its end comes as request_end")
    outcome = ls.requests.detached.take(p.request_id)
    if outcome is None:
        raise ParamsError(f"params.requestId: no result is kept for {p.request_id[:80]!r} (not a detached request, already read, or dropped)")
    if isinstance(outcome, DetachedError):
        raise CommandError(outcome.code, outcome.message, outcome.data)
    return to_wire(outcome)


@command(COMMAND_ABORT)
async def abort(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    p = parse_params(AbortParams, params.arguments)
    aborted = ls.requests.abort(session_id=p.session_id, request_id=p.request_id)
    if p.session_id is not None:
        aborted += ls.sessions.abort_compaction(session_id=p.session_id)
    return to_wire(AbortResult(aborted))


@command(COMMAND_STEER)
async def steer(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    """Thin: agent/runner.py puts the text in tinyagent's steering queue of the running request."""
    p = parse_params(SteerParams, params.arguments)
    return to_wire(SteerResult(ls.requests.steer(p.session_id, p.text)))


@command(COMMAND_SESSION_ALLOWS)
async def session_allows(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    """The session's session-wide allows, after revoking some or all (-32001 unknown session)."""
    p = parse_params(SessionAllowsParams, params.arguments)
    if await ls.sessions.get(p.session_id) is None:
        raise SessionNotFound(p.session_id)
    return to_wire(SessionAllowsResult(ls.requests.session_allows(p.session_id, p.revoke, p.revoke_all)))


@command(COMMAND_STATUS)
async def status(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    parse_params(EmptyParams, params.arguments)
    from tunacode_lsp.tools.sandbox import sandbox_state

    servers = [McpServerInfo(s.name, s.state, s.tools, s.error) for s in mcp.status(ls)]
    shell = await asyncio.to_thread(sandbox_state, ls.options.shell_sandbox)  # probed once per process
    sandbox = SandboxInfo(shell.mode, shell.active, shell.reason)
    processes = [BackgroundProcessInfo(**p) for p in ls.requests.background_processes.listing()]
    settings = await ls.requests.settings_info()  # the settings files under the editor's, with sources
    return to_wire(StatusResult(
        __version__, PROTOCOL_VERSION, ls.requests.active(), str(ls.store_path), servers, sandbox, processes, settings=settings
    ))


@command(COMMAND_COMMANDS_LIST)
async def commands_list(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    """Thin: the prompt commands of the workspace and the user (agent/commands.py)."""
    parse_params(EmptyParams, params.arguments)
    from tunacode_lsp.agent.commands import command_infos

    return to_wire(CommandsListResult(await asyncio.to_thread(command_infos, ls.workspace_root)))


@command(COMMAND_SETTINGS_CONSENT)
async def settings_consent(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    """Thin: consent to the project settings file as it is now (agent/runs.py)."""
    p = parse_params(SettingsConsentParams, params.arguments)
    path = await ls.requests.consent_project_settings(p.fingerprint, p.persist)
    return to_wire(SettingsConsentResult(True, path))


@command(COMMAND_MODELS_LIST)
async def models_list(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    parse_params(EmptyParams, params.arguments)
    models = await asyncio.to_thread(list_models)  # the catalog is read on first use: off the event loop
    return to_wire(ModelsListResult(models, ls.options.model or default_model()))


@command(COMMAND_SESSION_NEW)
async def session_new(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    p = parse_params(SessionNewParams, params.arguments)
    model = ls.requests.model_spec(p.model)
    record = await ls.sessions.create(cwd=p.cwd or str(ls.workspace_root), model=model, title=p.title or "")
    return to_wire(session_info(record))


@command(COMMAND_SESSION_LIST)
async def session_list(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    p = parse_params(SessionListParams, params.arguments)
    records = await ls.sessions.list(cwd=p.cwd or str(ls.workspace_root), limit=p.limit or DEFAULT_LIST_LIMIT)
    return to_wire(SessionListResult([session_info(r) for r in records]))


@command(COMMAND_SESSION_GET)
async def session_get(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    p = parse_params(SessionGetParams, params.arguments)
    record = await ls.sessions.get(p.session_id)
    if record is None:
        raise SessionNotFound(p.session_id)
    messages = await ls.sessions.messages(p.session_id)
    marks = [RequestMark(r.request_id, r.first_seq) for r in await ls.sessions.request_checkpoints(p.session_id)
             if r.first_seq < len(messages)]  # where each request's prompt is: clients offer its changes and rewind
    events = await ls.sessions.events(p.session_id, messages, record.model) if p.events else None
    return to_wire(SessionGetResult(session_info(record), messages, await ls.sessions.plan(p.session_id), marks, events))


@command(COMMAND_SESSION_DELETE)
async def session_delete(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    p = parse_params(SessionIdParams, params.arguments)
    if ls.requests.is_busy(p.session_id):
        raise CommandError(SESSION_BUSY, f"session {p.session_id} is busy with a request; stop it first")
    deleted = await ls.sessions.delete(p.session_id)
    ls.requests.forget_session(p.session_id)
    return to_wire(DeleteResult(deleted))


@command(COMMAND_SESSION_EXPORT)
async def session_export(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    p = parse_params(SessionIdParams, params.arguments)
    return await ls.sessions.export(p.session_id)


@command(COMMAND_SESSION_IMPORT)
async def session_import(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    p = parse_params(SessionImportParams, params.arguments)
    try:
        record = await ls.sessions.import_(p.document)
    except DocumentError as exc:
        raise ParamsError(f"params.document: {exc}") from None
    return to_wire(session_info(record))


@command(COMMAND_SESSION_FORK)
async def session_fork(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    p = parse_params(SessionForkParams, params.arguments)
    return to_wire(session_info(await ls.sessions.fork(p.session_id, p.message_count, request_id=p.request_id)))


@command(COMMAND_SESSION_COMPACT)
async def session_compact(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    """Thin: agent/compaction.py does the work; $/cancelRequest aborts it (nothing stored)."""
    from tunacode_lsp.agent.compaction import compact_now

    p = parse_params(SessionIdParams, params.arguments)
    msg_id = ls.protocol.msg_id
    ls.cancels.register(msg_id, lambda: ls.sessions.abort_compaction(session_id=p.session_id))
    try:
        record, before, after = await compact_now(ls.sessions, p.session_id, ls.options, is_busy=ls.requests.is_busy)
    finally:
        ls.cancels.unregister(msg_id)
    return {"session": to_wire(session_info(record)), "before": before, "after": after}


@command(COMMAND_CHANGES)
async def changes(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    """Thin: agent/checkpoints.py reads the request's (or session's) checkpoints."""
    p = parse_params(ChangesParams, params.arguments)
    return to_wire(await ls.requests.checkpoints.changes_command(ls.requests, p, ls.workspace_root))


@command(COMMAND_SESSION_REWIND)
async def session_rewind(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> dict[str, Any]:
    """Thin: agent/checkpoints.py restores the files and cuts the history; a document open in
    the editor with unsaved changes counts as changed since (-32004 unless forced)."""
    p = parse_params(RewindParams, params.arguments)
    from tunacode_lsp.lsp.documents import LspDocuments

    open_text = ls.requests.open_documents()  # taken on the event loop
    documents = LspDocuments(ls, Path(os.path.realpath(ls.workspace_root)))  # edits that live only in buffers go back there
    return to_wire(await ls.requests.checkpoints.rewind_command(ls.requests, p, ls.workspace_root, open_text=open_text, documents=documents))
