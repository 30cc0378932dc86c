"""Agent events and stored messages as ACP `session/update` payloads (pure functions).

The mapping:

- text_delta -> agent_message_chunk; thinking_delta -> agent_thought_chunk
- tool_call -> tool_call (the event's kind and title, locations, rawInput); tool_call_update ->
  tool_call_update (`awaiting_approval` is not sent: the permission request carries it;
  `cancelled` and a refusal are `failed` with a text saying why (the update's `reason`), ACP
  has no cancelled tool status; rawOutput carries status and reason)
- request_start -> user_message_chunk (only in a replay: session/load, acp/replay.py)
- plan -> plan (every entry priority "medium"); turn_end -> usage_update (context used/size)
- notice, compaction -> an agent_message_chunk of its own paragraph
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp import schema

from tunacode_lsp.contract.protocol import (
    TOOL_KINDS,
    Compaction,
    Event,
    Notice,
    Plan,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolCallUpdate,
    TurnEnd,
    to_wire,
)
from tunacode_lsp.core.text import clip
from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.paths import resolve_in_workspace
from tunacode_lsp.tools.spec import spec_of

Update = (
    schema.AgentMessageChunk | schema.AgentThoughtChunk | schema.UserMessageChunk | schema.ToolCallStart
    | schema.ToolCallProgress | schema.AgentPlanUpdate | schema.UsageUpdate
)

MAX_RESULT_CHARS = 20_000  # a tool result shown in a tool card

RAW_OUTPUT_FIELDS = ("status", "reason", "exitCode", "durationMs")
# how a refused or stopped call reads (the final update's `reason`)
REASON_TEXTS = {
    "denied": "denied by the user.",
    "policy": "refused by the approval mode or a rule.",
    "timeout": "stopped: the request timed out.",
    "aborted": "cancelled.",
}

# the agent's stop reason -> ACP's; "error" and "timeout" are JSON-RPC errors (prompt.py)
STOP_REASONS: dict[str, schema.StopReason] = {
    "end_turn": "end_turn",
    "cancelled": "cancelled",
    "max_turns": "max_turn_requests",
    "max_cost": "max_turn_requests",  # a limit on the request was reached; ACP has no cost reason
}


def tool_kind(name: str) -> schema.ToolKind:
    return spec_of(name).kind  # MCP tools: other


def tool_title(name: str, args: dict[str, Any]) -> str:
    return spec_of(name).title(args)


def file_path(name: str, args: dict[str, Any], real_root: Path) -> Path | None:
    """The file a file tool names, confined to the workspace as the tool confines it; else None."""

    path_arg = spec_of(name).path_arg
    raw = args.get(path_arg) if path_arg is not None else None
    if not isinstance(raw, str) or not raw.strip():
        return None
    try:
        return resolve_in_workspace(real_root, raw)
    except ToolError:
        return None


def locations(name: str, args: dict[str, Any], real_root: Path) -> list[schema.ToolCallLocation] | None:
    path = file_path(name, args, real_root)
    return [schema.ToolCallLocation(path=str(path))] if path is not None else None


def text_content(text: str) -> schema.ContentToolCallContent:
    return schema.ContentToolCallContent(type="content", content=schema.TextContentBlock(type="text", text=text))


def diff_content(path: Path, old_text: str | None, new_text: str) -> schema.FileEditToolCallContent:
    return schema.FileEditToolCallContent(type="diff", path=str(path), old_text=old_text, new_text=new_text)


def message_chunk(text: str) -> schema.AgentMessageChunk:
    return schema.AgentMessageChunk(session_update="agent_message_chunk", content=schema.TextContentBlock(type="text", text=text))


def thought_chunk(text: str) -> schema.AgentThoughtChunk:
    return schema.AgentThoughtChunk(session_update="agent_thought_chunk", content=schema.TextContentBlock(type="text", text=text))


def tool_start(
    event: ToolCallEvent, real_root: Path, status: schema.ToolCallStatus = "pending"
) -> schema.ToolCallStart:
    return schema.ToolCallStart(
        session_update="tool_call",
        tool_call_id=event.tool_call_id,
        title=event.title or tool_title(event.name, event.args),
        kind=event.kind if event.kind in TOOL_KINDS else "other",  # type: ignore[arg-type]
        status=status,
        locations=locations(event.name, event.args, real_root),
        raw_input=event.args,
    )


def tool_progress(event: ToolCallUpdate, extra: list[Any] | None = None) -> schema.ToolCallProgress | None:
    """The update for a status change; None for one ACP does not show (awaiting approval)."""

    if event.status == "in_progress":
        return schema.ToolCallProgress(session_update="tool_call_update", tool_call_id=event.tool_call_id, status="in_progress")
    if event.status not in ("completed", "failed", "cancelled"):
        return None
    content: list[Any] = list(extra or [])
    result = event.result or ""
    if event.status == "cancelled":
        result = result or "cancelled"
    elif event.reason in REASON_TEXTS:
        result = f"{REASON_TEXTS[event.reason]} {result}".strip()
    if result:
        cut = len(result) > MAX_RESULT_CHARS
        content.append(text_content(clip(result, MAX_RESULT_CHARS) + ("\n[cut]" if cut else "")))
    raw_output = {k: v for k, v in to_wire(event).items() if k in RAW_OUTPUT_FIELDS}  # as the update says them
    return schema.ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=event.tool_call_id,
        status="completed" if event.status == "completed" else "failed",
        content=content or None,
        raw_output=raw_output,
    )


def plan_update(event: Plan) -> schema.AgentPlanUpdate:
    return schema.AgentPlanUpdate(
        session_update="plan",
        entries=[plan_entry(item.content, item.status) for item in event.items],
    )


def plan_entry(content: str, status: str) -> schema.PlanEntry:
    known = status if status in ("pending", "in_progress", "completed") else "pending"
    return schema.PlanEntry(content=content, priority="medium", status=known)  # type: ignore[arg-type]


def usage_update(event: TurnEnd) -> schema.UsageUpdate | None:
    if event.context_window <= 0:
        return None
    return schema.UsageUpdate(
        session_update="usage_update", used=max(0, event.context_tokens), size=event.context_window,
    )


def simple_update(event: Event, real_root: Path) -> Update | None:
    """The update of an event that needs no state (tool calls and deltas are handled by the sink)."""

    if isinstance(event, TextDelta):
        return message_chunk(event.text)
    if isinstance(event, ThinkingDelta):
        return thought_chunk(event.text)
    if isinstance(event, ToolCallEvent):
        return tool_start(event, real_root)
    if isinstance(event, Plan):
        return plan_update(event)
    if isinstance(event, TurnEnd):
        return usage_update(event)
    if isinstance(event, Notice):
        return message_chunk(f"\n\n_{event.message}_\n\n")
    if isinstance(event, Compaction):
        return message_chunk(f"\n\n_The conversation was compacted: about {event.before} tokens became {event.after}._\n\n")
    return None
