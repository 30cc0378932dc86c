"""Drive the real server over stdio with pytest-lsp, and collect what it sends.

`LspHarness` starts `python -m tunacode_lsp` as a subprocess with its own TUNACODE_HOME,
initializes it with the options a test asks for, and records `tunacode/event`
notifications and approval prompts. Tests wait for what they expect with
`wait_for_event(...)` (an asyncio.Condition, never a sleep).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Union

from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from tunacode_lsp.cli.lsp_client import keep_raw_params

EVENT = "tunacode/event"
WAIT = 15.0  # seconds: generous, machines are shared


class ApprovalAnswers:
    """What the test client answers to window/showMessageRequest (None = dismissed)."""

    def __init__(self) -> None:
        self.answer: str | None = None
        self.prompts: list[types.ShowMessageRequestParams] = []
        self.block: asyncio.Event | None = None  # while set (and not released), prompts stay unanswered
        self.open = 0  # prompts received and not answered yet


class ConfigurationGate:
    """While `block` is set and not released, workspace/configuration stays unanswered."""

    def __init__(self) -> None:
        self.block: asyncio.Event | None = None
        self.asked = 0


def make_client(
    events: list[dict[str, Any]],
    cond: asyncio.Condition,
    approvals: ApprovalAnswers,
    gate: ConfigurationGate,
    extra: dict[str, Callable[..., Any]] | None = None,
) -> LanguageClient:
    client = LanguageClient(converter_factory=default_converter)
    register_lsp_features(
        client,
        {
            m: f
            for m, f in DEFAULT_CLIENT_FEATURES.items()
            if m not in (types.WINDOW_SHOW_MESSAGE, types.WORKSPACE_CONFIGURATION) and m not in (extra or {})
        },
    )
    for method, handler in (extra or {}).items():  # the test's own answers to server requests
        client.feature(method)(handler)

    @client.feature(types.WORKSPACE_CONFIGURATION)
    async def on_configuration(params: types.ConfigurationParams):
        async with cond:
            gate.asked += 1
            cond.notify_all()
        if gate.block is not None:
            await gate.block.wait()
        return [client.get_configuration(section=i.section, scope_uri=i.scope_uri) for i in params.items]
    keep_raw_params(client)
    _parse_code_actions_by_shape(client)

    @client.feature(EVENT)
    async def on_event(params: Any) -> None:
        async with cond:
            events.append(params)
            cond.notify_all()

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    async def on_message(params: types.ShowMessageParams) -> None:
        async with cond:
            client.messages.append(params)
            cond.notify_all()

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    async def on_prompt(params: types.ShowMessageRequestParams):
        async with cond:
            approvals.prompts.append(params)
            approvals.open += 1
            cond.notify_all()
        try:
            if approvals.block is not None:
                await approvals.block.wait()  # then answered with `answer` as it is then
            if approvals.answer is None:
                return None
            return types.MessageActionItem(title=approvals.answer)
        finally:
            async with cond:
                approvals.open -= 1
                cond.notify_all()

    return client


def _parse_code_actions_by_shape(client: LanguageClient) -> None:
    """lsprotocol's client-side hook takes any object with a `command` field for a Command,
    so a CodeAction that carries a Command arrives as a broken Command; tell them apart by
    the field's type, as VS Code and Neovim do."""

    converter = client.protocol._converter

    def structure(obj: Any, _: type) -> Any:
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    converter.register_structure_hook(Union[types.Command, types.CodeAction], structure)  # noqa: UP007


class LspHarness:
    def __init__(self, workspace: Path, home: Path) -> None:
        self.workspace = workspace
        self.home = home
        self.events: list[dict[str, Any]] = []
        self.cond = asyncio.Condition()
        self.approvals = ApprovalAnswers()
        self.configuration = ConfigurationGate()
        # extra server->client methods the test client answers: {method: async fn(params)}
        self.client_handlers: dict[str, Callable[..., Any]] = {}
        self.client: LanguageClient | None = None
        self.initialize_result: types.InitializeResult | None = None

    async def start(
        self,
        *,
        init_options: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        capabilities: types.ClientCapabilities | None = None,
        configuration: dict[str, Any] | None = None,
    ) -> LanguageClient:
        server_env = {
            k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("TUNACODE_")
        }
        server_env.update({"TUNACODE_HOME": str(self.home), "PYTHONUNBUFFERED": "1"})
        server_env["XDG_CONFIG_HOME"] = str(self.home / "config")  # never the developer's own settings files
        server_env.update(env or {})
        config = ClientServerConfig(
            server_command=[sys.executable, "-m", "tunacode_lsp"],
            client_factory=lambda: make_client(self.events, self.cond, self.approvals, self.configuration, self.client_handlers),
            server_env=server_env,
        )
        client = await config.start()
        self.client = client
        if configuration is not None:
            client.set_configuration(section="tunacode", item=configuration)
        caps = capabilities or client_capabilities("visual-studio-code")
        if capabilities is None:  # it renders tunacode/event: a rich client (lsp/plain_answers.py)
            caps.experimental = {**(caps.experimental or {}), "tunacode": {}}
        self.initialize_result = await client.initialize_session(
            types.InitializeParams(
                capabilities=caps,
                root_uri=self.workspace.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=self.workspace.as_uri(), name="ws")],
                initialization_options=init_options,
            )
        )
        return client

    async def stop(self) -> None:
        client, self.client = self.client, None  # stopping twice is stopping once
        if client is not None:
            await client.shutdown_session()
            await client.stop()

    async def command(self, name: str, args: dict[str, Any] | None = None, *, token: Any = None) -> Any:
        assert self.client is not None
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=[args or {}], work_done_token=token)
        )

    def send_command(self, name: str, args: dict[str, Any] | None = None, *, token: Any = None) -> asyncio.Future:
        """Send a command without awaiting its answer (to abort it, or to run two at once)."""

        assert self.client is not None
        return asyncio.ensure_future(self.command(name, args, token=token))

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = WAIT) -> None:
        async with self.cond:
            await asyncio.wait_for(self.cond.wait_for(predicate), timeout)

    async def wait_for_event(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = WAIT) -> dict[str, Any]:
        await self.wait_for(lambda: any(predicate(e) for e in self.events), timeout)
        return next(e for e in self.events if predicate(e))

    def events_of(self, request_id: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("requestId") == request_id]
