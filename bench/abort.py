"""Abort figures: abort -> request answered while the model streams, and while a shell tool runs.

Mid-stream: after the first `text_delta` of a request the client sends `tunacode.abort`;
the figure is the time until the `tunacode.request` answer arrives. The baseline is
tinyagent's own `Agent.abort()` with its Rust provider on the same script: the time until
`Agent.prompt()` returns. Mid-tool: the model asks for a shell command that writes its
process group id to a FIFO and sleeps; once the bench reads the id it aborts, and measures
until the answer arrives and until the process group no longer exists (the later of both).
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from tinyagent import Agent, AgentOptions
from tinyagent.alchemy_provider import OpenAICompatModel as RustModel
from tinyagent.alchemy_provider import stream_alchemy_openai_completions

from . import scripts
from .client import WAIT, BenchServer, event_is, scripted_options
from .config import BenchConfig
from .model import ScriptedModelProcess
from .stats import Goal, Row, Samples, ms

GROUP_POLL_SECONDS = 0.0005  # how often the bench looks for the process group after an abort


async def abort_mid_stream(server: BenchServer) -> float:
    """One request aborted after its first text delta; seconds from abort to answer."""
    pending = server.send("tunacode.request", {"prompt": "talk slowly"})
    first = await asyncio.wait_for(server.events.expect(event_is("text_delta")), WAIT)
    request_id = first.event["requestId"]
    abort = server.send("tunacode.abort", {"requestId": request_id})
    result = await pending.answer()
    await abort.answer()
    if result["stopReason"] != "cancelled":
        raise RuntimeError(f"abort mid-stream: the request ended with {result['stopReason']!r}")
    return pending.answered_at - abort.sent_at


async def tinyagent_abort_mid_stream(chat_url: str) -> float:
    """tinyagent alone: Agent.abort() after the first text delta; seconds until prompt() returns."""
    agent = Agent(AgentOptions(stream_fn=stream_alchemy_openai_completions, get_api_key=lambda _p: "local"))
    agent.set_model(RustModel(provider="openai", id="scripted", base_url=chat_url))
    first_delta = asyncio.Event()

    def watch(event: object) -> None:
        if getattr(event, "type", "") == "message_update":
            first_delta.set()

    agent.subscribe(watch)
    run = asyncio.ensure_future(agent.prompt("talk slowly"))
    await asyncio.wait_for(first_delta.wait(), WAIT)
    aborted_at = time.perf_counter()
    agent.abort()
    try:
        await asyncio.wait_for(run, WAIT)
    except RuntimeError:
        pass  # "Request was aborted" is one way it ends
    return time.perf_counter() - aborted_at


async def _group_gone(pgid: int) -> float:
    """perf_counter time at which no process of the group is left (polled: nothing to wait on)."""
    deadline = time.perf_counter() + WAIT
    while time.perf_counter() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return time.perf_counter()
        await asyncio.sleep(GROUP_POLL_SECONDS)
    raise RuntimeError(f"process group {pgid} still alive {WAIT} s after the abort")


async def abort_mid_tool(server: BenchServer, fifo: Path) -> tuple[float, float]:
    """One request aborted while its shell command runs; (to answer, to group gone) in seconds."""
    pending = server.send("tunacode.request", {"prompt": "run it"})
    pgid = int(await asyncio.wait_for(asyncio.to_thread(fifo.read_text), WAIT))
    running = await asyncio.wait_for(server.events.expect(event_is("tool_call_update", status="in_progress")), WAIT)
    abort = server.send("tunacode.abort", {"requestId": running.event["requestId"]})
    gone_at = await _group_gone(pgid)
    result = await pending.answer()
    if result["stopReason"] != "cancelled":
        raise RuntimeError(f"abort mid-tool: the request ended with {result['stopReason']!r}")
    return pending.answered_at - abort.sent_at, gone_at - abort.sent_at


async def measure_server(
    config: BenchConfig, model: ScriptedModelProcess, workspace: Path, home: Path, command: list[str] | None
) -> tuple[Samples, Samples, Samples]:
    """(mid-stream, mid-tool answer, mid-tool answer and group gone) on one server."""
    stream, tool_answer, tool_total = Samples(), Samples(), Samples()
    fifo = workspace / "pgid.fifo"
    model.set_script(scripts.repeat(scripts.SLOW_TEXT))
    server = await BenchServer(workspace, home).start(scripted_options(model.chat_url), command=command)
    try:
        await abort_mid_stream(server)  # warm-up: imports, first connection, the database
        for _ in range(config.reps(60)):
            server.events.clear()
            stream.add(ms(await abort_mid_stream(server)))
        model.set_script(scripts.repeat(scripts.bash_turn(f"echo $$ > {fifo.name}; sleep 30")))
        for _ in range(config.reps(30)):
            server.events.clear()
            answer, gone = await abort_mid_tool(server, fifo)
            tool_answer.add(ms(answer))
            tool_total.add(ms(max(answer, gone)))
    finally:
        await server.stop()
    return stream, tool_answer, tool_total


async def run(config: BenchConfig) -> list[Row]:
    workspace = config.folder("abort/workspace")
    os.mkfifo(workspace / "pgid.fifo")
    baseline = Samples()
    with ScriptedModelProcess(scripts.repeat(scripts.SLOW_TEXT)) as model:
        for _ in range(config.reps(5)):
            baseline.add(ms(await tinyagent_abort_mid_stream(model.chat_url)))
        stream, tool_answer, tool_total = await measure_server(
            config, model, workspace, config.folder("abort/home"), None)
    base_name = "tinyagent Agent.abort(), Rust provider"
    return [
        Row("abort -> answered, model streaming", stream, baseline, base_name, Goal("p99", 50), ratio_of="p99"),
        Row("abort -> answered, shell tool running", tool_answer),
        Row("abort -> answered + process group gone", tool_total, goal=Goal("p99", 100)),
    ]
