"""Anthropic breakpoints when a turn appends more than the cache's 20-block lookback.

A turn of 11 parallel tool calls appends 23 blocks (its text, 11 calls, 11 results). From the
next call's last block Anthropic looks at most 20 blocks back for an entry, so the entry the
previous call wrote at its last block is out of reach and the call read only the tools and
the system prompt. The end of the previous call's input is now a breakpoint too.
"""

from __future__ import annotations

import json
from typing import Any

from tinyagent import (
    AgentTool,
    AssistantMessage,
    Context,
    SimpleStreamOptions,
    TextContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)

from tunacode_lsp.agent.models import resolve_model
from tunacode_lsp.agent.provider.anthropic_messages import stream_anthropic
from tunacode_lsp.agent.provider.cache_breakpoints import LOOKBACK_BLOCKS
from tunacode_lsp.core.history import pruned_marker


def turn(first: int, count: int, output: str = "def f(): pass\n") -> list[Any]:
    calls = [ToolCallContent(id=f"c{n}", name="read_file", arguments={"filepath": f"f{n}.py"}) for n in range(first, first + count)]
    return [
        AssistantMessage(content=[TextContent(text="Reading."), *calls], stop_reason="tool_calls"),
        *[ToolResultMessage(tool_call_id=f"c{n}", tool_name="read_file", content=[TextContent(text=output)]) for n in range(first, first + count)],
    ]


def flat(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The message blocks in order: (JSON without cache_control, marked)."""
    return [
        (json.dumps({k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True), "cache_control" in block)
        for message in body["messages"]
        for block in message["content"]
    ]


async def send(serve, contexts: list[Context]) -> list[dict[str, Any]]:
    server = serve([{"text": "ok"} for _ in contexts])
    env = {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": server.base_url.removesuffix("/v1")}
    resolved = resolve_model("anthropic:claude-sonnet-5", env=env)
    for context in contexts:
        await (await stream_anthropic(resolved.model, context, SimpleStreamOptions(api_key=resolved.api_key))).result()
    return server.requests


def context(messages: list[Any]) -> Context:
    tool = AgentTool(name="read_file", description="Read", parameters={"type": "object", "properties": {}})
    return Context(system_prompt="You are helpful.", messages=messages, tools=[tool])


async def test_a_turn_past_the_lookback_marks_where_the_previous_input_ended(serve) -> None:
    start = [UserMessage(content=[TextContent(text="read them")]), *turn(0, 1)]
    previous, current = await send(serve, [context(start), context([*start, *turn(1, 11)])])
    before, after = flat(previous), flat(current)
    assert before[-1][1]  # the previous call wrote an entry at its last block
    end = len(before) - 1
    assert [text for text, _ in after[: end + 1]] == [text for text, _ in before]  # its input, unchanged
    assert len(after) - 1 - end > LOOKBACK_BLOCKS  # out of reach from the latest block
    assert after[end][1], "the end of the previous call's input is a breakpoint"
    assert sum(marked for _, marked in after) + sum("cache_control" in t for t in current["tools"]) + 1 <= 4


async def test_a_short_turn_keeps_the_usual_breakpoints(serve) -> None:
    start = [UserMessage(content=[TextContent(text="read them")]), *turn(0, 1)]
    (current,) = await send(serve, [context([*start, *turn(1, 3)])])
    marks = [n for n, (_, marked) in enumerate(flat(current)) if marked]
    assert marks == [len(flat(current)) - 1]  # the latest turn only (with the last tool and the system prompt)


async def test_after_pruning_the_previous_input_end_replaces_the_last_pruned_output(serve) -> None:
    start = [UserMessage(content=[TextContent(text="read them")]), *turn(0, 1, "x"), *turn(1, 1, pruned_marker(9000)),
             *turn(2, 1, pruned_marker(9100)), *turn(3, 1)]
    (current,) = await send(serve, [context([*start, *turn(4, 11)])])
    blocks = flat(current)
    marks = [n for n, (_, marked) in enumerate(blocks) if marked]
    first_pruned = next(n for n, (text, _) in enumerate(blocks) if "[output pruned" in text)
    previous_end = len(blocks) - 1 - 23  # before the last turn's 23 blocks
    assert marks == [first_pruned - 1, previous_end, len(blocks) - 1]
    assert current["system"][-1].get("cache_control") == {"type": "ephemeral"}
