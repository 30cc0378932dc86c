"""A long session's next request validates only the messages it has not seen (issue 35, item
4): AgentRequest._load_history reuses the previous request's tinyagent messages for the very
dump objects the session service hands out again (agent/history_models.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tunacode_lsp.agent import history_models
from tunacode_lsp.agent.models import resolve_model
from tunacode_lsp.agent.ports import RequestSpec
from tunacode_lsp.agent.runner import AgentRequest, new_request_id
from tunacode_lsp.core.codec import dump_message


def _turns(n: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = []
    for i in range(n):
        history.append({"role": "user", "content": [{"type": "text", "text": f"question {i}"}]})
        history.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}], "stop_reason": "stop"})
    return history


def _load(tmp_path: Path, session_id: str, history: list[dict[str, Any]]) -> list[Any]:
    spec = RequestSpec(
        request_id=new_request_id(), session_id=session_id, prompt="next", history=history,
        model=resolve_model("openai-compatible:scripted", base_url="http://127.0.0.1:9/v1", env={}),
        workspace_root=tmp_path, approval="auto",
    )
    request = AgentRequest(spec, None, None)  # type: ignore[arg-type]
    models = list(request._load_history())  # tinyagent's Agent copies it too: the carry's list goes on changing
    request._keep_history()  # as the request's end does
    return models


def test_the_next_request_of_a_long_session_validates_only_its_new_messages(tmp_path: Path):
    history = _turns(history_models.MIN_MESSAGES // 2 + 5)
    first = _load(tmp_path, "long", history)
    grown = [*history, {"role": "user", "content": [{"type": "text", "text": "one more"}]}]
    second = _load(tmp_path, "long", grown)
    assert all(a is b for a, b in zip(first, second, strict=False))  # the same messages, not validated again
    assert len(second) == len(first) + 1 and second[-1] not in first
    assert [dump_message(m) for m in second] == [dump_message(m) for m in _load(tmp_path, "other", grown)]
    # a dump replaced by another object (a compaction, a rewind, another process's write) is
    # validated anew, and everything after it
    changed = [*grown[:10], {"role": "user", "content": [{"type": "text", "text": "rewritten"}]}, *grown[11:]]
    third = _load(tmp_path, "long", changed)
    assert all(a is b for a, b in zip(third[:10], second, strict=False))
    assert third[10] is not second[10] and dump_message(third[10])["content"][0]["text"] == "rewritten"
    assert third[11] is not second[11] and dump_message(third[11]) == dump_message(second[11])


def test_a_short_session_and_old_sessions_are_not_kept(tmp_path: Path):
    short = _turns(10)
    assert _load(tmp_path, "short", short)[0] is not _load(tmp_path, "short", short)[0]
    histories = {name: _turns(history_models.MIN_MESSAGES // 2) for name in ("a", "b", "c")}
    firsts = {name: _load(tmp_path, name, h)[0] for name, h in histories.items()}
    assert _load(tmp_path, "a", histories["a"])[0] is not firsts["a"]  # evicted: only the 2 most recent are kept
    assert _load(tmp_path, "c", histories["c"])[0] is firsts["c"]
