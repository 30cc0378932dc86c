"""MCP servers under LSP: configured from the settings and `.mcp.json`, started in the
background after `initialized` (never delaying `initialize`), reconfigured on every settings
change, stopped with the server. Consent questions for the servers of `.mcp.json` are
`window/showMessageRequest`s showing the whole definition (agent/workspace_consent.py; bounded:
no answer means not started, and the question comes again next time). Answers are remembered
per exact definition (store/consent_store.py), except a headless client's (`tunacode-lsp run`
answers from its `--trust-workspace` flag on every run). Failures are `window/showMessage`
warnings and the `mcpServers` field of `tunacode.status`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from tunacode_lsp.agent.mcp.config import McpServerSpec, parse_servers, read_workspace_file

if TYPE_CHECKING:
    from tunacode_lsp.agent.mcp.manager import McpManager
    from tunacode_lsp.agent.workspace_consent import ConsentRequest
    from tunacode_lsp.lsp.server import TunaLanguageServer

log = logging.getLogger(__name__)

TRUST_WAIT_SECONDS = 300.0
ALLOW, DENY = "Allow", "Deny"
HEADLESS_CLIENT = "tunacode-lsp run"  # cli/headless.py: asked every time, never remembered


def configured_servers(ls: TunaLanguageServer) -> list[McpServerSpec]:
    """The servers of the settings, then those of the workspace file not named there too."""

    settings, warnings = parse_servers(ls.options.mcp_servers, "settings")
    raw, file_warnings = read_workspace_file(ls.workspace_root)
    workspace, more = parse_servers(raw, "workspace")
    for warning in [*warnings, *file_warnings, *more]:
        notify(ls, warning)
    named = {s.name for s in settings}
    return settings + [s for s in workspace if s.name not in named]


def notify(ls: TunaLanguageServer, message: str) -> None:
    log.warning("%s", message)
    try:
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=f"TunaCode: {message}"))
    except Exception:  # noqa: BLE001 - no client to tell (shutting down)
        pass


async def configure(ls: TunaLanguageServer) -> None:
    """Bring the running servers in line with the configuration (any error is logged)."""

    try:
        specs = configured_servers(ls)
        if not specs and ls.mcp is None:
            return  # nothing configured: the MCP SDK is never loaded
        manager = ls.mcp or _new_manager(ls)
        ls.mcp = manager
        manager.tool_timeout = ls.options.mcp_tool_timeout
        manager.startup_timeout = ls.options.mcp_startup_timeout
        await manager.configure(specs)
    except Exception:
        log.exception("configuring MCP servers failed")


def _new_manager(ls: TunaLanguageServer) -> McpManager:
    from tunacode_lsp.agent.mcp.consent import McpConsent
    from tunacode_lsp.agent.mcp.manager import McpManager
    from tunacode_lsp.agent.workspace_consent import WorkspaceConsent
    from tunacode_lsp.store.consent_store import ConsentStore, consent_store_path

    remember = ls.client_name != HEADLESS_CLIENT
    consent = WorkspaceConsent(ls.workspace_root, ConsentStore(consent_store_path()), lambda r: ask_consent(ls, r), remember=remember)
    return McpManager(notify=lambda m: notify(ls, m), consent=McpConsent(consent, lambda m: notify(ls, m)))


async def ask_consent(ls: TunaLanguageServer, request: ConsentRequest) -> bool | None:
    try:
        answer: Any = await asyncio.wait_for(
            ls.window_show_message_request_async(types.ShowMessageRequestParams(
                type=types.MessageType.Warning, message=_consent_prompt(request),
                actions=[types.MessageActionItem(title=ALLOW), types.MessageActionItem(title=DENY)],
            )),
            TRUST_WAIT_SECONDS,
        )
    except Exception as exc:  # noqa: BLE001 - no answer, a refusal or a broken client: not started
        log.info("no answer about %s %s: %s", request.kind, request.name, exc)
        return None
    title = getattr(answer, "title", None)
    if title == ALLOW:
        return True
    if title == DENY:
        return False
    return None  # dismissed: ask again next time


def status(ls: TunaLanguageServer) -> list[Any]:
    return ls.mcp.status() if ls.mcp is not None else []


def _consent_prompt(request: ConsentRequest) -> str:
    from tunacode_lsp.agent.workspace_consent import consent_prompt

    return consent_prompt(request)
