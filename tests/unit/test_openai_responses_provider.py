"""OpenAI Responses through the official SDK against the scripted model on 127.0.0.1:
store false, encrypted reasoning items sent back unchanged, function_call_output, usage
with cached input, errors retried, abort at once; azure: on the same client."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tinyagent import AgentTool, Context, SimpleStreamOptions, TextContent, ToolResultMessage, UserMessage

from tunacode_lsp.agent.models import resolve_model
from tunacode_lsp.agent.provider.stream import make_stream_fn

TOOL = AgentTool(name="read_file", description="Read a file", parameters={"type": "object", "properties": {"filepath": {"type": "string"}}})


def openai_model(server: Any, **kw: Any) -> Any:
    return resolve_model("openai:gpt-5", env={"OPENAI_API_KEY": "sk-openai", "OPENAI_BASE_URL": server.base_url}, **kw)


async def run(resolved: Any, context: Context, signal: asyncio.Event | None = None, notes: list[str] | None = None) -> Any:
    fn = make_stream_fn(signal=signal or asyncio.Event(), max_retries=2, notify=(notes if notes is not None else []).append, on_model_call=lambda: None)
    stream = await fn(resolved.model, context, SimpleStreamOptions(api_key=resolved.api_key))
    async for _ in stream:
        pass
    return await stream.result()


async def test_reasoning_items_go_back_and_tool_results_are_function_call_output(serve) -> None:
    server = serve([
        {"steps": [{"thinking": "plan"}, {"text": "Looking."},
                   {"tool_call": {"id": "call_1", "name": "read_file", "arguments": {"filepath": "a.py"}}, "chunks": 2},
                   {"usage": {"prompt_tokens": 500, "cached_tokens": 400, "completion_tokens": 9}}]},
        {"text": "done"},
    ])
    resolved = openai_model(server, reasoning_effort="low")
    context = Context(system_prompt="Be brief.", messages=[UserMessage(content=[TextContent(text="read a.py")])], tools=[TOOL])
    final = await run(resolved, context)
    assert final.stop_reason == "tool_calls" and [b.type for b in final.content] == ["thinking", "text", "tool_call"]
    thinking, text, call = final.content
    assert thinking.thinking == "plan" and "scripted-encrypted-rs_0" in thinking.thinking_signature
    assert call.name == "read_file" and call.arguments == {"filepath": "a.py"} and call.id.startswith("call_1|")
    assert (final.usage["input"], final.usage["cache_read"], final.usage["output"]) == (100, 400, 9)
    body = server.requests[0]
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["instructions"] == "Be brief." and body["reasoning"]["effort"] == "low"
    assert server.headers_seen[0]["authorization"] == "Bearer sk-openai"

    context.messages.append(final)
    context.messages.append(ToolResultMessage(tool_call_id=call.id, tool_name="read_file", content=[TextContent(text="x = 1")]))
    second = await run(resolved, context)
    assert second.content[0].text == "done"
    items = server.requests[1]["input"]
    reasoning = next(i for i in items if i.get("type") == "reasoning")
    assert reasoning["encrypted_content"] == "scripted-encrypted-rs_0" and reasoning["id"] == "rs_0"
    assert {"type": "function_call_output", "call_id": "call_1", "output": "x = 1"} in items
    assert any(i.get("type") == "function_call" and i["call_id"] == "call_1" for i in items)


async def test_chat_setting_keeps_chat_completions(serve) -> None:
    server = serve([{"text": "chat"}])
    final = await run(openai_model(server, openai_api="chat"), Context(messages=[UserMessage(content=[TextContent(text="hi")])]))
    assert final.content[0].text == "chat" and "messages" in server.requests[0]


async def test_errors_retry_and_401_names_the_variable(serve) -> None:
    server = serve([
        {"error": {"status": 429, "headers": {"Retry-After": "0"}, "body": {"error": {"message": "slow down"}}}},
        {"text": "ok"},
        {"error": {"status": 401, "body": {"error": {"message": "bad key"}}}},
    ])
    notes: list[str] = []
    resolved = openai_model(server)
    context = Context(messages=[UserMessage(content=[TextContent(text="hi")])])
    final = await run(resolved, context, notes=notes)
    assert final.content[0].text == "ok" and len(notes) == 1
    failed = await run(resolved, context)
    assert failed.stop_reason == "error" and "OPENAI_API_KEY" in (failed.error_message or "")


async def test_abort_and_a_cut_stream(serve) -> None:
    server = serve([{"steps": [{"text": "partial"}, {"stall": 3600}]}, {"steps": [{"text": "half"}, {"drop": True}]}])
    signal = asyncio.Event()
    fn = make_stream_fn(signal=signal, max_retries=0, notify=lambda _: None, on_model_call=lambda: None)
    resolved = openai_model(server)
    context = Context(messages=[UserMessage(content=[TextContent(text="hi")])])
    stream = await fn(resolved.model, context, SimpleStreamOptions(api_key=resolved.api_key))
    async for event in stream:
        if event.type == "text_delta":
            break
    started = time.perf_counter()
    signal.set()
    assert (await stream.result()).stop_reason == "aborted" and time.perf_counter() - started < 0.5
    assert await asyncio.to_thread(server.wait_for_closed, 5.0)
    cut = await run(resolved, context)
    assert cut.stop_reason == "error" and cut.content[0].text == "half"


async def test_azure_uses_the_v1_api_with_its_own_key(serve) -> None:
    server = serve([{"text": "azure"}])
    endpoint = server.base_url.removesuffix("/v1")
    resolved = resolve_model("azure:my-deployment", env={"AZURE_OPENAI_ENDPOINT": endpoint, "AZURE_OPENAI_API_KEY": "az-key", "OPENAI_API_KEY": "sk-other"})
    final = await run(resolved, Context(messages=[UserMessage(content=[TextContent(text="hi")])]))
    assert final.content[0].text == "azure" and server.requests[0]["model"] == "my-deployment"
    assert "az-key" in server.headers_seen[0]["authorization"]
