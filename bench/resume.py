"""Resume figures through the server's session service (agent/sessions.py), 30k messages.

What a request pays for its session's history (`SessionService.history`), timed on the
event loop from the caller's side (the work itself runs on the store's threads):

- first request after the server started: version check, load + validate (store thread),
  clean (store thread);
- a later request after this server appended one message (the cache is extended; the view
  is cleaned again);
- a later request with nothing written since (a version check only).

Baseline, same run: what every request paid before the cache, `clean_history(
store.load_messages(id))` timed the same way (the figure bench/storage.py reports).
"""

from __future__ import annotations

import gc
import time

from tunacode_lsp.agent.sessions import SessionService
from tunacode_lsp.core.history import clean_history
from tunacode_lsp.store.session_store import SessionStore

from .config import BenchConfig
from .messages import message
from .stats import Goal, Row, Samples, ms
from .storage import RESUME_SIZE, fill


async def run(config: BenchConfig) -> list[Row]:
    folder = config.folder("resume")
    path = folder / "sessions.sqlite3"
    with SessionStore(path) as store:
        session_id = fill(store, RESUME_SIZE)
        baseline = Samples()
        for _ in range(config.reps(5)):
            started = time.perf_counter()
            clean_history(store.load_messages(session_id))
            baseline.add(ms(time.perf_counter() - started))
    cold, appended, unchanged = Samples(), Samples(), Samples()
    cold_cpu: list[float] = []  # the process's CPU time during the cold request (all threads)
    index = RESUME_SIZE
    for _ in range(config.reps(5)):
        gc.collect()  # the previous "server"'s cache is gone, as with a new process
        service = SessionService(path)  # a new server process: an empty cache
        try:
            started, cpu = time.perf_counter(), time.process_time()
            history = await service.history(session_id)
            cold.add(ms(time.perf_counter() - started))
            cold_cpu.append(ms(time.process_time() - cpu))
            if len(history) < RESUME_SIZE:
                raise RuntimeError(f"resume: {len(history)} messages")
            for _ in range(config.reps(5)):
                for _ in range(2):  # keep the cycle valid: the synthetic messages come in order
                    await service.append(session_id, message(index), usage=None, thoughts=None, model=None)
                    index += 1
                started = time.perf_counter()
                await service.history(session_id)
                appended.add(ms(time.perf_counter() - started))
                started = time.perf_counter()
                await service.history(session_id)
                unchanged.add(ms(time.perf_counter() - started))
        finally:
            service.close()
            del service, history
    name = "load + validate + clean on every request"
    return [
        Row("resume 30k, first request of a server (cache empty)", cold, baseline, name, Goal("p50", 300),
            note="CPU time of the process during it (wall time on a loaded machine is mostly waiting): "
            + ", ".join(f"{c:.0f}" for c in sorted(cold_cpu)) + " ms"),
        Row("resume 30k, later request after appends (cached, re-cleaned)", appended, baseline, name, Goal("p50", 300)),
        Row("resume 30k, later request, nothing written since", unchanged, baseline, name, Goal("p50", 300)),
    ]
