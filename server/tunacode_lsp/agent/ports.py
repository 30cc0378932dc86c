"""What the agent layer needs from its caller: a sink for events and approvals, a message log.

The LSP server, the benchmarks and the unit tests each provide these; the agent layer
never imports LSP.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from tinyagent.agent_types import AgentTool

from tunacode_lsp.agent.catalog import ModelCost
from tunacode_lsp.agent.context import PromptContext
from tunacode_lsp.agent.hooks_config import HookDef
from tunacode_lsp.agent.models import ResolvedModel
from tunacode_lsp.agent.permissions import PermissionRules
from tunacode_lsp.contract.protocol import Event, Usage
from tunacode_lsp.tools import LineRefLedger, ToolSettings
from tunacode_lsp.tools.diagnostics import DiagnosticsSource
from tunacode_lsp.tools.documents import DocumentOverlay

ApprovalDecision = Literal["allow", "allow_session", "allow_always_user", "allow_always_project", "deny"]


@dataclass(frozen=True)
class ApprovalRequest:
    tool_call_id: str
    tool_name: str
    summary: str  # one line, the same as the tool_call event's (tools.summarize_args)
    args: dict[str, Any]
    detail: str = ""  # exactly what will run: the whole command, the diff, or the arguments
    detail_kind: str = "arguments"  # command | diff | arguments
    truncated: bool = False  # the diff was cut (commands never are)
    headline: str = ""  # what will happen, as a phrase (`run npm test`, `edit a.py: 1 change ...`)
    rule: str | None = None  # why it is asked when a rule decided (`ask rule `bash(git push*)` (project settings)`)
    always_allow: tuple[str, ...] = ()  # the allow rules "Always allow" would save (empty: not offered)
    runs_code_outside: bool = False  # the file changed is one a tool runs outside the sandbox (.vscode/tasks.json)


class AgentSink(Protocol):
    def emit(self, event: Event) -> None: ...

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision: ...


class MessageLog(Protocol):
    """Where finished messages go, one call per message, in order."""

    async def append(self, message: dict[str, Any], *, usage: Usage | None, thoughts: str | None) -> None: ...

    async def save_plan(self, items: list[dict[str, str]]) -> None:
        """The model's plan (todo_write) changed: keep it with the session."""
        ...

    async def save_compaction(self, history: list[dict[str, Any]], cut: int, summary: str, usage: Usage) -> bool:
        """`history` (the request's, as given) was compacted: `summary` stands for history[:cut].
        False when it could not be kept (the request goes on with it anyway)."""
        ...


@dataclass
class RequestSpec:
    request_id: str
    session_id: str
    prompt: str
    model: ResolvedModel
    workspace_root: Path
    history: list[dict[str, Any]]
    max_turns: int = 40
    max_cost: float | None = None  # USD: no model call starts that would take the request past it
    timeout: float = 600.0  # seconds, 0 = none
    max_retries: int = 3
    approval: str = "ask"  # auto | ask | read-only
    tool_settings: ToolSettings = field(default_factory=ToolSettings)
    tool_concurrency: int = 3
    history_token_budget: int = 100_000
    context_window: int = 0  # the model's window (agent/catalog.py model_facts); 0: the default
    model_cost: ModelCost | None = None  # the model's prices; None: unknown (cost 0)
    compact_threshold: float = 0.8  # compact automatically past this share of the window
    # shared across the session's requests (in this server process):
    session_allowed_tools: set[str] = field(default_factory=set)  # "Allow for this session"
    session_notices: set[str] = field(default_factory=set)  # notices already given in this session
    line_refs: LineRefLedger = field(default_factory=LineRefLedger)  # line numberings the model saw
    context: PromptContext | None = None  # editor context given with the prompt
    diagnostics: DiagnosticsSource | None = None  # the editor's diagnostics, when it can give them
    extra_tools: list[AgentTool] = field(default_factory=list)  # MCP servers' tools
    extra_changing_tools: frozenset[str] = frozenset()  # those of them that need approval
    start_notices: list[str] = field(default_factory=list)  # said right after request_start
    documents: DocumentOverlay | None = None  # the editor's open documents (edits go through it)
    # before a tool that changes files (True: a shell command, snapshot again); None at the end
    # of the request (a request that changed nothing never waits for a snapshot); returns notices
    checkpoint: Callable[[bool | None], Awaitable[list[str]]] | None = None
    # the project's own rules (agent/settings_files.py): permission rules, hooks, the mode
    rules: PermissionRules = field(default_factory=PermissionRules)
    hooks: tuple[HookDef, ...] = ()
    mode: str = "agent"  # agent | plan (read-only tools and todo_write; the request ends with a plan)
    allowed_tools: frozenset[str] | None = None  # a prompt command's `allowed-tools`: only these (None: all)
    # "Always allow": saves allow rules to the user or project settings file; returns what to say
    save_rules: Callable[[str, tuple[str, ...]], Awaitable[str]] | None = None
