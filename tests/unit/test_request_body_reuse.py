"""The chat-completions body built from kept per-message bytes is byte for byte the body
encoded whole (`json.dumps(build_request_body(...))`, what the provider sent before), over a
long varied history growing turn by turn; a turn converts only the messages added since."""

from __future__ import annotations

import gc
import json
from typing import Any

import pytest
from tinyagent import (
    AgentTool,
    AssistantMessage,
    Context,
    ImageContent,
    SimpleStreamOptions,
    TextContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)
from tinyagent.agent_types import ThinkingContent

from tunacode_lsp.agent.provider import openai_request
from tunacode_lsp.agent.provider.model import OpenAICompatModel
from tunacode_lsp.agent.provider.openai_request import (
    MESSAGE_BYTES,
    build_request_body,
    encode_request_body,
    not_the_models,
)
from tunacode_lsp.core.history import pruned_marker

URL = "http://127.0.0.1:9/v1"
TOOLS = [
    AgentTool(name="read_file", description="Read a file.",
              parameters={"type": "object", "properties": {"filepath": {"type": "string"}}}),
    AgentTool(name="bash", description="Run a command — carefully.", parameters=None),
]
MODELS = [
    OpenAICompatModel(provider="openai-compatible", id="scripted", base_url=URL),
    OpenAICompatModel(provider="openai-compatible", id="deepseek-reasoner", base_url=URL),  # reasoning sent back
    OpenAICompatModel(provider="openrouter", id="anthropic/claude-sonnet-4.5", base_url=URL),  # cache hints
    OpenAICompatModel(provider="openrouter", id="google/gemini-2.5-pro", base_url=URL),  # cache hints
    OpenAICompatModel(provider="gemini", id="gemini-2.5-flash", base_url=URL),  # thought signatures sent back
]


def turn(n: int) -> list[Any]:
    """One turn's messages; which kinds depends on n (images, pruned outputs, empty texts, signatures)."""
    call = ToolCallContent(id=f"call_{n}", name="read_file", arguments={"filepath": f"f{n}.py", "q": "ü\n\"x\"", "n": n})
    if n % 4 == 0:
        call.thought_signature = f"sig{n}"  # type: ignore[attr-defined]
    out: list[Any] = []
    if n % 5 == 0:
        out.append(UserMessage(content=[TextContent(text=f"look {n} — 🙂"),
                                        ImageContent(url="iVBORw0KGgo=", mime_type="image/png"),
                                        ImageContent(url="data:image/jpeg;base64,/9j/", mime_type="image/jpeg")]))
    elif n % 5 == 1:
        out.append(UserMessage(content=[TextContent(text=f"line one {n}"), TextContent(text="line two")]))
    else:
        out.append(UserMessage(content=[TextContent(text=f"do {n} \"quoted\" \\ back\u2028slash")]))
    out.append(AssistantMessage(content=[ThinkingContent(thinking=f"think {n} «»"), TextContent(text="" if n % 3 else f"Reading f{n}"), call],
                                stop_reason="tool_calls"))
    output = pruned_marker(900 + n) if n % 3 == 1 else f"def f{n}():\n    return '{n}\\t✓'\n"
    out.append(ToolResultMessage(tool_call_id=f"call_{n}", tool_name="read_file", content=[TextContent(text=output)]))
    if n % 7 == 3:
        out.append(ToolResultMessage(tool_call_id=f"late_{n}", tool_name="bash", content=[]))
    out.append(AssistantMessage(content=[TextContent(text=f"Done {n}." if n % 2 else "")], stop_reason="stop"))
    return out


def whole(model: OpenAICompatModel, context: Context, options: SimpleStreamOptions) -> tuple[bytes, list[str]]:
    body = build_request_body(model, context, options)
    content = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return content, not_the_models(body)


@pytest.mark.parametrize("model", MODELS, ids=[f"{m.provider}:{m.id}" for m in MODELS])
@pytest.mark.parametrize("system", ["You are TunaCode. Ünïcode too.", ""])
def test_the_bytes_are_the_whole_encoding_turn_after_turn(model: OpenAICompatModel, system: str) -> None:
    options = SimpleStreamOptions(api_key="k", max_tokens=512, temperature=0.3)
    history: list[Any] = []
    for n in range(40):
        history.extend(turn(n))
        if n % 10 == 9:  # a pruning step: an older output replaced by a new (pruned) object
            position = next(i for i, m in enumerate(history) if isinstance(m, ToolResultMessage) and i > n)
            history[position] = ToolResultMessage(tool_call_id=history[position].tool_call_id, tool_name="read_file",
                                                  content=[TextContent(text=pruned_marker(5000))])
        context = Context(system_prompt=system, messages=list(history), tools=TOOLS if n % 2 else None)
        encoded = encode_request_body(model, context, options)
        expected, quotable = whole(model, context, options)
        assert encoded.content == expected, n
        assert encoded.quotable == quotable
        assert "messages" not in encoded.body
        assert encoded.body == {k: v for k, v in build_request_body(model, context, options).items() if k != "messages"}


def test_a_turn_converts_only_the_new_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    model = OpenAICompatModel(provider="openrouter", id="anthropic/claude-sonnet-4.5", base_url=URL)
    history = [m for n in range(200) for m in turn(n)]
    encode_request_body(model, Context(system_prompt="s", messages=history), SimpleStreamOptions())
    converted: list[Any] = []
    real = openai_request._converted
    monkeypatch.setattr(openai_request, "_converted", lambda m, *a: converted.append(m) or real(m, *a))
    history += turn(200)
    context = Context(system_prompt="s", messages=history)
    encoded = encode_request_body(model, context, SimpleStreamOptions())
    assert encoded.content == whole(model, context, SimpleStreamOptions())[0]
    new = {id(m) for m in turn_messages(history, 200)}
    earlier = [m for m in converted if id(m) not in new]  # the hinted ones encoded again: the head's end, the last pruned output
    assert len(earlier) <= 2 and any(isinstance(m, ToolResultMessage) for m in earlier)
    assert len(converted) <= len(new) + 2


def turn_messages(history: list[Any], n: int) -> list[Any]:
    return history[len(history) - len(turn(n)):]


def test_a_freed_message_leaves_no_entry() -> None:
    model = OpenAICompatModel(id="m", base_url=URL)
    openai_request.LAST_JOINS.clear()  # the last few bodies' message lists are held until newer ones replace them
    gc.collect()
    before = len(MESSAGE_BYTES)
    history = [m for n in range(50) for m in turn(n)]
    encode_request_body(model, Context(messages=history), SimpleStreamOptions())
    assert len(MESSAGE_BYTES) == before + len(history)
    del history
    openai_request.LAST_JOINS.clear()
    gc.collect()
    assert len(MESSAGE_BYTES) == before
