"""The language server: the server, its lifecycle and editor handlers, and every command
registered by name.

The command handlers (thin, over the request service and the session service) are in
lsp/commands.py, loaded with the first command: `initialize` needs only the commands' names
(contract/names.py), not the wire types or the services (docs/performance.md, start-up).
What adjusts pygls itself (the lifecycle, framing, dispatch, exit, `$/cancelRequest`) is in
lsp/protocol_plumbing.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from tunacode_lsp import __version__
from tunacode_lsp.agent.config import ServerOptions, parse_options
from tunacode_lsp.contract.names import COMMAND_NAMES
from tunacode_lsp.lsp import document_sync
from tunacode_lsp.lsp.cancels import CancelRegistry
from tunacode_lsp.lsp.client_requests import ask_client
from tunacode_lsp.lsp.code_actions import code_actions
from tunacode_lsp.lsp.logging_setup import enable_log_file, set_stderr_level
from tunacode_lsp.lsp.protocol_plumbing import IGNORED, StdioLanguageServer, TunaProtocol, kill_leftover_commands
from tunacode_lsp.lsp.pygls_compat import workspace_ready
from tunacode_lsp.store.locations import store_path

if TYPE_CHECKING:
    from tunacode_lsp.agent.mcp.manager import McpManager
    from tunacode_lsp.agent.sessions import SessionService
    from tunacode_lsp.lsp.runs import LspRequests

log = logging.getLogger(__name__)

SETTINGS_WAIT_SECONDS = 5.0

SHUTDOWN_SETTLE_SECONDS = 3.0  # running requests answer (cancelled) before shutdown does
STOP_SETTLE_SECONDS = 1.5  # a signal or a closed connection: the whole stop fits in 2 s


class TunaLanguageServer(StdioLanguageServer):
    def __init__(self) -> None:
        super().__init__("tunacode-lsp", __version__, protocol_cls=TunaProtocol)
        self.options = ServerOptions()
        self.init_options: ServerOptions | None = None
        self.pending_warnings: list[str] = []
        self.cancels = CancelRegistry()  # $/cancelRequest: message id -> cancel (lsp/cancels.py)
        self._requests: LspRequests | None = None  # created on first use: the agent's modules load then
        self._sessions: SessionService | None = None
        # set once the client's workspace/configuration has been read (or cannot be)
        self.settings_ready = asyncio.Event()
        self.mcp: McpManager | None = None  # created when an MCP server is configured
        self.client_name = ""  # initialize's clientInfo.name (lsp/mcp.py: a headless client's answers are not remembered)
        self._background: set[asyncio.Task[Any]] = set()

    def track(self, work: Any) -> None:
        """Run `work` in the background, kept until it ends, its failure logged."""

        task = asyncio.ensure_future(work)
        self._background.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._background.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("background work failed", exc_info=t.exception())

        task.add_done_callback(done)

    def _on_signal(self, signum: signal.Signals) -> None:
        self.track(self.stop_now(f"signal {signum.name}"))

    async def stop_now(self, why: str) -> None:
        """Treat the end of the connection or a signal like shutdown + exit: abort running
        requests (their history settled, leases released), stop MCP servers and leftover
        commands, and exit, all within about 2 s."""

        log.info("stopping: %s", why)
        self.requests.abort_all()
        await self.requests.settled(STOP_SETTLE_SECONDS)
        self.requests.end_progress_now("stopped")  # what did not settle in time
        if self.mcp is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.mcp.stop_all(), STOP_SETTLE_SECONDS / 2)
        kill_leftover_commands()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        logging.shutdown()
        os._exit(0)

    @property
    def workspace_root(self) -> Path:
        root = self.workspace.root_path if workspace_ready(self) else None
        return Path(root or os.getcwd()).resolve()

    @property
    def store_path(self) -> Path:
        return store_path(self.options.session_store)

    @property
    def requests(self) -> LspRequests:
        if self._requests is None:
            from tunacode_lsp.lsp.runs import LspRequests

            self._requests = LspRequests(self)
        return self._requests

    @property
    def sessions(self) -> SessionService:
        if self._sessions is None:
            from tunacode_lsp.agent.sessions import SessionService

            self._sessions = SessionService(self.store_path)
        return self._sessions

    def apply_settings(self, raw: Any, *, base: ServerOptions | None) -> None:
        options, warnings = parse_options(raw, base=base)
        self.options = options
        apply_logging(options)
        for warning in warnings:
            log.warning("%s", warning)
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=warning))


def apply_logging(options: ServerOptions) -> None:
    if options.log_file:
        enable_log_file()
    if options.log_level != ServerOptions().log_level:
        set_stderr_level(options.log_level)


server = TunaLanguageServer()


def serve_command(name: str):
    """The handler pygls calls for command `name`: the command handlers (lsp/commands.py, with
    the wire types, the session and request services) load with the first command, not
    before `initialize` is answered (docs/performance.md, start-up)."""

    async def handler(ls: TunaLanguageServer, params: types.ExecuteCommandParams) -> Any:
        from tunacode_lsp.lsp.commands import HANDLERS

        return await HANDLERS[name](ls, params)

    return handler


for _name in COMMAND_NAMES:
    server.command(_name)(serve_command(_name))


# ---------------------------------------------------------------- lifecycle


@server.feature(types.INITIALIZE)
def on_initialize(ls: TunaLanguageServer, params: types.InitializeParams) -> None:
    options, warnings = parse_options(params.initialization_options)
    ls.options = ls.init_options = options
    ls.client_name = params.client_info.name if params.client_info is not None else ""
    apply_logging(options)
    ls.pending_warnings = warnings  # shown once the client is ready for messages


@server.feature(types.INITIALIZED)
async def on_initialized(ls: TunaLanguageServer, _params: types.InitializedParams) -> None:
    for warning in ls.pending_warnings:
        log.warning("%s", warning)
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=warning))
    ls.pending_warnings = []
    from tunacode_lsp.lsp import mcp
    from tunacode_lsp.lsp.runs import warm_up
    from tunacode_lsp.lsp.snapshot_progress import first_snapshot_progress

    asyncio.get_running_loop().run_in_executor(None, warm_up)  # the first request need not wait for imports
    # nor for the first snapshot (progress shown when it takes over a second)
    ls.track(first_snapshot_progress(ls, ls.requests.checkpoints.warm(ls.workspace_root)))
    try:
        await read_configuration(ls)
    finally:
        ls.settings_ready.set()
    ls.track(mcp.configure(ls))  # in the background: never delays a request


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def on_configuration_changed(ls: TunaLanguageServer, _params: types.DidChangeConfigurationParams) -> None:
    from tunacode_lsp.lsp import mcp

    await read_configuration(ls)
    ls.track(mcp.configure(ls))


async def read_configuration(ls: TunaLanguageServer) -> None:
    workspace = ls.client_capabilities.workspace
    if not (workspace and workspace.configuration):
        return
    try:
        sections = await ask_client(
            ls, types.WORKSPACE_CONFIGURATION,
            types.ConfigurationParams(items=[types.ConfigurationItem(section="tunacode")]),
            timeout=SETTINGS_WAIT_SECONDS, label="tunacode-configuration",
        )
    except Exception as exc:  # a client that cannot answer keeps the initialize options
        log.warning("workspace/configuration failed: %s", exc)
        return
    if sections and isinstance(sections[0], dict):
        ls.apply_settings(sections[0], base=ls.init_options)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.Empty]),
)
def on_code_action(ls: TunaLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    document = ls.workspace.get_text_document(params.text_document.uri)
    selected: str | None = None
    if document.version is not None:  # open in the editor: its text, in the client's position encoding
        start, end = document.offset_at_position(params.range.start), document.offset_at_position(params.range.end)
        selected = document.source[start:end]
    return code_actions(params, selected, Path(document.path).name or params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def on_document_changed(ls: TunaLanguageServer, _params: types.DidChangeTextDocumentParams) -> None:
    document_sync.changed(ls)  # pygls updated its copy first; an edit of ours waits for this (lsp/documents.py)


@server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
def on_progress_cancel(ls: TunaLanguageServer, params: types.WorkDoneProgressCancelParams) -> None:
    ls.requests.cancel_by_progress_token(params.token)


@server.feature(IGNORED)
def on_ignored(_ls: TunaLanguageServer, *_: Any) -> None:
    pass


@server.feature(types.SHUTDOWN)
async def on_shutdown(ls: TunaLanguageServer, *_: Any) -> None:
    ls.requests.abort_all()  # the same path as tunacode.abort: each request answers, cancelled
    await ls.requests.settled(SHUTDOWN_SETTLE_SECONDS)
    if ls.mcp is not None:
        await ls.mcp.stop_all()  # bounded: each server is stopped within a few seconds
