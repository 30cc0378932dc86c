"""Real provider streams through the real server, and tool calls written as text.

Recorded streams (tests/fixtures/provider_streams, sources and licences in its README) are
replayed byte for byte by the scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import scripted_options

FIXTURES = Path(__file__).parent.parent / "fixtures" / "provider_streams"
DONE = {"steps": [{"text": "Done."}]}


def replay(name: str, *, done: bool = True) -> dict:
    lines = [line for line in (FIXTURES / name).read_text().splitlines() if line.strip()]
    body = "".join(f"data: {line}\n\n" for line in lines) + ("data: [DONE]\n\n" if done else "")
    return {"replay": body}


def _tool_messages(model, index: int = -1) -> list[dict]:
    return [m for m in model.requests[index]["messages"] if m["role"] == "tool"]


async def test_deepseek_reasoning_goes_back_with_its_tool_call(lsp, model):
    """DeepSeek answers HTTP 400 "Missing reasoning_content" without it on the next call."""

    model.set_script([replay("deepseek-tool-call.chunks.txt"), DONE])
    await lsp.start(init_options={**scripted_options(model), "model": "openai-compatible:deepseek-v4-flash"})
    result = await lsp.command("tunacode.request", {"prompt": "weather in SF?"})
    assert result["stopReason"] == "end_turn" and result["turns"] == 2
    assistant = [m for m in model.requests[1]["messages"] if m["role"] == "assistant"][0]
    assert assistant["tool_calls"][0]["id"] == "call_00_IhCAliIHtM9gKpgfqbBV9873"
    assert assistant["reasoning_content"] == "The user asks about the weather in San Francisco. I should use the weather tool."
    assert result["usage"]["cacheReadTokens"] >= 256  # prompt_tokens_details.cached_tokens


async def test_reasoning_is_not_sent_to_other_models(lsp, model):
    model.set_script([replay("deepseek-tool-call.chunks.txt"), DONE])
    await lsp.start(init_options=scripted_options(model))
    await lsp.command("tunacode.request", {"prompt": "weather in SF?"})
    assistant = [m for m in model.requests[1]["messages"] if m["role"] == "assistant"][0]
    assert "reasoning_content" not in assistant


async def test_magistral_content_parts(lsp, model):
    """Bug: the answer and the thinking were dropped, the reply looked empty, and a second
    (billed) call was made."""

    model.set_script([replay("mistral-reasoning.chunks.txt"), DONE])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "2+2?"})
    assert result["text"] == "2 + 2 = 4" and result["turns"] == 1
    thinking = [e for e in lsp.events_of(result["requestId"]) if e["type"] == "thinking_delta"]
    assert "".join(e["text"] for e in thinking).startswith("The user is asking for 2+2.")
    assert len(model.requests) == 1


async def test_refusal_reaches_the_user(lsp, model):
    model.set_script([replay("openai-refusal.chunks.txt"), DONE])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "something bad"})
    assert result["text"] == "I'm sorry, I can't help with that."
    assert len(model.requests) == 1, "an empty-looking refusal made a second call"


async def test_error_chunk_keeps_its_usage(lsp, model):
    model.set_script([replay("openrouter-error-with-usage.chunks.txt", done=False)])
    await lsp.start(init_options=scripted_options(model, maxRetries=0))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["stopReason"] == "error" and "Provider returned error" in result["error"]["message"]
    assert result["usage"]["inputTokens"] == 120 and result["usage"]["cost"] == pytest.approx(0.00042)


HERMES = '<tool_call>\n{"name": "list_files", "arguments": {}}\n</tool_call>'


@pytest.mark.parametrize(
    "text",
    [
        "Let me look first.\n" + HERMES,
        '<function=list_files>{}</function>',
        '[TOOL_CALLS][{"name": "list_files", "arguments": {}}]',
        '```json\n{"name": "list_files", "parameters": {}}\n```',
    ],
)
async def test_text_tool_calls_run_as_tool_calls(lsp, model, workspace, text):
    (workspace / "a.txt").write_text("a")
    model.set_script([{"steps": [{"text": text, "chunks": 3}]}, DONE, {"steps": [{"text": HERMES}]}, DONE])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "list"})
    assert result["stopReason"] == "end_turn" and [c["name"] for c in result["toolCalls"]] == ["list_files"]
    # the model's next input is well formed: a structured call paired with its result
    second = model.requests[1]["messages"]
    call = [m for m in second if m["role"] == "assistant"][0]
    assert call["tool_calls"][0]["function"]["name"] == "list_files"
    assert "<tool_call>" not in (call["content"] or "") and "[TOOL_CALLS]" not in (call["content"] or "")
    assert _tool_messages(model, 1)[0]["tool_call_id"] == call["tool_calls"][0]["id"]
    assert "a.txt" in _tool_messages(model, 1)[0]["content"]
    stored = await lsp.command("tunacode.session.get", {"sessionId": result["sessionId"]})
    blocks = [b["type"] for m in stored["messages"] if m["role"] == "assistant" for b in m["content"]]
    assert "tool_call" in blocks
    notices = [e for e in lsp.events if e["type"] == "notice" and "as text" in e["message"]]
    assert len(notices) == 1
    # a second request in the same session: the calls run, the notice is not repeated
    await lsp.command("tunacode.request", {"prompt": "again", "sessionId": result["sessionId"]})
    assert len([e for e in lsp.events if e["type"] == "notice" and "as text" in e["message"]]) == 1


async def test_json_shown_as_an_example_is_not_run(lsp, model):
    example = 'Here it is:\n```json\n{"name": "list_files", "arguments": {}}\n```'
    model.set_script([{"steps": [{"text": example}]}])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "show me the JSON of a list_files call"})
    assert result["toolCalls"] == [] and result["text"] == example and len(model.requests) == 1


async def test_text_tool_calls_off(lsp, model):
    model.set_script([{"steps": [{"text": HERMES}]}])
    await lsp.start(init_options=scripted_options(model, textToolCalls="off"))
    result = await lsp.command("tunacode.request", {"prompt": "list"})
    assert result["toolCalls"] == [] and "<tool_call>" in result["text"]


async def test_a_lone_surrogate_from_the_model_is_replaced_not_fatal(lsp, model, workspace):
    """Bug: `"\\ud800"` is valid JSON but no UTF-8: storing the model's message failed and the
    request ended with an internal error, its answer lost."""

    (workspace / "a.txt").write_text("x\n")
    model.set_script([
        {"steps": [{"text": "reading \ud800"}, {"tool_call": {"name": "read_file", "arguments": {"filepath": "a\udc00.txt"}}}]},
        {"steps": [{"text": "done \udfff!"}]},
    ])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["stopReason"] == "end_turn", result.get("error")
    assert result["text"] == "done \ufffd!"
    stored = await lsp.command("tunacode.session.get", {"sessionId": result["sessionId"]})
    texts = [b.get("text") for m in stored["messages"] for b in m["content"] if isinstance(b, dict) and b.get("type") == "text"]
    assert "reading \ufffd" in texts and "done \ufffd!" in texts
    calls = [b for m in stored["messages"] for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_call"]
    assert calls[0]["arguments"] == {"filepath": "a\ufffd.txt"}
