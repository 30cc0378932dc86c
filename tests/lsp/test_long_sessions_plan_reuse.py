"""A `todo_write` in a long session keeps the session's cached history (issue 35, third
session): the plan is not a message, so the store's `set_plan` answers the versions before
and after and the session service moves its entry on instead of dropping it. Before, the
request after a plan update reloaded and validated the whole session (30k messages: the
reload, the re-clean and a full validation on the next request).

Seen from outside: after the plan update a row of the session is changed in SQLite behind
the store's back (no version change). A request that reloads sends the changed row; one on
the kept history sends the row as the server loaded it. And what it sends is what a full
rebuild of the store gives (roles and call ids, message for message).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.conftest import scripted_options
from tests.lsp.test_long_sessions_reuse import STORED, _ask, _last_prompt_merged, _shape_rebuilt, _shape_sent
from tests.lsp.test_long_sessions_turn_stall import _long_session
from tunacode_lsp.core.codec import encode

PLAN = [{"content": "Read calc", "status": "in_progress", "activeForm": "Reading calc"}]


def _change_behind_the_store(home: Path, session_id: str) -> None:
    """Rewrite the first stored prompt without touching the session's version."""
    tampered: dict[str, Any] = {"role": "user", "content": [{"type": "text", "text": "CHANGED-BEHIND-THE-STORE"}],
                                "timestamp": 1}
    with sqlite3.connect(home / "sessions.sqlite3") as conn:
        done = conn.execute("UPDATE messages SET body = ? WHERE session_id = ? AND seq = 0",
                            (encode(tampered), session_id))
        assert done.rowcount == 1


async def test_a_todo_write_keeps_the_long_sessions_cached_history(lsp, model, home):
    session_id = _long_session(home, STORED)
    await lsp.start(init_options=scripted_options(model, contextWindow=100_000_000, historyTokenBudget=10_000_000))
    await _ask(lsp, model, session_id, "warm")

    model.set_script([{"tool_call": {"name": "todo_write", "arguments": {"todos": PLAN}}}, {"text": "planned"}])
    result = await lsp.command("tunacode.request", {"prompt": "plan it", "sessionId": session_id})
    assert result["stopReason"] == "end_turn", result
    assert "Read calc" in json.dumps(model.requests[-1]["messages"])  # the tool's result reached the model

    _change_behind_the_store(home, session_id)
    body = await _ask(lsp, model, session_id, "after-the-plan")
    sent = json.dumps(body["messages"])
    assert "CHANGED-BEHIND-THE-STORE" not in sent  # the kept history, not a reload
    assert "Task 0:" in sent
    assert _shape_sent(body) == _last_prompt_merged(_shape_rebuilt(home, session_id))
