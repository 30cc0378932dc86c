"""The event loop during a model turn of a long session: status round trips and abort.

A session of 30,000 stored messages (bench/messages.py, prefilled through the store) and,
as the same-run baseline, one of 40, both on one server. Each request is two model turns:
a `list_files` tool call, then an answer. What a turn prepares on the server before the
model is called (tinyagent's `convert_to_llm`: our pruning over the whole history; the
provider's message conversion; the JSON request body) grows with the history, and while it
runs on the event loop nothing else is answered.

- longest `tunacode.status` round trip during a request: the client sends `tunacode.status`
  one at a time, from the request until its answer, and keeps the longest round trip (the
  longest time the server could not answer);
- abort -> answered at the second turn: the answer turn streams for ~1 s; the client sends
  `tunacode.abort` when the tool's `completed` update arrives (the server is then preparing
  the second model turn) and times until the request's answer (`cancelled`).

`contextWindow` is set high so the request never compacts first (compaction is its own
figure); pruning (`historyTokenBudget`, default 100k) runs as it would.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tunacode_lsp.store.session_store import SessionStore

from .client import WAIT, BenchServer, event_is, scripted_options
from .config import BenchConfig
from .model import ScriptedModelProcess
from .stats import Goal, Row, Samples, ms
from .storage import fill
from .workspace import make_project

LONG = 30_000
SMALL = 40
TOOL_TURN: dict[str, Any] = {"steps": [{"text": "Listing."}, {"tool_call": {"name": "list_files", "arguments": {"path": "."}}}]}
QUICK_ANSWER: dict[str, Any] = {"text": "Done."}
SLOW_ANSWER: dict[str, Any] = {"steps": [{"text": "word " * 40, "chunks": 40, "delay": 0.025}]}


def script(answer: dict[str, Any], requests: int) -> dict[str, Any]:
    return {"turns": [TOOL_TURN, answer] * requests, "on_exhausted": "repeat_last"}


async def longest_status_stall(server: BenchServer, session_id: str) -> float:
    """One request (tool turn + answer); the longest status round trip while it ran, in seconds."""
    pending = server.send("tunacode.request", {"prompt": "list it", "sessionId": session_id})
    longest = 0.0
    while not pending.future.done():
        started = time.perf_counter()
        await server.command("tunacode.status")
        longest = max(longest, time.perf_counter() - started)
    result = await pending.answer()
    if result["stopReason"] != "end_turn":
        raise RuntimeError(f"turn stall: the request ended with {result['stopReason']!r}: {result.get('error')}")
    return longest


async def abort_at_second_turn(server: BenchServer, session_id: str) -> float:
    """One request aborted when its tool finished; seconds from abort to answer."""
    server.events.clear()
    pending = server.send("tunacode.request", {"prompt": "list it", "sessionId": session_id})
    done = await asyncio.wait_for(server.events.expect(event_is("tool_call_update", status="completed")), WAIT)
    abort = server.send("tunacode.abort", {"requestId": done.event["requestId"]})
    result = await pending.answer()
    await abort.answer()
    if result["stopReason"] != "cancelled":
        raise RuntimeError(f"turn stall abort: the request ended with {result['stopReason']!r}")
    return pending.answered_at - abort.sent_at


async def run(config: BenchConfig) -> list[Row]:
    workspace = make_project(config.folder("turn_stall/workspace"), modules=1)
    home = config.folder("turn_stall/home")
    with SessionStore(home / "sessions.sqlite3") as store:
        long_id, small_id = fill(store, LONG), fill(store, SMALL)
    # The scripted model runs on the same 2 cores as the server. Decoding a 30k session's
    # ~4 MB body takes it ~0.2 s of CPU per model call, during exactly the turns measured,
    # which the small session does not pay and a remote provider never puts on the user's
    # machine: the figures are taken with a model that does not decode bodies, then (same
    # run, same sessions) with one that does, as before.
    rows = await _measure(workspace, home, long_id, small_id, config.reps(6), decode_bodies=False, label="")
    rows += await _measure(
        workspace, home, long_id, small_id, config.reps(6), decode_bodies=True,
        label=" (the scripted model decoding each body)",
    )
    return rows


async def _measure(
    workspace: Any, home: Any, long_id: str, small_id: str, reps: int, *, decode_bodies: bool, label: str
) -> list[Row]:
    stall = {long_id: Samples(), small_id: Samples()}
    abort = {long_id: Samples(), small_id: Samples()}
    with ScriptedModelProcess(script(QUICK_ANSWER, 1), decode_bodies=decode_bodies) as model:
        server = await BenchServer(workspace, home).start(scripted_options(model.chat_url, contextWindow=100_000_000))
        try:
            model.set_script(script(QUICK_ANSWER, 2 * (reps + 1)))
            for session_id in (long_id, small_id):  # warm-up: imports, the session cache
                await longest_status_stall(server, session_id)
            for _ in range(reps):
                for session_id in (long_id, small_id):
                    stall[session_id].add(ms(await longest_status_stall(server, session_id)))
            for _ in range(reps):
                for session_id in (long_id, small_id):
                    model.set_script(script(SLOW_ANSWER, 1))  # an abort before the model call leaves its turn unused
                    abort[session_id].add(ms(await abort_at_second_turn(server, session_id)))
        finally:
            await server.stop()
    small = f"the same on a {SMALL}-message session"
    return [
        Row(f"longest status round trip during a request, {LONG // 1000}k-message session{label}", stall[long_id],
            stall[small_id], small, Goal("ratio", 2.0), ratio_of="p50"),
        Row(f"abort -> answered while turn 2 is prepared, {LONG // 1000}k-message session{label}", abort[long_id],
            abort[small_id], small, Goal("ratio", 2.0), ratio_of="p50"),
    ]
