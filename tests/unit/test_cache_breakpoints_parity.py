"""One breakpoint policy for both Anthropic wires (cache_breakpoints.choose_breakpoints).

OpenRouter's chat-completions cache hints mark the same places as the native Anthropic
adapter for the same history: the end of the never-pruned head, where the previous call's
input ended after a turn wider than the 20-block lookback, the latest turn. And from when the
input passes the head (agent/model_input.py names the first output a pruning step would
prune), both mark the head's end before the first step, where that step's call reads.
All through the real adapters against the scripted model.
"""

from __future__ import annotations

from typing import Any

from tinyagent import (
    AgentTool,
    Context,
    SimpleStreamOptions,
    TextContent,
    ToolResultMessage,
    UserMessage,
)

from tunacode_lsp.agent.model_input import ModelInput
from tunacode_lsp.agent.models import resolve_model
from tunacode_lsp.agent.provider.anthropic_messages import stream_anthropic
from tunacode_lsp.agent.provider.openai_chat import OpenAICompatModel, stream_openai_chat
from tunacode_lsp.core.history import pruned_marker

from .test_anthropic_cache_lookback import turn


def context(messages: list[Any]) -> Context:
    tool = AgentTool(name="read_file", description="Read", parameters={"type": "object", "properties": {}})
    return Context(system_prompt="You are helpful.", messages=messages, tools=[tool])


async def native_bodies(serve, contexts: list[Context]) -> list[dict[str, Any]]:
    server = serve([{"text": "ok"} for _ in contexts])
    env = {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": server.base_url.removesuffix("/v1")}
    resolved = resolve_model("anthropic:claude-sonnet-5", env=env)
    for item in contexts:
        await (await stream_anthropic(resolved.model, item, SimpleStreamOptions(api_key=resolved.api_key))).result()
    return server.requests


async def openrouter_bodies(serve, contexts: list[Context]) -> list[dict[str, Any]]:
    server = serve([{"text": "ok"} for _ in contexts])
    model = OpenAICompatModel(provider="openrouter", id="anthropic/claude-sonnet-4.5", base_url=server.chat_url)
    for item in contexts:
        await (await stream_openai_chat(model, item, SimpleStreamOptions(api_key="k"))).result()
    return server.requests


def native_marks(body: dict[str, Any]) -> list[str]:
    """The marked places, named by the message they belong to (a call's message by its first call)."""
    names = ["tools" for tool in body.get("tools") or [] if "cache_control" in tool]
    names += ["system" for block in body.get("system") or [] if "cache_control" in block]
    for message in body["messages"]:
        calls = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        for block in message["content"]:
            if "cache_control" not in block:
                continue
            if block["type"] == "tool_result":
                names.append(f"result {block['tool_use_id']}")
            elif message["role"] == "assistant":
                names.append(f"assistant {calls[0] if calls else ''}")
            else:
                names.append(f"user {block.get('text')}")
    return names


def openrouter_marks(body: dict[str, Any]) -> list[str]:
    names = []
    for message in body["messages"]:
        content = message.get("content")
        if not (isinstance(content, list) and any("cache_control" in part for part in content)):
            continue
        role = message["role"]
        if role == "system":
            names.append("system")
        elif role == "tool":
            names.append(f"result {message['tool_call_id']}")
        elif role == "assistant":
            names.append(f"assistant {(message.get('tool_calls') or [{'id': ''}])[0]['id']}")
        else:
            names.append(f"user {content[-1].get('text')}")
    return names


async def test_openrouter_marks_what_the_native_adapter_marks_after_pruning_and_a_wide_turn(serve) -> None:
    start = [UserMessage(content=[TextContent(text="read them")]), *turn(0, 1, "x"), *turn(1, 1, pruned_marker(9000)),
             *turn(2, 1, pruned_marker(9100)), *turn(3, 1)]
    histories = [start, [*start, *turn(4, 11)], [*start, *turn(4, 2)]]
    native = [native_marks(body) for body in await native_bodies(serve, [context(h) for h in histories])]
    routed = [openrouter_marks(body) for body in await openrouter_bodies(serve, [context(h) for h in histories])]
    # the head's end (the call before the first pruned output), the last pruned output or, after
    # 11 parallel calls (23 blocks: past the lookback), where the previous call's input ended
    assert native == [
        ["system", "assistant c1", "result c2", "result c3"],
        ["system", "assistant c1", "result c3", "result c14"],
        ["system", "assistant c1", "result c2", "result c5"],
    ]
    assert routed == native


async def test_both_wires_mark_the_heads_end_before_the_first_pruning_step(serve) -> None:
    """The model input names the first output a step would prune; before any is pruned, the
    place before it is marked, and the first step's call then reads the input up to it."""

    budget = 3_000  # a head of 900 tokens; each output ~1,000
    history: list[Any] = [UserMessage(content=[TextContent(text="read them")])]
    model_input = ModelInput()
    inputs: list[list[Any]] = []
    for n in range(12):
        history += turn(n, 1, f"# file {n}\n" + "x = 1\n" * 660)
        sent, _ = model_input.build(history, budget)
        inputs.append(sent)
        if any(isinstance(m, ToolResultMessage) and m.content[0].text.startswith("[output pruned") for m in sent):
            break
    step = inputs[-1]
    first_pruned = next(n for n, m in enumerate(step) if isinstance(m, ToolResultMessage) and m.content[0].text.startswith("[output pruned"))
    before = inputs[-2]  # the call before the step: nothing pruned, past the head
    assert not any(isinstance(m, ToolResultMessage) and m.content[0].text.startswith("[output pruned") for m in before)
    head_end = f"assistant {step[first_pruned].tool_call_id}"
    native = native_marks((await native_bodies(serve, [context(before)]))[0])
    routed = openrouter_marks((await openrouter_bodies(serve, [context(before)]))[0])
    assert head_end in native, native
    assert routed == native
    # an input short of the head gets the usual breakpoints
    short, _ = ModelInput().build([UserMessage(content=[TextContent(text="read them")]), *turn(0, 1, "small")], budget)
    assert native_marks((await native_bodies(serve, [context(short)]))[0]) == ["tools", "system", "result c0"]


def test_the_head_cut_built_turn_by_turn_equals_a_fresh_build() -> None:
    budget = 3_000
    history: list[Any] = [UserMessage(content=[TextContent(text="read them")])]
    for n in range(10):
        history += turn(n, 1, "y = 2\n" * (100 + 150 * (n % 4)))
    model_input = ModelInput()
    cuts = []
    for length in [*range(1, len(history) + 1), 5, 12, len(history)]:  # growing, then back (an edit) and on
        sent, _ = model_input.build(history[:length], budget)
        fresh, _ = ModelInput().build(history[:length], budget)
        assert sent.cut == fresh.cut and sent == fresh
        cuts.append(sent.cut)
    assert cuts[0] is None and any(cut is not None for cut in cuts)
