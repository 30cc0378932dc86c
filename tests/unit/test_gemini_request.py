"""The Gemini request's model turns: signatures back as Gemini sent them; a turn Gemini did
not sign (another model's, switched mid-session) gets Google's documented stand-in on its
first function call, which Gemini 3 requires (without it: HTTP 400)."""

from __future__ import annotations

from tinyagent import AssistantMessage, Context, TextContent, ToolCallContent, ToolResultMessage, UserMessage

from tunacode_lsp.agent.provider.gemini_request import UNSIGNED_CALL, convert_contents
from tunacode_lsp.agent.provider.openai_request import THOUGHT_SIGNATURE


def turn(api: str, signature: str | None, provider: str = "gemini") -> list[object]:
    first = ToolCallContent(id="call_a1", name="read_file", arguments={"filepath": "a.py"})
    if signature:
        setattr(first, THOUGHT_SIGNATURE, signature)
    second = ToolCallContent(id="call_b2", name="read_file", arguments={"filepath": "b.py"})
    return [
        UserMessage(content=[TextContent(text="read a and b")]),
        AssistantMessage(content=[TextContent(text="Reading."), first, second], api=api, provider=provider, stop_reason="tool_calls"),
        ToolResultMessage(tool_call_id="call_a1", tool_name="read_file", content=[TextContent(text="a")]),
        ToolResultMessage(tool_call_id="call_b2", tool_name="read_file", content=[TextContent(text="b")]),
    ]


def test_gemini_signature_goes_back_unchanged_and_only_on_its_call() -> None:
    contents = convert_contents(Context(messages=turn("gemini-generate", "EpEgCo4g")))
    model = contents[1]["parts"]
    assert model[0] == {"text": "Reading."}
    assert model[1]["thoughtSignature"] == "EpEgCo4g" and "thoughtSignature" not in model[2]
    results = contents[2]["parts"]
    assert [r["functionResponse"]["response"] for r in results] == [{"output": "a"}, {"output": "b"}]


def test_another_models_turn_gets_the_stand_in_on_its_first_call_only() -> None:
    """Bug: a session that started on another model and went on with Gemini 3 sent unsigned
    function calls, which Gemini 3 refuses."""

    contents = convert_contents(Context(messages=turn("anthropic-messages", None, "anthropic")))
    model = contents[1]["parts"]
    assert model[1]["thoughtSignature"] == UNSIGNED_CALL and "thoughtSignature" not in model[2]
    assert "thoughtSignature" not in model[0]
    # a signature another provider left on a block is not Gemini's: the stand-in replaces it
    contents = convert_contents(Context(messages=turn("openai-completions", "not-gemini", "openrouter")))
    assert contents[1]["parts"][1]["thoughtSignature"] == UNSIGNED_CALL
    # Gemini's own signature from its OpenAI-compatible endpoint (sessions before this API) goes back
    contents = convert_contents(Context(messages=turn("openai-completions", "EpEgCo4g", "gemini")))
    assert contents[1]["parts"][1]["thoughtSignature"] == "EpEgCo4g"
