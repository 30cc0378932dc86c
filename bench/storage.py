"""Storage figures: storing one finished message at 1k/10k/100k messages; resuming 30k.

Store: `SessionStore.append_messages(session_id, [dump])`, one message per call, timed
in-process, into sessions prefilled in batches. Baseline: what the seeds' system did,
rewriting the whole session as one JSON file (json.dumps + write, no fsync) at the same size.
Two what-if lines run the same appends with other settings on the store's connection (not
the shipped ones): `synchronous = NORMAL` (no fsync per commit), and that plus
`wal_autocheckpoint = 0` (no checkpoint inside an append; a server would checkpoint when idle).

Resume: `clean_history(store.load_messages(id))` of a 30k-message session (load, validate
every row, clean); baseline: reading and parsing the seeds' one JSON file of the same session.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tunacode_lsp.agent.history import clean_history
from tunacode_lsp.session.store import SessionStore

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


def time_appends(store: SessionStore, session_id: str, first_index: int, reps: int) -> Samples:
    samples = Samples()
    for i in range(reps):
        dump = message(first_index + i)
        started = time.perf_counter()
        store.append_messages(session_id, [dump])
        samples.add(ms(time.perf_counter() - started))
    return samples


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


SHIPPED = {"synchronous": "FULL", "wal_autocheckpoint": "1000"}
WHAT_IFS = {
    "synchronous=NORMAL": {"synchronous": "NORMAL", "wal_autocheckpoint": "1000"},
    "synchronous=NORMAL, no auto-checkpoint": {"synchronous": "NORMAL", "wal_autocheckpoint": "0"},
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
            appends = time_appends(store, session_id, next_index, config.reps(200))
            next_index += len(appends)
            what_ifs: list[tuple[str, Samples]] = []
            for label, pragmas in WHAT_IFS.items():
                set_pragmas(store, pragmas)
                next_index = warm_up(store, session_id, next_index)
                what_ifs.append((label, time_appends(store, session_id, next_index, config.reps(200))))
                next_index += len(what_ifs[-1][1])
            set_pragmas(store, SHIPPED)
            document = seeds_document(session_id, list(messages(0, size)))
            rewrites = time_json_rewrites(folder / f"seeds-{size}.json", document, size,
                                          config.reps({1_000: 50, 10_000: 20, 100_000: 5}[size]))
            (folder / f"seeds-{size}.json").unlink()
            rows.append(Row(f"store one message, session of {size // 1000}k", appends, rewrites,
                            baseline_name, Goal("p99", 1), ratio_of="p99"))
            rows += [Row(f"  what-if: {label}", samples, rewrites, baseline_name, Goal("p99", 1), ratio_of="p99")
                     for label, samples in what_ifs]

        resume_id = fill(store, RESUME_SIZE)
        seeds_file = folder / "seeds-30k.json"
        seeds_file.write_text(json.dumps(seeds_document(resume_id, list(messages(0, RESUME_SIZE)))))
        resume, seeds_load = Samples(), Samples()
        for _ in range(config.reps(10)):
            started = time.perf_counter()
            history = clean_history(store.load_messages(resume_id))
            resume.add(ms(time.perf_counter() - started))
            if len(history) != RESUME_SIZE:
                raise RuntimeError(f"resume: {len(history)} messages, expected {RESUME_SIZE}")
            started = time.perf_counter()
            json.loads(seeds_file.read_text())
            seeds_load.add(ms(time.perf_counter() - started))
        rows.append(Row("resume 30k messages (load + validate + clean)", resume, seeds_load,
                        "read + parse the seeds' JSON file (no validation)", Goal("p50", 300)))
    return rows
