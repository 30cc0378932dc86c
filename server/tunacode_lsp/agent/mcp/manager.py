"""The MCP servers of one language-server process: connect, list tools, call, restart, stop.

Each server's connection lives in a task of its own (the SDK's client is entered and left
in one task). Starting is bounded (`STARTUP_SECONDS`); a server that fails to start or dies
is restarted with backoff at most `MAX_RESTARTS` times, then stays `failed` with its error;
every wait on a server is bounded; stopping closes each connection. A stdio server runs
under the process guard (tools/process_guard.py), so every process it starts (double forks
included) ends with it, and with the language server however that ends. A workspace-defined
server starts only after the user consented to its exact definition (agent/mcp/consent.py,
`consent`), never by merely opening the folder and never because of an approval mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import re
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from tinyagent.agent_types import AgentTool, AgentToolResult, ImageContent, TextContent

from tunacode_lsp.agent.mcp.config import McpServerSpec
from tunacode_lsp.agent.mcp.consent import Granted
from tunacode_lsp.core.abort import race_abort
from tunacode_lsp.core.text import clip
from tunacode_lsp.tools.base import ToolCall, make_tool
from tunacode_lsp.tools.errors import ToolCancelled, ToolError
from tunacode_lsp.tools.kept_outputs import MAX_KEPT_BYTES, keep_output, kept_note, outputs_folder
from tunacode_lsp.tools.process_guard import guarded_argv
from tunacode_lsp.tools.textfile import cut_middle

log = logging.getLogger(__name__)

STOP_SECONDS = 5.0
MAX_RESTARTS = 3
RESTART_DELAYS = (1.0, 2.0, 4.0)
MAX_RESULT_CHARS = 30_000
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what model providers accept

State = Literal["starting", "ready", "failed", "not_allowed"]
Notify = Callable[[str], None]
CHANGED = (
    "its definition or a workspace file it runs changed since you allowed it; not restarted "
    "(it is asked about again when the server next starts)"
)


class ConsentGate(Protocol):
    """Consent for workspace-defined servers (agent/mcp/consent.py McpConsent)."""

    async def grant(self, spec: McpServerSpec) -> Granted | None: ...

    async def unchanged(self, spec: McpServerSpec, fingerprint: str) -> bool: ...


@dataclass(frozen=True)
class McpTool:
    server: str
    name: str  # the server's own name for it
    full_name: str  # mcp__<server>__<tool>
    description: str
    schema: dict[str, Any]
    read_only: bool


@dataclass
class McpServerStatus:
    name: str
    state: State
    tools: int
    error: str | None = None


@dataclass
class McpConnection:
    spec: McpServerSpec  # as configured (a workspace server's as written)
    notify: Notify
    startup_timeout: float = 30.0
    launch: McpServerSpec | None = None  # what is started, when it differs (a consented workspace server)
    recheck: Callable[[], Awaitable[bool]] | None = None  # before a restart: is the consent still valid?
    state: State = "starting"
    error: str | None = None
    tools: list[McpTool] = field(default_factory=list)
    client: Any = None
    restarts: int = 0
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    _stopping: bool = False
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            done, _ = await asyncio.wait({self._task}, timeout=STOP_SECONDS)
            if not done:
                self._task.cancel()
                await asyncio.wait({self._task}, timeout=STOP_SECONDS)

    def broken(self, reason: str) -> None:
        """A call found the connection dead: reconnect (bounded)."""

        if self.state == "ready":
            self.error = reason
            self._wake.set()

    async def _run(self) -> None:
        while not self._stopping:
            self.state, self.client = "starting", None
            try:
                await self._serve_once()
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # noqa: BLE001 - every failure becomes the server's state
                self.error = _reason(exc)
                log.warning("MCP server %s: %s", self.spec.name, self.error)
            self.client, self.tools = None, []
            if self._stopping:
                break
            if self.restarts >= MAX_RESTARTS:
                self.state = "failed"
                self.notify(f"MCP server '{self.spec.name}' failed: {self.error or 'it stopped'} (gave up after {MAX_RESTARTS} restarts)")
                return
            delay = RESTART_DELAYS[min(self.restarts, len(RESTART_DELAYS) - 1)]
            self.restarts += 1
            self.state = "failed"
            self._wake = asyncio.Event()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)
            if self.recheck is not None and not self._stopping and not await self.recheck():
                self.state, self.error = "not_allowed", CHANGED
                self.notify(f"MCP server '{self.spec.name}': {CHANGED}")
                return
        self.state = "failed" if self.state != "not_allowed" else self.state

    async def _serve_once(self) -> None:
        from mcp import Client

        self._wake = asyncio.Event()
        async with contextlib.AsyncExitStack() as stack:
            try:
                async with asyncio.timeout(self.startup_timeout):
                    client = await stack.enter_async_context(Client(_target(self.launch or self.spec, self.startup_timeout)))
                    listed = await client.list_tools()
            except TimeoutError:
                raise TimeoutError(f"no answer within {self.startup_timeout:g} s (mcpStartupTimeout)") from None
            self.tools = self._convert(listed.tools)
            self.client, self.state, self.error = client, "ready", None
            log.info("MCP server %s ready with %d tools", self.spec.name, len(self.tools))
            await self._wake.wait()
        if not self._stopping and self.error is None:
            self.error = "the connection closed"

    def _convert(self, tools: list[Any]) -> list[McpTool]:
        out: list[McpTool] = []
        for tool in tools:
            full = f"mcp__{self.spec.name}__{tool.name}"
            schema = tool.input_schema if isinstance(tool.input_schema, dict) else None
            problem = None
            if not TOOL_NAME.match(full):
                problem = "its name does not fit a model tool name (letters, digits, '-', '_', at most 64 in all)"
            elif schema is None:
                problem = "it has no input schema"
            else:
                try:
                    Draft202012Validator.check_schema(schema)
                except SchemaError as exc:
                    problem = f"its input schema is broken ({clip(exc.message, 120)})"
            if problem:
                self.notify(f"MCP server '{self.spec.name}': tool '{clip(str(tool.name), 60)}' skipped: {problem}")
                continue
            annotations = tool.annotations
            out.append(McpTool(
                server=self.spec.name, name=tool.name, full_name=full,
                description=clip(tool.description or tool.title or tool.name, 2_000),
                schema=schema or {}, read_only=bool(annotations and annotations.read_only_hint),
            ))
        return out


class McpManager:
    """The configured servers, reconciled on every settings change."""

    def __init__(self, *, notify: Notify, consent: ConsentGate | None = None) -> None:
        self._notify = notify
        self._consent = consent  # None: no workspace server is ever started
        self._servers: dict[str, McpConnection] = {}
        self._blocked: dict[str, McpServerSpec] = {}  # workspace servers not allowed
        self._asking: dict[str, McpServerSpec] = {}  # workspace servers waiting for the user's answer
        self._closed = False  # stop_all ran: nothing starts any more (an answer may come late)
        self._lock = asyncio.Lock()
        self.tool_timeout = 120.0
        self.startup_timeout = 30.0

    async def configure(self, specs: list[McpServerSpec]) -> None:
        """Start new servers, stop removed or changed ones; ask about workspace servers (the
        approval mode plays no part: consent is to the definition, not to tool calls)."""

        async with self._lock:
            wanted = {s.name: s for s in specs}
            for name, conn in list(self._servers.items()):
                if wanted.get(name) != conn.spec:
                    del self._servers[name]
                    await conn.stop()
            self._blocked = {n: s for n, s in self._blocked.items() if wanted.get(n) == s}
            for name, spec in wanted.items():
                if self._closed:
                    return
                if name in self._servers or name in self._blocked:
                    continue
                conn = McpConnection(spec, self._notify, self.startup_timeout)
                if spec.source == "workspace":
                    granted = await self._granted(spec)
                    if granted is None or self._closed:
                        self._blocked[name] = spec
                        continue
                    conn.launch, conn.recheck = granted.spec, self._recheck(spec, granted.fingerprint)
                self._servers[name] = conn
                conn.start()

    async def _granted(self, spec: McpServerSpec) -> Granted | None:
        if self._consent is None:
            return None
        self._asking[spec.name] = spec
        try:
            return await self._consent.grant(spec)
        except Exception:  # noqa: BLE001 - consent that cannot be decided is no consent
            log.exception("consent for MCP server %s", spec.name)
            return None
        finally:
            self._asking.pop(spec.name, None)

    def _recheck(self, spec: McpServerSpec, fingerprint: str) -> Callable[[], Awaitable[bool]]:
        gate = self._consent

        async def still_allowed() -> bool:
            try:
                return gate is not None and await gate.unchanged(spec, fingerprint)
            except Exception:  # noqa: BLE001 - cannot tell: not restarted
                log.exception("consent check for MCP server %s", spec.name)
                return False

        return still_allowed

    async def stop_all(self) -> None:
        self._closed = True
        servers, self._servers = list(self._servers.values()), {}
        await asyncio.gather(*(s.stop() for s in servers), return_exceptions=True)

    def status(self) -> list[McpServerStatus]:
        out = [McpServerStatus(c.spec.name, c.state, len(c.tools), c.error) for c in self._servers.values()]
        out += [McpServerStatus(s.name, "starting", 0, "waiting for your consent") for s in self._asking.values()]
        out += [McpServerStatus(s.name, "not_allowed", 0, "defined by the workspace file .mcp.json and not consented to") for s in self._blocked.values()]
        return sorted(out, key=lambda s: s.name)

    def agent_tools(self) -> tuple[list[AgentTool], frozenset[str]]:
        """The tools of the ready servers, and the names of those that change things."""

        tools: list[AgentTool] = []
        changing: set[str] = set()
        for conn in self._servers.values():
            if conn.state != "ready":
                continue
            for tool in conn.tools:
                tools.append(self._agent_tool(conn, tool))
                if not tool.read_only:
                    changing.add(tool.full_name)
        return tools, frozenset(changing)

    def _agent_tool(self, conn: McpConnection, tool: McpTool) -> AgentTool:
        async def run(args: dict[str, Any], call: ToolCall) -> AgentToolResult:
            client = conn.client
            if client is None or conn.state != "ready":
                raise ToolError(f"MCP server '{conn.spec.name}' is not connected ({conn.error or conn.state}).")
            return await _call(conn, client, tool, args, call, self.tool_timeout)

        return make_tool(
            name=tool.full_name, label=f"{conn.spec.name}: {tool.name}",
            description=f"[MCP server {conn.spec.name}] {tool.description}", parameters=tool.schema, run=run,
        )


async def _call(conn: McpConnection, client: Any, tool: McpTool, args: dict[str, Any], call: ToolCall, timeout: float) -> AgentToolResult:
    # a cancelled call makes the SDK send notifications/cancelled to the server
    raced = await race_abort(client.call_tool(tool.name, args, read_timeout_seconds=timeout), call.signal, timeout=timeout + 5)
    if raced.aborted:
        raise ToolCancelled()
    if raced.timed_out:
        raise ToolError(f"MCP tool {tool.name} did not answer within {timeout:g} s (mcpToolTimeout).")
    try:
        result = raced.result()
    except Exception as exc:  # noqa: BLE001 - a failed call is an error result
        reason = _reason(exc)
        if "timed out" in reason.lower() or isinstance(exc, TimeoutError):
            raise ToolError(f"MCP tool {tool.name} did not answer within {timeout:g} s (mcpToolTimeout).") from None
        conn.broken(reason)
        raise ToolError(f"MCP server '{conn.spec.name}' failed during {tool.name}: {reason}") from None
    return await asyncio.to_thread(_result, tool, result)  # a cut result is written to a file


def _result(tool: McpTool, result: Any) -> AgentToolResult:
    texts: list[str] = []
    images: list[ImageContent] = []
    for part in result.content or []:
        kind = getattr(part, "type", None)
        if kind == "text":
            texts.append(part.text)
        elif kind == "image":
            images.append(ImageContent(url=part.data, mime_type=part.mime_type))
        elif kind == "resource":
            resource = part.resource
            text = getattr(resource, "text", None)
            texts.append(f"[resource {resource.uri}]\n{text}" if isinstance(text, str) else f"[binary resource {resource.uri}, {getattr(resource, 'mime_type', None) or 'unknown type'}]")
        elif kind == "resource_link":
            texts.append(f"[resource link {part.uri}]")
        elif kind == "audio":
            texts.append(f"[audio, {part.mime_type}]")
    if not texts and not images and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    whole = "\n".join(texts)
    text, cut = cut_middle(whole, MAX_RESULT_CHARS)
    if cut and not result.is_error:  # kept whole, like bash's output (tools/kept_outputs.py)
        data = whole.encode("utf-8", "surrogateescape")
        label = re.sub(r"[^A-Za-z0-9_-]", "_", f"mcp-{tool.server}-{tool.name}")[:80]  # the server names it: no path
        kept = keep_output(outputs_folder(), label, data)
        text += kept_note(kept, len(data), complete=len(data) <= MAX_KEPT_BYTES)
    if result.is_error:
        raise ToolError(f"MCP tool {tool.name} reported an error: {clip(text, 4_000) or '(no message)'}")
    content: list[TextContent | ImageContent] = [TextContent(text=text or "(no output)")]
    return AgentToolResult(content=[*content, *images], details={"server": tool.server, "tool": tool.name})


def _target(spec: McpServerSpec, timeout: float) -> Any:
    if spec.url is not None:
        return _HttpTransport(spec.url, dict(spec.headers), timeout) if spec.headers else spec.url
    from mcp.client.stdio import StdioServerParameters, get_default_environment

    cwd = spec.cwd or os.getcwd()
    env = dict(spec.env)
    command = _executable(spec.command or "", cwd, (get_default_environment() | env).get("PATH"))
    argv = guarded_argv([command, *spec.args])
    return StdioServerParameters(command=argv[0], args=argv[1:], env=env or None, cwd=cwd)


def _executable(command: str, cwd: str, path: str | None) -> str:
    """The command as the guard will exec it; FileNotFoundError (named) when there is none, as
    the SDK's own spawn would have raised."""

    if os.sep in command:
        full = os.path.join(cwd, command)
        if os.path.isfile(full) and os.access(full, os.X_OK):
            return full
    else:
        found = shutil.which(command, path=path)
        if found:
            return found
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)


class _HttpTransport:
    """A streamable-HTTP transport with the configured headers (the SDK's URL form sends none)."""

    def __init__(self, url: str, headers: dict[str, str], timeout: float) -> None:
        self._url, self._headers, self._timeout = url, headers, timeout

    async def __aenter__(self) -> Any:
        import httpx2  # the SDK's HTTP client
        from mcp.client.streamable_http import streamable_http_client

        self._client = httpx2.AsyncClient(headers=self._headers, timeout=self._timeout)
        self._cm = streamable_http_client(self._url, http_client=self._client)
        return await self._cm.__aenter__()

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self._cm.__aexit__(*exc)
        finally:
            await self._client.aclose()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return str(exc) or "no answer in time"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {clip(str(exc.filename or exc), 200)}"
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _reason(exc.exceptions[0])
    return clip(f"{type(exc).__name__}: {exc}".strip(), 300)
