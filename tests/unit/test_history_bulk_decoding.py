"""Loading a history pauses the garbage collector, and always gives it back as it was."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tunacode_lsp.core.codec import bulk_decoding
from tunacode_lsp.store.errors import UnreadableMessageError
from tunacode_lsp.store.session_store import SessionStore


@pytest.fixture(autouse=True)
def gc_restored() -> Iterator[None]:
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_the_collector_is_off_inside_and_back_on_after() -> None:
    gc.enable()
    with bulk_decoding():
        assert not gc.isenabled()
        with bulk_decoding():
            assert not gc.isenabled()
        assert not gc.isenabled()  # an inner exit does not turn it on under the outer
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with bulk_decoding():
        pass
    assert not gc.isenabled()


def test_overlapping_threads_turn_it_on_only_when_the_last_leaves() -> None:
    gc.enable()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with bulk_decoding():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    def second() -> None:
        first_in.wait(5)
        with bulk_decoding():
            second_in.set()
            first_out.wait(5)
            seen.append(gc.isenabled())  # the first thread left, this one is still inside

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == [False]
    assert gc.isenabled()


def test_an_unreadable_row_gives_the_collector_back(tmp_path: Path) -> None:
    import sqlite3

    gc.enable()
    path = tmp_path / "sessions.sqlite3"
    with SessionStore(path) as store:
        record = store.create_session(cwd=str(tmp_path), model="m")
        store.append_messages(record.session_id, [{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE messages SET body = ? WHERE session_id = ?", (b"{not json", record.session_id))
    with SessionStore(path) as store, pytest.raises(UnreadableMessageError):
        store.load_messages(record.session_id)
    assert gc.isenabled()
