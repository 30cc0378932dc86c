"""A long session's turn is prepared off the event loop: an abort meanwhile is answered at once.

Before each model turn the server converts the whole history (pruning, the provider's
message conversion, the JSON body). With 30,000 stored messages that is hundreds of ms of
CPU; it runs on worker threads, and an abort ends the wait for them, so the model is not
called for that turn. The speed itself is a bench figure (bench/turn_stall.py); this test
holds the behaviour: answered within a bound, cancelled, the history valid, and no model
call for the turn the abort interrupted. Before the change it failed every time on that last
point (the abort was read only once the turn's request had been built and sent; the bound
itself held at ~0.25 s on this machine, so the time alone does not tell before from after).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from tests.conftest import scripted_options
from tunacode_lsp.core.history import unanswered_tool_calls
from tunacode_lsp.store.session_store import SessionStore

STORED = 30_000
ANSWER_BOUND = 1.0  # seconds from the abort to the request's answer (bench: ~0.16 s p50; 0.21-0.27 s before)
OUTPUT = "".join(f"{n}: value = {n} * 7  # line {n} of the module\n" for n in range(30))
TOOL_TURN = {"steps": [{"text": "Listing."}, {"tool_call": {"name": "list_files", "arguments": {"path": "."}}}]}
SLOW_ANSWER = {"steps": [{"text": "word " * 40, "chunks": 40, "delay": 0.025}]}


def _message(index: int) -> dict[str, Any]:
    """Message `index` of a synthetic session: prompt, tool call, its result, answer."""
    cycle, kind = divmod(index, 4)
    call_id, stamp = f"call_{cycle}", 1_795_316_222_419 + index
    if kind == 0:
        return {"role": "user", "content": [{"type": "text", "text": f"Task {cycle}: look at module {cycle % 50}."}], "timestamp": stamp}
    if kind == 2:
        return {"role": "tool_result", "tool_call_id": call_id, "tool_name": "read_file",
                "content": [{"type": "text", "text": f"src/module_{cycle % 50}.py\n{OUTPUT}"}], "timestamp": stamp}
    content: list[dict[str, Any]] = [{"type": "text", "text": "Reading it." if kind == 1 else "Nothing to change."}]
    if kind == 1:
        content.append({"type": "tool_call", "id": call_id, "name": "read_file", "arguments": {"filepath": f"src/module_{cycle % 50}.py"}})
    return {"role": "assistant", "content": content, "stop_reason": "tool_calls" if kind == 1 else "stop", "timestamp": stamp,
            "api": "openai-completions", "provider": "openai-compatible", "model": "scripted"}


def _long_session(home: Path, count: int) -> str:
    with SessionStore(home / "sessions.sqlite3") as store:
        session_id = store.create_session(cwd=str(home), model="openai-compatible:scripted").session_id
        for start in range(0, count, 5_000):
            store.append_messages(session_id, [_message(i) for i in range(start, min(count, start + 5_000))])
    return session_id


async def test_abort_while_a_long_sessions_turn_is_prepared_is_answered_at_once(lsp, model, home):
    session_id = _long_session(home, STORED)
    model.set_script([TOOL_TURN, SLOW_ANSWER])
    await lsp.start(init_options=scripted_options(model, contextWindow=100_000_000))
    pending = lsp.send_command("tunacode.request", {"prompt": "list it", "sessionId": session_id})
    done = await lsp.wait_for_event(lambda e: e.get("type") == "tool_call_update" and e.get("status") == "completed", 60.0)
    calls = len(model.requests)  # the tool turn's call; turn 2 is being prepared now
    sent = time.perf_counter()
    abort = lsp.send_command("tunacode.abort", {"requestId": done["requestId"]})
    result = await asyncio.wait_for(pending, 30.0)
    answered = time.perf_counter() - sent
    assert await asyncio.wait_for(abort, 5.0) == {"aborted": 1}
    assert result["stopReason"] == "cancelled", result
    assert answered < ANSWER_BOUND, f"the abort was answered after {answered:.2f} s"
    assert len(model.requests) == calls, "turn 2 reached the model after the abort"
    with SessionStore(home / "sessions.sqlite3") as store:
        stored = store.load_messages(session_id)
    assert len(stored) > STORED and unanswered_tool_calls(stored) == []
    assert stored[STORED]["content"][0]["text"] == "list it"

