"""Storage figures: storing one finished message at 1k/10k/100k messages; resuming 30k.

Store: `SessionStore.append_messages(session_id, [dump])`, one message per call, timed
in-process, into sessions prefilled in batches. Baseline: what the seeds' system did,
rewriting the whole session as one JSON file (json.dumps + write, no fsync) at the same size.
A what-if line runs the same appends with another setting on the store's connection (not
shipped): `wal_autocheckpoint = 0` (no checkpoint inside an append; a server would then
checkpoint when idle).

Resume: `clean_history(store.load_messages(id))` of a 30k-message session (load, validate
every row, clean); baseline: reading and parsing the seeds' one JSON file of the same session.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tunacode_lsp.core.history import clean_history
from tunacode_lsp.store.session_store import SessionStore

from .config import BenchConfig
from .messages import message, messages
from .stats import Goal, Row, Samples, ms

FILL_BATCH = 5_000
SIZES = (1_000, 10_000, 100_000)
RESUME_SIZE = 30_000


def fill(store: SessionStore, count: int) -> str:
    """A new session with `count` synthetic messages, inserted in batches."""
    session_id = store.create_session(cwd=str(store.path.parent), model="openai-compatible:scripted").session_id
    for start in range(0, count, FILL_BATCH):
        store.append_messages(session_id, list(messages(start, min(FILL_BATCH, count - start))))
    return session_id


def time_appends(store: SessionStore, session_id: str, first_index: int, reps: int) -> tuple[Samples, Samples]:
    """(wall time, this thread's CPU time) of each append: wall minus CPU is waiting (disk, scheduler)."""
    wall, cpu = Samples(), Samples()
    for i in range(reps):
        dump = message(first_index + i)
        started, started_cpu = time.perf_counter(), time.thread_time()
        store.append_messages(session_id, [dump])
        wall.add(ms(time.perf_counter() - started))
        cpu.add(ms(time.thread_time() - started_cpu))
    return wall, cpu


def cpu_note(cpu: Samples) -> str:
    return f"CPU time of the append: p50 {cpu.p50:.2f} ms, p99 {cpu.p99:.2f} ms"


def seeds_document(session_id: str, history: list[dict[str, Any]]) -> dict[str, Any]:
    return {"version": 1, "session_id": session_id, "working_directory": "/work", "current_model": "scripted",
            "total_tokens": 0, "messages": history}


def time_json_rewrites(path: Path, document: dict[str, Any], first_index: int, reps: int) -> Samples:
    """The seeds' way: append to the list in memory, then rewrite the whole file."""
    samples = Samples()
    for i in range(reps):
        dump = message(first_index + i)
        started = time.perf_counter()
        document["messages"].append(dump)
        path.write_text(json.dumps(document))
        samples.add(ms(time.perf_counter() - started))
    return samples


SHIPPED = {"synchronous": "NORMAL", "wal_autocheckpoint": "1000"}  # as SessionStore sets them
WHAT_IFS = {
    "no auto-checkpoint": {"synchronous": "NORMAL", "wal_autocheckpoint": "0"},
}


def set_pragmas(store: SessionStore, pragmas: dict[str, str]) -> None:
    """Settings on this thread's connection of the store (the one the timed appends use)."""
    conn = store._conn()
    for name, value in pragmas.items():
        conn.execute(f"PRAGMA {name} = {value}")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every variant starts from an empty WAL


def warm_up(store: SessionStore, session_id: str, index: int) -> int:
    """One untimed append: the first write after a WAL reset also writes and syncs its header."""
    store.append_messages(session_id, [message(index)])
    return index + 1


async def run(config: BenchConfig) -> list[Row]:
    folder = config.folder("storage")
    rows: list[Row] = []
    baseline_name = "rewrite the session as one JSON file"
    with SessionStore(folder / "sessions.sqlite3") as store:
        for size in SIZES:
            session_id = fill(store, size)
            next_index = size
            set_pragmas(store, SHIPPED)
            next_index = warm_up(store, session_id, next_index)
            appends, appends_cpu = time_appends(store, session_id, next_index, config.reps(200))
            next_index += len(appends)
            what_ifs: list[tuple[str, Samples, Samples]] = []
            for label, pragmas in WHAT_IFS.items():
                set_pragmas(store, pragmas)
                next_index = warm_up(store, session_id, next_index)
                what_ifs.append((label, *time_appends(store, session_id, next_index, config.reps(200))))
                next_index += len(what_ifs[-1][1])
            set_pragmas(store, SHIPPED)
            document = seeds_document(session_id, list(messages(0, size)))
            rewrites = time_json_rewrites(folder / f"seeds-{size}.json", document, size,
                                          config.reps({1_000: 50, 10_000: 20, 100_000: 5}[size]))
            (folder / f"seeds-{size}.json").unlink()
            rows.append(Row(f"store one message, session of {size // 1000}k", appends, rewrites,
                            baseline_name, Goal("p99", 1), ratio_of="p99", note=cpu_note(appends_cpu)))
            rows += [Row(f"  what-if: {label}", samples, rewrites, baseline_name, Goal("p99", 1), ratio_of="p99",
                         note=cpu_note(cpu)) for label, samples, cpu in what_ifs]

        resume_id = fill(store, RESUME_SIZE)
        seeds_file = folder / "seeds-30k.json"
        seeds_file.write_text(json.dumps(seeds_document(resume_id, list(messages(0, RESUME_SIZE)))))
        resume, loading, cleaning, seeds_load = Samples(), Samples(), Samples(), Samples()
        for _ in range(config.reps(10)):
            started = time.perf_counter()
            loaded = store.load_messages(resume_id)
            loaded_at = time.perf_counter()
            history = clean_history(loaded)
            done_at = time.perf_counter()
            resume.add(ms(done_at - started))
            loading.add(ms(loaded_at - started))
            cleaning.add(ms(done_at - loaded_at))
            if len(history) != RESUME_SIZE:
                raise RuntimeError(f"resume: {len(history)} messages, expected {RESUME_SIZE}")
            started = time.perf_counter()
            json.loads(seeds_file.read_text())
            seeds_load.add(ms(time.perf_counter() - started))
        rows.append(Row("resume 30k messages (load + validate + clean)", resume, seeds_load,
                        "read + parse the seeds' JSON file (no validation)", Goal("p50", 300),
                        note=f"p50 of its parts: load_messages (read, decode, validate) {loading.p50:.0f} ms, "
                             f"clean_history {cleaning.p50:.0f} ms"))
    return rows
