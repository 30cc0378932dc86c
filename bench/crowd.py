"""`tunacode.status` while 200 requests run at once (issue 35): 200 requests in 200 new
sessions, each streaming a slow answer; once every one has started, `tunacode.status` round
trips one at a time. Baseline: the same round trip on the idle server, same run. Goal: p99
(with 15 samples, the longest) under 1 s (version 2 answered in under a second; the figure
was 1.7 s)."""

from __future__ import annotations

import asyncio

from .client import BenchServer, event_is, scripted_options
from .config import BenchConfig
from .model import ScriptedModelProcess
from .scripts import repeat
from .stats import Goal, Row, Samples, ms
from .workspace import make_project

REQUESTS = 200
SLOW = {"steps": [{"text": "word " * 400, "chunks": 400, "delay": 0.1}]}  # ~40 s: outlasts the sampling


async def run(config: BenchConfig) -> list[Row]:
    count = config.reps(REQUESTS, 20)
    workspace = make_project(config.folder("crowd/workspace"), modules=3)
    idle, busy, starts = Samples(), Samples(), Samples()
    with ScriptedModelProcess(repeat(SLOW)) as model:
        server = await BenchServer(workspace, config.folder("crowd/home")).start(scripted_options(model.chat_url))
        try:
            for _ in range(config.reps(20, 2) + 3):
                sent = server.send("tunacode.status")
                await sent.answer()
                idle.add(ms(sent.latency))
            del idle.values[:3]
            requests = [server.send("tunacode.request", {"prompt": f"crowd {i}"}) for i in range(count)]
            started = await asyncio.wait_for(asyncio.gather(
                *(server.events.expect(event_is("request_start", prompt=f"crowd {i}")) for i in range(count))), 300)
            for _ in range(config.reps(15, 2)):
                sent = server.send("tunacode.status")
                answer = await sent.answer(timeout=120)
                busy.add(ms(sent.latency))
                starts.add(len(answer["activeRequests"]))
            await asyncio.gather(*(server.command("tunacode.abort", {"requestId": a.event["requestId"]}) for a in started))
            await asyncio.wait_for(asyncio.gather(*(r.answer(timeout=120) for r in requests)), 180)
        finally:
            await server.stop()
    return [Row(f"tunacode.status while {count} requests run", busy, idle, "tunacode.status, idle server",
                Goal("p99", 1000), ratio_of="p99", note=f"active requests seen by status: {starts.low:.0f}..{starts.high:.0f}")]
