"""`tunacode.status` latency while 4 requests stream at full speed in 4 sessions.

Four requests (new sessions) stream long answers as fast as the scripted model sends them;
meanwhile the client sends `tunacode.status` again and again, one at a time, and keeps each
round trip whose answer lists all 4 requests as active. Baseline: the same round trip on the
same server while it is idle. The note gives the event rate the client received meanwhile.
"""

from __future__ import annotations

import asyncio
import time

from . import scripts
from .client import BenchServer, Sent, event_is, scripted_options
from .config import BenchConfig
from .model import ScriptedModelProcess
from .stats import Goal, Row, Samples, ms
from .workspace import make_project

STREAMS = 4
PIECES = 200_000  # far more than the sampling needs: the streams are aborted after it


async def status_once(server: BenchServer) -> tuple[float, int]:
    sent: Sent = server.send("tunacode.status")
    answer = await sent.answer()
    return sent.latency, len(answer["activeRequests"])


async def run(config: BenchConfig) -> list[Row]:
    workspace = make_project(config.folder("concurrency/workspace"), modules=1)
    idle, busy = Samples(), Samples()
    with ScriptedModelProcess(scripts.repeat(scripts.fast_stream(PIECES))) as model:
        server = await BenchServer(workspace, config.folder("concurrency/home")).start(scripted_options(model.chat_url))
        try:
            for _ in range(config.reps(100) + 5):  # the first few warm the server up
                latency, _ = await status_once(server)
                idle.add(ms(latency))
            del idle.values[:5]
            requests = [server.send("tunacode.request", {"prompt": f"stream {i}"}) for i in range(STREAMS)]
            starts = await asyncio.wait_for(asyncio.gather(
                *(server.events.expect(event_is("request_start", prompt=f"stream {i}")) for i in range(STREAMS))), 30)
            request_ids = [a.event["requestId"] for a in starts]
            # sampling starts once every stream has delivered a few deltas
            await asyncio.wait_for(asyncio.gather(*(server.events.expect(
                lambda e, rid=rid: e["requestId"] == rid and e["type"] == "text_delta" and e["seq"] > 3)
                for rid in request_ids)), 30)
            deltas_before, started = _deltas(server), time.perf_counter()
            wanted, tries = config.reps(300), 0
            while len(busy) < wanted and tries < wanted * 3:
                tries += 1
                latency, active = await status_once(server)
                if active == STREAMS:
                    busy.add(ms(latency))
            rate = (_deltas(server) - deltas_before) / (time.perf_counter() - started)
            for request_id in request_ids:
                await server.command("tunacode.abort", {"requestId": request_id})
            results = [await r.answer() for r in requests]
            if any(r["stopReason"] != "cancelled" for r in results):
                raise RuntimeError("a stream ended before the sampling did: make PIECES larger")
        finally:
            await server.stop()
    return [Row(f"tunacode.status while {STREAMS} requests stream", busy, idle, "tunacode.status, idle server",
                Goal("p99", 20), ratio_of="p99",
                note=f"the client received {rate:,.0f} text_delta events/s meanwhile")]


def _deltas(server: BenchServer) -> int:
    return sum(1 for a in server.events.arrivals if a.event["type"] == "text_delta")
