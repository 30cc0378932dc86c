"""Server overhead and first-event latency.

Overhead: one session of 20 model turns (4 requests of 4 tool-call turns and an answer:
read_file, grep, list_files, bash) through the LSP server, against the same script through
our runner in-process (`AgentRequest` with a sink that drops events and a message log in
memory). Runs rotate so drift on a shared machine hits all alike. The same session also
(The store's `synchronous = NORMAL`, once a what-if here, is what the server ships.)
The bench's client declares `experimental.tunacode` as the editor clients do (it renders the
events), so the server does not also send it each answer as a log and a shown message (a
plain client's path, lsp/plain_answers.py); before 2026-11-27 it was a plain client here.

First event: `tunacode.request` sent -> its first `tunacode/event` (request_start)
received, with the model answering at once, for a new session and for an existing one;
the baseline is a `tunacode.status` round trip on the same server.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from . import scripts
from .client import WAIT, BenchServer, event_is, scripted_options
from .config import BenchConfig
from .inprocess import MemoryLog, run_in_process
from .model import ScriptedModelProcess
from .stats import Goal, Row, Samples, ms
from .workspace import make_project

REQUESTS = 4
TOOL_TURNS = 4  # per request, plus one answer: 4 x 5 = 20 model turns
PROMPTS = [f"Task {i + 1}: look through the project and report." for i in range(REQUESTS)]


async def session_over_lsp(server: BenchServer, model: ScriptedModelProcess) -> float:
    model.set_script(scripts.tool_session(REQUESTS, TOOL_TURNS))
    started = time.perf_counter()
    session_id = None
    for prompt in PROMPTS:
        args = {"prompt": prompt} | ({"sessionId": session_id} if session_id else {})
        result = await server.command("tunacode.request", args)
        _check(result)
        session_id = result["sessionId"]
    return time.perf_counter() - started


async def session_in_process(workspace: Path, model: ScriptedModelProcess) -> float:
    model.set_script(scripts.tool_session(REQUESTS, TOOL_TURNS))
    log = MemoryLog()
    started = time.perf_counter()
    for prompt in PROMPTS:
        result = await run_in_process(model.chat_url, workspace, prompt, log)
        _check({"stopReason": result.stop_reason, "toolCalls": result.tool_calls})
    return time.perf_counter() - started


def _check(result: dict) -> None:
    calls = result["toolCalls"]
    if result["stopReason"] != "end_turn" or len(calls) != TOOL_TURNS:
        raise RuntimeError(f"scripted session went wrong: {result['stopReason']}, {len(calls)} tool calls")
    for call in calls:
        status = call["status"] if isinstance(call, dict) else call.status
        if status != "completed":
            raise RuntimeError(f"a tool call of the scripted session ended {status}: {call}")


async def first_event(server: BenchServer, session_id: str | None) -> float:
    server.events.clear()
    args = {"prompt": "hello"} | ({"sessionId": session_id} if session_id else {})
    pending = server.send("tunacode.request", args)
    first = await asyncio.wait_for(server.events.expect(lambda e: True), WAIT)
    if first.event["type"] != "request_start":
        raise RuntimeError(f"the first event was {first.event['type']}")
    await pending.answer()
    await asyncio.wait_for(server.events.expect(event_is("request_end")), WAIT)
    return first.at - pending.sent_at


async def run(config: BenchConfig) -> list[Row]:
    workspace = make_project(config.folder("overhead/workspace"))
    over_lsp, in_process = Samples(), Samples()
    first_new, first_old, status = Samples(), Samples(), Samples()
    with ScriptedModelProcess(scripts.repeat(scripts.QUICK_TEXT)) as model:
        server = await BenchServer(workspace, config.folder("overhead/home")).start(
            scripted_options(model.chat_url), renders_events=True)  # a client that shows the events
        try:
            runs = [
                (over_lsp, lambda: session_over_lsp(server, model)),
                (in_process, lambda: session_in_process(workspace, model)),
            ]
            for _, measure in runs:  # warm-up
                await measure()
            for rep in range(config.reps(10)):
                for samples, measure in runs[rep % 2:] + runs[:rep % 2]:  # rotate: drift hits all alike
                    samples.add(ms(await measure()))

            model.set_script(scripts.repeat(scripts.QUICK_TEXT))
            session_id = (await server.command("tunacode.request", {"prompt": "start"}))["sessionId"]
            for _ in range(config.reps(40)):
                first_new.add(ms(await first_event(server, None)))
                first_old.add(ms(await first_event(server, session_id)))
                sent = server.send("tunacode.status")
                await sent.answer()
                status.add(ms(sent.latency))
        finally:
            await server.stop()
    in_process_name = "same script, AgentRequest in-process"
    status_name = "tunacode.status round trip"
    return [
        Row("20-turn session with tools: LSP vs in-process", over_lsp, in_process, in_process_name,
            Goal("ratio", 1.15)),
        Row("prompt -> first event, new session", first_new, status, status_name, Goal("p50", 5)),
        Row("prompt -> first event, existing session", first_old, status, status_name, Goal("p50", 5)),
    ]
