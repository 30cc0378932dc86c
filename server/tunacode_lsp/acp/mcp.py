"""MCP servers of ACP sessions: those of the settings (`tunacode.mcpServers`) plus those the
client passes in `session/new` / `session/load` (stdio and streamable HTTP; SSE is left out
with a warning). The client's servers are the user's own editor configuration, so they start
like configured ones (no trust question); the workspace file `.mcp.json` is not read here.

Sessions with the same list of servers share one set of running servers (an editor passes
the same list to every session). Starting waits, bounded by mcpStartupTimeout, until every
server is ready or has failed, so the first prompt sees their tools.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from typing import TYPE_CHECKING, Any

from acp import schema

from tunacode_lsp.agent.config import ServerOptions
from tunacode_lsp.agent.mcp.config import McpServerSpec, parse_servers

if TYPE_CHECKING:
    from tinyagent.agent_types import AgentTool

    from tunacode_lsp.agent.mcp.manager import McpManager

log = logging.getLogger(__name__)

SETTLE_POLL_SECONDS = 0.05
_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_-]")


def _name(raw: str) -> str:
    """A client's server name as a model tool name part (`My Server` -> `My_Server`)."""

    return (_NOT_A_NAME.sub("_", raw.strip()) or "server")[:40]


def client_specs(servers: list[Any]) -> tuple[list[McpServerSpec], list[str]]:
    raw: dict[str, Any] = {}
    warnings: list[str] = []
    for server in servers:
        name = _name(str(getattr(server, "name", "")))
        if isinstance(server, schema.McpServerStdio):
            raw[name] = {"command": server.command, "args": list(server.args), "env": {e.name: e.value for e in server.env}}
        elif isinstance(server, schema.HttpMcpServer):
            raw[name] = {"url": server.url, "headers": {h.name: h.value for h in server.headers}}
        else:
            warnings.append(f"MCP server '{name}': only stdio and http servers are supported; left out")
    specs, more = parse_servers(raw, "settings")
    return specs, warnings + more


class SessionMcp:
    def __init__(self) -> None:
        self._managers: dict[tuple[McpServerSpec, ...], McpManager] = {}
        self._of_session: dict[str, tuple[McpServerSpec, ...]] = {}

    async def configure(self, session_id: str, client_servers: list[Any] | None, options: ServerOptions) -> None:
        specs, warnings = parse_servers(options.mcp_servers, "settings")
        given, more = client_specs(client_servers or [])
        for warning in warnings + more:
            log.warning("%s", warning)
        named = {s.name for s in given}
        key = tuple(sorted([s for s in specs if s.name not in named] + given, key=lambda s: s.name))
        if not key:
            self._of_session.pop(session_id, None)
            return
        self._of_session[session_id] = key
        manager = self._managers.get(key)
        if manager is None:
            manager = self._managers[key] = _new_manager(options)
            await manager.configure(list(key))
        await _settled(manager, options.mcp_startup_timeout)

    def tools(self, session_id: str) -> tuple[list[AgentTool], frozenset[str]]:
        key = self._of_session.get(session_id)
        manager = self._managers.get(key) if key is not None else None
        return manager.agent_tools() if manager is not None else ([], frozenset())

    def forget(self, session_id: str) -> None:
        """A closed session: its tools are no longer offered (the servers stay for other sessions)."""

        self._of_session.pop(session_id, None)

    async def stop_all(self) -> None:
        managers, self._managers = list(self._managers.values()), {}
        await asyncio.gather(*(m.stop_all() for m in managers), return_exceptions=True)


def _new_manager(options: ServerOptions) -> McpManager:
    from tunacode_lsp.agent.mcp.manager import McpManager

    # only workspace-file servers need consent; none come here, and none would be started
    manager = McpManager(notify=lambda m: log.warning("%s", m))
    manager.tool_timeout = options.mcp_tool_timeout
    manager.startup_timeout = options.mcp_startup_timeout
    return manager


async def _settled(manager: McpManager, timeout: float) -> None:
    """Until no server is still starting (bounded): a short poll of the manager's states."""

    deadline = time.monotonic() + timeout
    while any(s.state == "starting" for s in manager.status()) and time.monotonic() < deadline:
        await asyncio.sleep(SETTLE_POLL_SECONDS)
