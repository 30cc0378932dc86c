"""The request body's kept columns (agent/provider/openai_request.py `Columns`): a turn whose
messages leave the last body a few messages before its end (the pruning plan re-pruned a
recent output) converts only the messages from there, and bodies built at once on several
threads over one session's history (an aborted turn's build still running) are each the
whole encoding."""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

import pytest
from tinyagent import Context, SimpleStreamOptions, TextContent, ToolResultMessage

from tunacode_lsp.agent.provider import openai_request
from tunacode_lsp.agent.provider.model import OpenAICompatModel
from tunacode_lsp.agent.provider.openai_request import build_request_body, encode_request_body
from tunacode_lsp.core.history import pruned_marker

from .test_request_body_reuse import turn

MODEL = OpenAICompatModel(provider="openai-compatible", id="scripted", base_url="http://127.0.0.1:9/v1")


def whole(messages: list[Any]) -> bytes:
    body = build_request_body(MODEL, Context(system_prompt="s", messages=messages), SimpleStreamOptions())
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def pruned(message: ToolResultMessage) -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=message.tool_call_id, tool_name=message.tool_name,
                             content=[TextContent(text=pruned_marker(777))])


def test_a_recent_output_pruned_again_converts_only_from_there(monkeypatch: pytest.MonkeyPatch):
    openai_request.LAST_JOINS.clear()
    history = [m for n in range(300) for m in turn(n)]
    encode_request_body(MODEL, Context(system_prompt="s", messages=history), SimpleStreamOptions())
    converted: list[Any] = []
    real = openai_request._converted
    monkeypatch.setattr(openai_request, "_converted", lambda m, *a: (converted.append(m), real(m, *a))[1])
    for n in range(300, 320):
        at = max(i for i, m in enumerate(history) if isinstance(m, ToolResultMessage))
        history = [*history[:at], pruned(history[at]), *history[at + 1:], *turn(n)]  # a branch near the end
        converted.clear()
        encoded = encode_request_body(MODEL, Context(system_prompt="s", messages=history), SimpleStreamOptions())
        assert encoded.content == whole(history), n
        assert len(converted) <= len(history) - at  # from the branch on, not the whole history


def test_bodies_built_at_once_on_threads_are_each_whole():
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch between almost every bytecode: interleavings happen
    try:
        _build_at_once()
    finally:
        sys.setswitchinterval(interval)


def _build_at_once() -> None:
    openai_request.LAST_JOINS.clear()
    history = [m for n in range(200) for m in turn(n)]
    lists = [history[: len(history) - k] for k in (0, 7, 30)]
    lists.append([*history[:-10], pruned(next(m for m in history[-10:] if isinstance(m, ToolResultMessage))), *history[-9:]])
    expected = [whole(messages) for messages in lists]
    failures: list[BaseException] = []

    def build(index: int) -> None:
        try:
            for _ in range(15):
                messages = lists[index % len(lists)]
                got = encode_request_body(MODEL, Context(system_prompt="s", messages=messages), SimpleStreamOptions())
                assert got.content == expected[index % len(lists)]
        except BaseException as exc:  # noqa: BLE001
            failures.append(exc)

    threads = [threading.Thread(target=build, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures and not any(t.is_alive() for t in threads)
