"""The tool gate: what happens between the model asking for a tool call and the call running.

In order: the call waits for its turn; an unknown tool, oversized or invalid arguments are
an error result; plan mode keeps only the read-only tools; a `deny` rule blocks (`policy`);
preToolUse hooks may block; an `allow` rule, approval `auto` or a session-wide allow lets
it run (an edit of a file that runs code outside the sandbox is asked anyway); read-only
mode refuses; anything else is asked (`ApprovalRequest`), and the answer is allow, allow
for the session, allow always (a rule saved), or a denial. `before_tool_call` returns None
to let the call run, else the error result the model sees instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from tinyagent import AgentTool, AgentToolResult, TextContent
from tinyagent.agent_types import ToolCallContent, ToolLoopControl

from tunacode_lsp.agent.approvals import approval_view, edits_code_outside
from tunacode_lsp.agent.hooks import HookRunner
from tunacode_lsp.agent.permissions import RuleDecision, suggested_rules
from tunacode_lsp.agent.ports import AgentSink, ApprovalRequest, RequestSpec
from tunacode_lsp.agent.provider.openai_chat import OVERSIZE_PREFIX
from tunacode_lsp.agent.registry import ToolCallRegistry
from tunacode_lsp.contract.protocol import Notice
from tunacode_lsp.core.abort import race_abort
from tunacode_lsp.core.text import clip
from tunacode_lsp.tools import spec_of
from tunacode_lsp.tools.errors import ToolError, retry_hint

PLAN_MODE_TOOLS = frozenset({"read_file", "grep", "list_files", "diagnostics", "todo_write"})


class ToolGate:
    """One request's gate (agent/runner.py gives it the request's parts)."""

    def __init__(
        self,
        spec: RequestSpec,
        registry: ToolCallRegistry,
        sink: AgentSink,
        hooks: HookRunner,
        abort_signal: asyncio.Event,
        *,
        approved: dict[str, str],
        hook_context: dict[str, list[str]],
        until: Callable[[Any], Awaitable[None]],
        tool_names: Callable[[], list[str]],
        stop_reason: Callable[[], str],
    ) -> None:
        self._spec = spec
        self._registry = registry
        self._sink = sink
        self._hooks = hooks
        self._abort_signal = abort_signal
        self._approved = approved  # tool call id -> digest of the change the user approved
        self._hook_context = hook_context  # tool call id -> preToolUse hooks' context
        self._until = until
        self._tool_names = tool_names
        self._stop_reason = stop_reason

    async def before_tool_call(
        self, tool_call: ToolCallContent, tool: AgentTool | None, args: dict[str, Any]
    ) -> ToolLoopControl | None:
        name = tool_call.name or ""
        call_id = tool_call.id or ""
        await self._until(self._registry.wait_in_order(call_id))
        if tool is None:
            return error_result(retry_hint(
                f"Unknown tool {clip(name, 80)!r}", "use one of: " + ", ".join(sorted(self._tool_names()))
            ))
        if tool_call.partial_json and tool_call.partial_json.startswith(OVERSIZE_PREFIX):
            return error_result(retry_hint(
                f"The {clip(name, 80)} call was refused: {tool_call.partial_json[1:-1]}",
                "send less at once (split the work, or write a file in parts)",
            ))
        if tool_call.partial_json:
            return error_result(retry_hint(
                f"The arguments of this {name} call were not valid JSON (received: {clip(tool_call.partial_json, 300)})",
                "send them as one JSON object",
            ))
        if self._spec.mode == "plan" and name not in PLAN_MODE_TOOLS:
            self._registry.mark_denied(call_id, name, args, reason="policy")
            return error_result(f"{name} is not available in plan mode: only read-only tools and todo_write.")
        rule = self._rule_decision(name, args)
        if rule is not None and rule.effect == "deny":
            self._registry.mark_denied(call_id, name, args, reason="policy")
            return error_result(
                f"{name} was blocked by the {rule.describe()}: it is not allowed here. Do not retry it; "
                "try another way, or ask the user."
            )
        blocked = await self._pre_tool_hooks(call_id, name, args)
        if blocked is not None:
            return blocked
        forced = rule is not None and rule.effect == "ask"
        if rule is not None and rule.effect == "allow":
            # no rule covers an edit of a file that runs code outside the sandbox: that is asked
            if not await asyncio.to_thread(edits_code_outside, name, args, self._spec.workspace_root):
                return None
            forced = True
        if not forced and not spec_of(name).needs_approval and name not in self._spec.extra_changing_tools:
            return None
        approval = self._spec.approval
        if not forced and (approval == "auto" or name in self._spec.session_allowed_tools):
            # an edit of a file that runs code outside the sandbox (.vscode/tasks.json, .envrc) is always asked
            if not await asyncio.to_thread(edits_code_outside, name, args, self._spec.workspace_root):
                return None
        try:  # the same parsing and planning the tool will run, off the event loop
            view = await asyncio.to_thread(
                approval_view, name, args, self._spec.workspace_root, self._spec.line_refs, self._spec.documents
            )
        except ToolError as exc:
            return error_result(str(exc))  # it cannot run as shown: nobody is asked, nothing runs
        summary = view.headline
        if approval == "read-only" and not forced:
            self._registry.mark_denied(call_id, name, args, reason="policy")
            return error_result(f"the user declined: {name} is not allowed in read-only mode ({summary})")
        self._registry.awaiting_approval(call_id, name, args)
        always = suggested_rules(name, args, self._spec.workspace_root) if self._spec.save_rules else ()
        decision = await self._ask(ApprovalRequest(
            call_id, name, spec_of(name).summary(args), args, view.detail, view.detail_kind, view.truncated, summary,
            rule=rule.describe() if rule is not None else None, always_allow=always, runs_code_outside=view.runs_code_outside,
        ))
        if decision == "allow_session":
            self._spec.session_allowed_tools.add(name)
        if decision in ("allow_always_user", "allow_always_project") and always and self._spec.save_rules:
            said = await self._spec.save_rules(decision.rsplit("_", 1)[1], always)
            self._sink.emit(Notice(said))
        if decision in ("allow_always_user", "allow_always_project"):
            decision = "allow"
        if decision in ("allow", "allow_session"):
            if view.digest is not None:
                self._approved[call_id] = view.digest  # the tool writes exactly these bytes, or nothing
            return None
        if self._abort_signal.is_set():
            self._registry.finish(call_id, "cancelled", "cancelled while waiting for approval", name=name, reason=self._stop_reason())
            return error_result("cancelled by the user")
        self._registry.mark_denied(call_id, name, args)
        return error_result(f"the user declined: {name} {summary}. Do not retry it unchanged; ask or try another way.")

    def _rule_decision(self, name: str, args: dict[str, Any]) -> RuleDecision | None:
        if not self._spec.rules:
            return None
        return self._spec.rules.decide(name, args, self._spec.workspace_root)

    async def _pre_tool_hooks(self, call_id: str, name: str, args: dict[str, Any]) -> ToolLoopControl | None:
        """preToolUse hooks: exit 2 blocks the call (`reason: "policy"`), their context joins its result."""

        if not self._hooks.any_for("preToolUse", name):
            return None
        outcome = await self._hooks.run("preToolUse", tool=name, args=args)
        for notice in outcome.notices:
            self._sink.emit(Notice(notice))
        if outcome.blocked:
            self._registry.mark_denied(call_id, name, args, reason="policy")
            return error_result(f"{name} was blocked by {outcome.blocked_by}: {outcome.reason}")
        if outcome.context:
            self._hook_context[call_id] = outcome.context
        return None

    async def _ask(self, request: ApprovalRequest) -> str:
        """Ask for approval; an abort ends the wait as a denial."""

        raced = await race_abort(self._sink.ask_approval(request), self._abort_signal)
        if raced.finished and raced.task.exception() is None:
            return raced.result()
        return "deny"


def error_result(text: str) -> ToolLoopControl:
    return ToolLoopControl(result=AgentToolResult(content=[TextContent(text=text)]), is_error=True)
