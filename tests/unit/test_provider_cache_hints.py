"""Cache breakpoints for Anthropic through OpenRouter: the last pruned tool output is one.

Pruning goes on after the last pruned output, so the input up to it stays the same through
the next pruning step; a breakpoint there lets that step's call read it from the cache.
"""

from __future__ import annotations

from typing import Any

from tinyagent import AssistantMessage, Context, SimpleStreamOptions, TextContent, ToolCallContent, ToolResultMessage, UserMessage

from tunacode_lsp.agent.provider.openai_chat import OpenAICompatModel, stream_openai_chat
from tunacode_lsp.core.history import pruned_marker

EPHEMERAL = {"type": "ephemeral"}


def history(outputs: list[str]) -> list[Any]:
    messages: list[Any] = [UserMessage(content=[TextContent(text="read them")])]
    for n, text in enumerate(outputs):
        messages.append(AssistantMessage(content=[ToolCallContent(id=f"c{n}", name="read_file", arguments={"filepath": f"f{n}"})],
                                         stop_reason="tool_calls"))
        messages.append(ToolResultMessage(tool_call_id=f"c{n}", tool_name="read_file", content=[TextContent(text=text)]))
    return messages


def marked(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("cache_control") == EPHEMERAL for b in content)


async def test_the_last_pruned_output_is_a_cache_breakpoint(serve) -> None:
    server = serve([{"text": "ok"}, {"text": "ok"}])
    outputs = ["full output 0", pruned_marker(8000), pruned_marker(9000), "full output 3", "full output 4"]
    context = Context(system_prompt="You are helpful.", messages=history(outputs))
    for provider, model_id in (("openrouter", "anthropic/claude-sonnet-4.5"), ("openai-compatible", "scripted")):
        model = OpenAICompatModel(provider=provider, id=model_id, base_url=server.chat_url)
        stream = await stream_openai_chat(model, context, SimpleStreamOptions(api_key="k"))
        await stream.result()
    anthropic, plain = (body["messages"] for body in server.requests)
    flags = [marked(m) for m in anthropic]
    pruned = [i for i, m in enumerate(plain) if m["role"] == "tool" and m["content"].startswith("[output pruned")]
    last_pruned = pruned[-1]
    # the head's end too, as the native adapter: the last message before the first pruned output
    # that takes a marker (the assistant message between holds only a call: no content part)
    assert [i for i, flag in enumerate(flags) if flag] == [0, pruned[0] - 2, last_pruned, len(anthropic) - 1]
    assert anthropic[last_pruned]["content"] == [{"type": "text", "text": pruned_marker(9000), "cache_control": EPHEMERAL}]
    assert not any(marked(m) for m in plain)


async def test_without_pruned_outputs_two_breakpoints_as_before(serve) -> None:
    server = serve([{"text": "ok"}])
    context = Context(system_prompt="You are helpful.", messages=history(["a", "b"]))
    model = OpenAICompatModel(provider="openrouter", id="anthropic/claude-sonnet-4.5", base_url=server.chat_url)
    await (await stream_openai_chat(model, context, SimpleStreamOptions(api_key="k"))).result()
    flags = [marked(m) for m in server.requests[0]["messages"]]
    assert [i for i, flag in enumerate(flags) if flag] == [0, len(flags) - 1]


async def test_anthropic_breakpoints_after_pruning_keep_the_head_cached(serve) -> None:
    """Once outputs are pruned: the system prompt, the end of the never-pruned head (the block
    before the first pruned output), the last pruned output and the latest turn; 4 at most.
    Before, a call that took a pruning step had only the tools and the system prompt marked
    before its changed part, so it read nothing of the history from the cache."""

    from tinyagent import AgentTool

    from tunacode_lsp.agent.models import resolve_model
    from tunacode_lsp.agent.provider.anthropic_messages import stream_anthropic

    server = serve([{"text": "ok"}, {"text": "ok"}])
    env = {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": server.base_url.removesuffix("/v1")}
    resolved = resolve_model("anthropic:claude-sonnet-5-5", env=env)
    tool = AgentTool(name="read_file", description="Read", parameters={"type": "object", "properties": {}})
    outputs = ["full output 0", pruned_marker(8000), pruned_marker(9000), "full output 3", "full output 4"]
    pruned = Context(system_prompt="You are helpful.", messages=history(outputs), tools=[tool])
    plain = Context(system_prompt="You are helpful.", messages=history(["a", "b"]), tools=[tool])
    for context in (pruned, plain):
        await (await stream_anthropic(resolved.model, context, SimpleStreamOptions(api_key=resolved.api_key))).result()
    with_pruning, without = server.requests

    def marks(body: dict[str, Any]) -> list[str]:
        out = [f"tool:{t['name']}" for t in body.get("tools", []) if "cache_control" in t]
        out += ["system" for block in body["system"] if "cache_control" in block]
        for m, message in enumerate(body["messages"]):
            out += [f"{m}.{b}:{block['type']}" for b, block in enumerate(message["content"]) if "cache_control" in block]
        return out

    # messages: 0 user, then per output an assistant tool_use (odd) and a user tool_result (even)
    assert marks(with_pruning) == ["system", "3.0:tool_use", "6.0:tool_result", "10.0:tool_result"]
    assert with_pruning["messages"][6]["content"][0]["content"][0]["text"] == pruned_marker(9000)
    assert marks(without) == ["tool:read_file", "system", "4.0:tool_result"]  # as before: nothing pruned
