"""A stored session as the `session/update`s `session/load` replays (pure).

The session's projection (agent/projection.py: the events its requests emitted) mapped by
the same functions that map live events (acp/updates.py), so a replayed tool call goes
through the statuses it went through live; each request's prompt (`request_start`) becomes
a user_message_chunk.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp import schema

from tunacode_lsp.acp import updates
from tunacode_lsp.contract.protocol import RequestStart, ToolCallUpdate, event_from_wire


def replay_updates(events: list[dict[str, Any]], real_root: Path) -> list[updates.Update]:
    out: list[updates.Update] = []
    for body in events:
        event = event_from_wire(body)
        update: updates.Update | None
        if isinstance(event, RequestStart):
            update = schema.UserMessageChunk(
                session_update="user_message_chunk", content=schema.TextContentBlock(type="text", text=event.prompt)
            )
        elif isinstance(event, ToolCallUpdate):
            update = updates.tool_progress(event)
        elif event is not None:
            update = updates.simple_update(event, real_root)
        else:
            update = None
        if update is not None:
            out.append(update)
    return out
