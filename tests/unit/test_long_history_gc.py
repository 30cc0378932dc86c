"""A long history is frozen out of the collector's passes once validated (core/codec.py
`freeze_long_lived`, agent/runner.py `_load_history`), and that freezes nothing for good: a
released session's history is freed by reference counting, a request's own cycles frozen
with it are collected at the next long load, and what start-up froze stays frozen."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tunacode_lsp.agent import history_models
from tunacode_lsp.agent.models import resolve_model
from tunacode_lsp.agent.ports import RequestSpec
from tunacode_lsp.agent.runner import AgentRequest, new_request_id
from tunacode_lsp.core.codec import freeze_long_lived


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    with history_models._lock:
        kept = dict(history_models._kept)
        history_models._kept.clear()
    yield
    gc.unfreeze()
    with history_models._lock:
        history_models._kept.clear()
        history_models._kept.update(kept)


def _turns(n: int, tag: str) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = []
    for i in range(n):
        history.append({"role": "user", "content": [{"type": "text", "text": f"{tag} question {i}"}]})
        history.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}], "stop_reason": "stop"})
    return history


def _request(tmp_path: Path, session_id: str, history: list[dict[str, Any]]) -> AgentRequest:
    spec = RequestSpec(
        request_id=new_request_id(), session_id=session_id, prompt="next", history=history,
        model=resolve_model("openai-compatible:scripted", base_url="http://127.0.0.1:9/v1", env={}),
        workspace_root=tmp_path, approval="auto",
    )
    return AgentRequest(spec, None, None)  # type: ignore[arg-type]


def test_a_released_long_history_is_freed_without_a_collection(tmp_path: Path):
    history = _turns(history_models.MIN_MESSAGES, "a")
    request = _request(tmp_path, "a", history)
    models = request._load_history()
    assert gc.get_freeze_count() > len(history)  # frozen: the collector's passes skip it
    first, last = weakref.ref(models[0]), weakref.ref(models[-1])
    request._keep_history()  # the request ends; the session's carry is kept
    del models, request, history
    for name in ("b", "c"):  # two more long sessions: "a" is released (2 kept)
        other = _request(tmp_path, name, _turns(history_models.MIN_MESSAGES, name))
        other._load_history()
        other._keep_history()
        del other
    gc.disable()  # no collection may free them: reference counting alone
    try:
        assert first() is None and last() is None
    finally:
        gc.enable()


def test_a_cycle_frozen_with_a_long_history_is_collected_at_the_next_long_load(tmp_path: Path):
    cycle = Node()
    dead = weakref.ref(cycle)
    request = _request(tmp_path, "a", _turns(history_models.MIN_MESSAGES, "a"))
    held = weakref.ref(request)  # the run and its parts refer to each other: a cycle too
    request._load_history()
    request._keep_history()
    del cycle, request
    gc.collect()
    assert dead() is not None and held() is not None  # frozen: a collection does not see them
    later = _request(tmp_path, "b", _turns(history_models.MIN_MESSAGES, "b"))
    later._load_history()  # the next long load collects what died since the last
    assert dead() is None and held() is None


def test_what_start_up_froze_stays_frozen(tmp_path: Path):
    gc.unfreeze()
    gc.collect()  # nothing dead is frozen below: the count can only grow
    start_up = [Node() for _ in range(1_000)]
    gc.freeze()  # as lsp/start_up_gc.py does once `initialize` is answered
    frozen = gc.get_freeze_count()
    request = _request(tmp_path, "a", _turns(history_models.MIN_MESSAGES, "a"))
    request._load_history()  # a long load (it unfroze everything, start-up's too, before)
    assert gc.get_freeze_count() >= frozen  # not moved back into the collected generations
    assert len(start_up) == 1_000
    request._keep_history()
    frozen = gc.get_freeze_count()
    freeze_long_lived()
    assert gc.get_freeze_count() >= frozen - 1_000


def test_the_first_long_load_of_a_process_makes_no_full_pass(monkeypatch: pytest.MonkeyPatch):
    from tunacode_lsp.core import codec

    monkeypatch.setattr(codec, "_froze_before", False)  # as in a new server
    passes: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        freeze_long_lived()  # the first: young generations only
        assert passes and max(passes) < 2, passes
        passes.clear()
        freeze_long_lived()  # later ones: a full pass (what the first froze dead is freed)
        assert 2 in passes, passes
    finally:
        gc.callbacks.remove(seen)
