"""The ACP agent: the SDK calls these methods; each is thin over the runs and session services.

One `TunaAcpAgent` serves one connection. Sessions become usable in this process by
`session/new` or `session/load`, which fix their workspace root (the `cwd` given, made
real): the tools are confined to it exactly as under LSP, and a stored cwd never widens it.
The store is the same SQLite file the language server and the CLI use.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, schema
from acp.interfaces import Client

from tunacode_lsp import __version__
from tunacode_lsp.acp import errors
from tunacode_lsp.acp.commands import answer_update, available_commands, command_of, run_command
from tunacode_lsp.acp.config_options import ConfigError, SessionConfig, config_options, with_option
from tunacode_lsp.acp.documents import AcpDocuments
from tunacode_lsp.acp.mcp import SessionMcp
from tunacode_lsp.acp.prompt import prompt_parts, response_of
from tunacode_lsp.acp.replay import replay_updates
from tunacode_lsp.acp.sink import AcpSink
from tunacode_lsp.agent.config import ServerOptions
from tunacode_lsp.agent.runs import RequestService, SessionUnreadable
from tunacode_lsp.agent.sessions import SessionService
from tunacode_lsp.contract.errors import CommandError
from tunacode_lsp.contract.protocol import ParamsError, RequestParams
from tunacode_lsp.store.errors import UnreadableMessageError
from tunacode_lsp.store.locations import store_path

log = logging.getLogger(__name__)

LIST_PAGE = 100  # sessions per session/list page
MAX_LISTED = 10_000


def workspace_root(cwd: str) -> Path:
    """The real folder a session works in; -32602 when `cwd` is not an absolute existing folder."""

    if not isinstance(cwd, str) or not os.path.isabs(cwd) or "\0" in cwd:
        raise errors.invalid_params("cwd: must be an absolute path")
    real = Path(os.path.realpath(cwd))
    if not real.is_dir():
        raise errors.invalid_params(f"cwd: {cwd[:200]!r} is not a folder")
    return real


class TunaAcpAgent:
    def __init__(self, options: ServerOptions, *, permission_timeout: float) -> None:
        self.options = options
        self.permission_timeout = permission_timeout
        self.sessions = SessionService(store_path(options.session_store))
        self.requests = RequestService(lambda: self.sessions, lambda: self.options, Path.cwd)
        self._roots: dict[str, Path] = {}  # sessions usable on this connection -> their workspace root
        self._config: dict[str, SessionConfig] = {}  # configOptions chosen per session (acp/config_options.py)
        self._client: Client | None = None
        self.mcp = SessionMcp()
        self._fs = (False, False)  # the client offers fs/read_text_file, fs/write_text_file
        self._offers: set[asyncio.Task[None]] = set()  # available_commands_update being sent

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    @property
    def client(self) -> Client:
        if self._client is None:  # the SDK connects before it reads anything
            raise RequestError.internal_error({"details": "no client connection"})
        return self._client

    # ------------------------------------------------------------ lifecycle

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **_: Any
    ) -> schema.InitializeResponse:
        fs = getattr(client_capabilities, "fs", None)
        self._fs = (bool(getattr(fs, "read_text_file", False)), bool(getattr(fs, "write_text_file", False)))
        if client_info is not None:
            log.info("ACP client %s %s, protocol %s", client_info.name, client_info.version, protocol_version)
        return schema.InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=schema.AgentCapabilities(
                load_session=True,
                prompt_capabilities=schema.PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=schema.McpCapabilities(http=True, sse=False),
                session_capabilities=schema.SessionCapabilities(
                    list=schema.SessionListCapabilities(),
                    resume=schema.SessionResumeCapabilities(),
                    close=schema.SessionCloseCapabilities(),
                    fork=schema.SessionForkCapabilities(),
                ),
            ),
            auth_methods=[],
            agent_info=schema.Implementation(name="tunacode", title="TunaCode", version=__version__),
        )

    async def authenticate(self, method_id: str, **_: Any) -> None:
        return None

    # ------------------------------------------------------------ sessions

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None, **_: Any) -> schema.NewSessionResponse:
        root = workspace_root(cwd)
        try:
            model = self.requests.model_spec(None)
            self.requests.check_model(model)  # -32003 naming what to set now, not at the first prompt
            record = await self.sessions.create(cwd=str(root), model=model)
        except (ParamsError, CommandError) as exc:
            raise errors.from_agent(exc) from None
        await self.mcp.configure(record.session_id, mcp_servers, self.options)
        self._roots[record.session_id] = root
        self._offer_commands(record.session_id, root)
        config = self._config.setdefault(record.session_id, SessionConfig(model, self.options.approval))
        return schema.NewSessionResponse(session_id=record.session_id, config_options=config_options(config))

    def _offer_commands(self, session_id: str, root: Path | None = None) -> None:
        """Tell the client the slash commands, right after the session/new or session/load answer."""

        async def offer() -> None:
            try:
                update = await asyncio.to_thread(available_commands, root)
                await self.client.session_update(session_id=session_id, update=update)
            except Exception:  # noqa: BLE001 - a client that cannot take it loses only the menu
                log.info("available_commands_update for %s was not delivered", session_id, exc_info=True)

        task = asyncio.get_running_loop().create_task(offer())
        self._offers.add(task)
        task.add_done_callback(self._offers.discard)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> schema.LoadSessionResponse:
        root = workspace_root(cwd)
        record = await self.sessions.get(session_id)
        if record is None:
            raise errors.unknown_session(session_id)
        try:
            messages = await self.sessions.messages(session_id)
            events = await self.sessions.events(session_id, messages, record.model)
        except UnreadableMessageError as exc:
            raise RequestError.internal_error({"details": f"session {session_id} cannot be read: {exc}"}) from None
        for update in replay_updates(events, root):
            await self.client.session_update(session_id=session_id, update=update)
        await self.mcp.configure(session_id, mcp_servers, self.options)
        self._roots[session_id] = root
        self._offer_commands(session_id, root)
        config = self._config.setdefault(session_id, SessionConfig(record.model or self.requests.model_spec(None), self.options.approval))
        return schema.LoadSessionResponse(config_options=config_options(config))

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **_: Any
    ) -> schema.SetSessionConfigOptionResponse:
        """`session/set_config_option`: model, mode or approval for the session's next prompts."""

        config = self._config.get(session_id)
        if config is None or session_id not in self._roots:
            raise errors.unknown_session(session_id)
        try:
            config = self._config[session_id] = with_option(config, config_id, value)
        except ConfigError as exc:
            raise errors.invalid_params(str(exc)) from None
        return schema.SetSessionConfigOptionResponse(config_options=config_options(config))

    async def resume_session(
        self, session_id: str, cwd: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> schema.ResumeSessionResponse:
        """`session/resume`: the session becomes usable here, without replaying its history."""

        root = workspace_root(cwd)
        if await self.sessions.get(session_id) is None:
            raise errors.unknown_session(session_id)
        await self.mcp.configure(session_id, mcp_servers, self.options)
        self._roots[session_id] = root
        self._offer_commands(session_id)
        return schema.ResumeSessionResponse()

    async def fork_session(
        self, session_id: str, cwd: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> schema.ForkSessionResponse:
        """`session/fork`: a new session with the conversation so far (cut back to a clean
        point); only the store changes, the files stay as they are."""

        root = workspace_root(cwd)
        if await self.sessions.get(session_id) is None:
            raise errors.unknown_session(session_id)
        record = await self.sessions.fork(session_id, None)
        await self.mcp.configure(record.session_id, mcp_servers, self.options)
        self._roots[record.session_id] = root
        self._offer_commands(record.session_id)
        return schema.ForkSessionResponse(session_id=record.session_id)

    async def close_session(self, session_id: str, **_: Any) -> schema.CloseSessionResponse:
        """`session/close`: its running prompt is cancelled (it answers `cancelled`) and the
        session is no longer usable on this connection until loaded or resumed again. The
        stored session stays."""

        if session_id not in self._roots:
            raise errors.unknown_session(session_id)
        count = self.requests.abort(session_id=session_id)
        del self._roots[session_id]
        self.mcp.forget(session_id)
        log.info("session/close %s: %d request(s) stopped", session_id, count)
        return schema.CloseSessionResponse()

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **_: Any) -> schema.ListSessionsResponse:
        offset = 0
        if cursor is not None:
            if not cursor.isdigit() or int(cursor) > MAX_LISTED:
                raise errors.invalid_params("cursor: not a cursor this agent gave")
            offset = int(cursor)
        wanted = offset + LIST_PAGE + 1
        limit = wanted
        while True:  # the store's page, less the failed first prompts, until a page is full or all are read
            try:
                stored = await self.sessions.list(cwd=str(workspace_root(cwd)) if cwd else None, limit=limit)
            except ParamsError as exc:
                raise errors.from_agent(exc) from None
            records = [r for r in stored if not only_a_failed_prompt(r)]
            if len(records) >= wanted or len(stored) < limit or limit >= MAX_LISTED + LIST_PAGE:
                break
            limit *= 2
        page = records[offset : offset + LIST_PAGE]
        more = len(records) > offset + LIST_PAGE
        return schema.ListSessionsResponse(
            sessions=[
                schema.SessionInfo(session_id=r.session_id, cwd=r.cwd, title=r.title or None, updated_at=r.modified_at)
                for r in page
            ],
            next_cursor=str(offset + LIST_PAGE) if more else None,
        )

    # ------------------------------------------------------------ prompts

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> schema.PromptResponse:
        """Run one prompt. Nothing is awaited before `begin`, so a `session/cancel` sent right
        after the prompt reaches it, and a second prompt on the session is refused."""

        root = self._roots.get(session_id)
        if root is None:
            raise errors.unknown_session(session_id)
        text, context = prompt_parts(prompt)
        command = command_of(text)
        if command is not None:  # /changes, /rewind: the checkpoints, without the model
            answer = await run_command(*command, session_id, root, self.requests, self.sessions)
            await self.client.session_update(session_id=session_id, update=answer_update(answer))
            return schema.PromptResponse(stop_reason="end_turn")
        config = self._config.get(session_id)
        params = RequestParams(
            prompt=text, session_id=session_id, context=context or None,
            model=config.model if config is not None and config.model_chosen else None,
            mode=config.mode if config is not None else None,
        )
        client = self.client
        can_read, can_write = self._fs
        documents = AcpDocuments(
            client, session_id, root, can_read=can_read, can_write=can_write, loop=asyncio.get_running_loop()
        ) if can_read or can_write else None
        try:
            params.validate()
            pending = self.requests.begin(params)  # from here on, every path ends it (finally below)
        except (ParamsError, CommandError) as exc:
            raise errors.from_agent(exc, session_id) from None

        def make_sink(sid: str, _request_id: str, _prompt: str) -> AcpSink:
            return AcpSink(client, sid, root, self.permission_timeout, documents)

        try:
            result = await self.requests.run(
                pending, params, make_sink, workspace_root=root, extra_tools=self.mcp.tools(session_id),
                documents=documents, approval=config.approval if config is not None else None,
            )
        except (ParamsError, CommandError) as exc:
            raise errors.from_agent(exc, session_id) from None
        except SessionUnreadable as exc:
            raise RequestError.internal_error({"details": str(exc)}) from None
        finally:
            self.requests.end(pending)
        state = getattr(pending.run, "state", None)
        return response_of(result, getattr(state, "last_stop_reason", None))

    async def cancel(self, session_id: str, **_: Any) -> None:
        """`session/cancel`: the same abort path as LSP's tunacode.abort; the prompt answers `cancelled`."""

        count = self.requests.abort(session_id=session_id)
        log.info("session/cancel %s: %d request(s) stopped", session_id, count)


def only_a_failed_prompt(record: Any) -> bool:
    """A session whose only message is its first prompt, with no request running: the prompt
    failed (no answer is stored for a failed request). `session/list` leaves it out; it can
    still be loaded by id, and `tunacode-lsp sessions list` shows it."""

    return record.message_count == 1 and not record.busy
