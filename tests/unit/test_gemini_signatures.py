"""Gemini signs its tool calls (`extra_content.google.thought_signature` on a tool-call delta of
its OpenAI-compatible endpoint) and refuses the next call when the signature does not come
back with the call. Our chat streamer against the real scripted server: the signature is kept
on the call, survives the store's codec, and goes back to Gemini only."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from tinyagent import AgentTool, Context, SimpleStreamOptions, UserMessage
from tinyagent.agent_types import TextContent, ToolCallContent, ToolResultMessage

from tunacode_lsp.agent.provider.openai_chat import OpenAICompatModel, close_shared_client, stream_openai_chat
from tunacode_lsp.core.codec import dump_message, load_message
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

ECHO = AgentTool(name="echo", description="Echo.", parameters={"type": "object", "properties": {"text": {"type": "string"}}})
SIGNED_CALL = {"choices": [{"index": 0, "delta": {"tool_calls": [{
    "index": 0, "id": "call_g1", "type": "function",
    "function": {"name": "echo", "arguments": "{\"text\": \"hi\"}"},
    "extra_content": {"google": {"thought_signature": "c2lnbmF0dXJlLW9mLWdlbWluaQ=="}},
}]}, "finish_reason": None}]}


@pytest.fixture(autouse=True)
async def shared_client_closed() -> AsyncIterator[None]:
    yield
    await close_shared_client()


async def _call(model: OpenAICompatModel, context: Context):
    stream = await stream_openai_chat(model, context, SimpleStreamOptions(api_key="k"))
    async for _event in stream:
        pass
    return await stream.result()


@pytest.mark.parametrize("provider, sent_back", [("gemini", True), ("openai-compatible", False)])
async def test_a_signed_tool_call_keeps_its_signature_and_sends_it_back_to_gemini_only(provider, sent_back):
    turns = [{"steps": [{"raw": "data: " + json.dumps(SIGNED_CALL) + "\n\n"}, {"finish": "tool_calls"}]}, {"text": "done"}]
    with ScriptedModelServer(turns) as server:
        model = OpenAICompatModel(provider=provider, id="gemini-2.5-pro", base_url=server.chat_url)
        prompt = UserMessage(content=[TextContent(text="echo hi")])
        first = await _call(model, Context(system_prompt="s", messages=[prompt], tools=[ECHO]))
        call = next(block for block in first.content if isinstance(block, ToolCallContent))
        assert (call.id, call.name, call.arguments) == ("call_g1", "echo", {"text": "hi"})
        stored = load_message(json.loads(json.dumps(dump_message(first))))  # the store's round trip
        result = ToolResultMessage(tool_call_id="call_g1", tool_name="echo", content=[TextContent(text="hi")])
        await _call(model, Context(system_prompt="s", messages=[prompt, stored, result], tools=[ECHO]))
        sent = server.requests[1]["messages"][2]["tool_calls"][0]
    if sent_back:
        assert sent["extra_content"] == {"google": {"thought_signature": "c2lnbmF0dXJlLW9mLWdlbWluaQ=="}}
    else:
        assert "extra_content" not in sent
