"""A long session's history is reused between requests (issue 35, third session): the
session service extends its cleaned view, the runner keeps the validated models, their
token sums and the planned model input. Red team: after every way a session changes
besides this server's own appends, what the model is sent must be what a full rebuild
gives (the stored messages cleaned again, in order), never a stale cache:

- another process appends to the same session (the SQLite store is shared);
- a rewind cuts the history back;
- a compaction replaces the older turns with a summary;
- a fork and an import are new sessions with the same messages.

The session holds more than `history_models.MIN_MESSAGES` messages, so every reuse path runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import scripted_options
from tests.lsp.test_long_sessions_turn_stall import _long_session
from tunacode_lsp.agent import history_models
from tunacode_lsp.core.history import clean_history
from tunacode_lsp.store.session_state import compacted_view
from tunacode_lsp.store.session_store import SessionStore

STORED = history_models.MIN_MESSAGES + 200


def _shape_sent(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The model's input as (role, its tool call ids or the call it answers), the system prompt left out."""
    shape = []
    for message in body["messages"]:
        role = message["role"]
        if role == "system":
            continue
        if role == "assistant":
            shape.append((role, ",".join(c["id"] for c in message.get("tool_calls") or [])))
        else:
            shape.append((role, message.get("tool_call_id") or ""))
    return shape


def _shape_rebuilt(home: Path, session_id: str, prompt_after: bool = True) -> list[tuple[str, str]]:
    """The same, from the store read again whole by another process: the full rebuild."""
    with SessionStore(home / "sessions.sqlite3") as store:
        _version, stored, compaction = store.load_state(session_id)
    shape = []
    for message in clean_history(compacted_view(stored, compaction)):
        role = message["role"]
        if role == "assistant":
            shape.append((role, ",".join(b["id"] for b in message["content"] if b.get("type") == "tool_call")))
        elif role == "tool_result":
            shape.append(("tool", message["tool_call_id"]))
        else:
            shape.append((role, ""))
    return shape


async def _ask(lsp, model, session_id: str, prompt: str) -> dict[str, Any]:
    model.set_script([{"text": f"answer to {prompt}"}])
    result = await lsp.command("tunacode.request", {"prompt": prompt, "sessionId": session_id})
    assert result["stopReason"] == "end_turn", result
    return model.requests[-1]


def _last_prompt_merged(shape: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The stored history now ends with the request's prompt and answer: what was sent is
    that history without its answer."""
    return shape[:-1]


async def test_the_model_input_after_other_writers_rewind_compaction_fork_and_import_equals_a_full_rebuild(lsp, model, home):
    session_id = _long_session(home, STORED)
    await lsp.start(init_options=scripted_options(model, contextWindow=100_000_000, historyTokenBudget=10_000_000))
    await _ask(lsp, model, session_id, "warm-1")
    await _ask(lsp, model, session_id, "warm-2")  # the second request runs on the kept history

    # another process appends to the same session: an open tool call, a prompt, an answer
    with SessionStore(home / "sessions.sqlite3") as other:
        other.append_messages(session_id, [
            {"role": "user", "content": [{"type": "text", "text": "OTHER-PROCESS-PROMPT"}]},
            {"role": "assistant", "content": [{"type": "tool_call", "id": "call_other", "name": "read_file",
                                               "arguments": {"filepath": "a.py"}}], "stop_reason": "tool_calls"},
        ])
    body = await _ask(lsp, model, session_id, "after-other")
    assert "OTHER-PROCESS-PROMPT" in json.dumps(body["messages"])
    assert _shape_sent(body) == _last_prompt_merged(_shape_rebuilt(home, session_id))

    # a rewind of the last request: its prompt is never sent again
    model.set_script([{"text": "answer to be rewound"}])
    marked = await lsp.command("tunacode.request", {"prompt": "REWOUND-PROMPT", "sessionId": session_id})
    assert marked["stopReason"] == "end_turn", marked
    await lsp.command("tunacode.session.rewind", {"sessionId": session_id, "requestId": marked["requestId"], "files": False})
    body = await _ask(lsp, model, session_id, "after-rewind")
    assert "REWOUND-PROMPT" not in json.dumps(body["messages"])
    assert _shape_sent(body) == _last_prompt_merged(_shape_rebuilt(home, session_id))

    # a compaction: the summary stands for the older turns from the next request on
    model.set_script([{"steps": [{"text": "SUMMARY-TEXT"}, {"usage": {"prompt_tokens": 1000, "completion_tokens": 5}}]}])
    await lsp.command("tunacode.session.compact", {"sessionId": session_id})
    body = await _ask(lsp, model, session_id, "after-compaction")
    sent = json.dumps(body["messages"])
    assert "SUMMARY-TEXT" in sent and "Task 0:" not in sent
    assert _shape_sent(body) == _last_prompt_merged(_shape_rebuilt(home, session_id))
    body = await _ask(lsp, model, session_id, "after-compaction-2")  # and on the kept history after it
    assert _shape_sent(body) == _last_prompt_merged(_shape_rebuilt(home, session_id))

    # a fork and an import: new sessions whose first request sends their own messages
    fork = await lsp.command("tunacode.session.fork", {"sessionId": session_id, "messageCount": STORED - 7})
    body = await _ask(lsp, model, fork["sessionId"], "in-the-fork")
    assert "OTHER-PROCESS-PROMPT" not in json.dumps(body["messages"])
    assert _shape_sent(body) == _last_prompt_merged(_shape_rebuilt(home, fork["sessionId"]))
    document = await lsp.command("tunacode.session.export", {"sessionId": session_id})
    imported = await lsp.command("tunacode.session.import", {"document": document})
    body = await _ask(lsp, model, imported["sessionId"], "in-the-import")
    # (the other process's unanswered call made the stored history unclean: an import cleans it
    # and then drops the compaction, whose cut would point elsewhere: store/session_store.py)
    assert _shape_sent(body) == _last_prompt_merged(_shape_rebuilt(home, imported["sessionId"]))

    # and the origin, after all that, once more on its kept history
    body = await _ask(lsp, model, session_id, "origin-again")
    assert _shape_sent(body) == _last_prompt_merged(_shape_rebuilt(home, session_id))
