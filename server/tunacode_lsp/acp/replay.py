"""A stored session as the `session/update`s `session/load` replays (pure).

User text -> user_message_chunk; assistant thinking / text -> agent_thought_chunk /
agent_message_chunk; each tool call -> tool_call (completed or failed by its stored
result, with the result's text); the stored plan last. Images are replayed as image blocks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp import schema

from tunacode_lsp.acp import updates
from tunacode_lsp.core.text import clip


def _user_chunk(block: dict[str, Any]) -> schema.UserMessageChunk | None:
    if block.get("type", "text") == "text" and isinstance(block.get("text"), str) and block["text"]:
        return schema.UserMessageChunk(session_update="user_message_chunk", content=schema.TextContentBlock(type="text", text=block["text"]))
    if block.get("type") == "image" and isinstance(block.get("url"), str):
        data = block["url"].split(",", 1)[-1]
        return schema.UserMessageChunk(
            session_update="user_message_chunk",
            content=schema.ImageContentBlock(type="image", data=data, mime_type=str(block.get("mime_type") or "image/png")),
        )
    return None


def _result_text(message: dict[str, Any]) -> str:
    parts = [b.get("text", "") for b in message.get("content") or [] if isinstance(b, dict) and b.get("type", "text") == "text"]
    return "".join(p for p in parts if isinstance(p, str))


def replay_updates(messages: list[dict[str, Any]], plan: list[dict[str, Any]], real_root: Path) -> list[updates.Update]:
    results = {m.get("tool_call_id"): m for m in messages if m.get("role") == "tool_result"}
    out: list[updates.Update] = []
    for message in messages:
        role = message.get("role")
        blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
        if role == "user":
            out.extend(chunk for b in blocks if (chunk := _user_chunk(b)) is not None)
        elif role == "assistant":
            for block in blocks:
                kind = block.get("type", "text")
                if kind == "thinking" and block.get("thinking"):
                    out.append(updates.thought_chunk(str(block["thinking"])))
                elif kind == "text" and block.get("text"):
                    out.append(updates.message_chunk(str(block["text"])))
                elif kind == "tool_call" and isinstance(block.get("id"), str):
                    out.append(_tool_call(block, results.get(block["id"]), real_root))
    if plan:
        out.append(schema.AgentPlanUpdate(
            session_update="plan",
            entries=[updates.plan_entry(str(i.get("content", "")), str(i.get("status", ""))) for i in plan],
        ))
    return out


def _tool_call(block: dict[str, Any], result: dict[str, Any] | None, real_root: Path) -> schema.ToolCallStart:
    name = str(block.get("name") or "tool")
    raw = block.get("arguments")
    args: dict[str, Any] = raw if isinstance(raw, dict) else {}
    status: schema.ToolCallStatus = "failed" if result is None or result.get("is_error") else "completed"
    text = _result_text(result) if result is not None else "no result was stored"
    content: list[Any] | None = [updates.text_content(clip(text, updates.MAX_RESULT_CHARS))] if text else None
    return schema.ToolCallStart(
        session_update="tool_call",
        tool_call_id=block["id"],
        title=updates.tool_title(name, args),
        kind=updates.tool_kind(name),
        status=status,
        locations=updates.locations(name, args, real_root),
        raw_input=args,
        content=content,
    )
