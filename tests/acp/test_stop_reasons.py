"""Stop reasons and prompt content over ACP (prompt.py documents the mapping)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from acp import RequestError, embedded_text_resource, resource_block, resource_link_block, text_block

from tests.acp.harness import acp_agent, scripted_settings
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer


def _chunk(delta: dict, finish: str | None = None) -> str:
    body = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "scripted",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(body)}\n\n"


CONTENT_FILTER = _chunk({"role": "assistant", "content": "I"}) + _chunk({}, "content_filter") + "data: [DONE]\n\n"


async def _prompt(workspace: Path, home: Path, model: ScriptedModelServer, script: list, **settings: object):
    model.set_script(script)
    async with acp_agent(workspace, home, scripted_settings(model, **settings)) as agent:
        session_id = await agent.start_session(workspace)
        return await agent.conn.prompt(session_id=session_id, prompt=[text_block("Go")]), agent


async def test_max_turns_is_max_turn_requests(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    call = {"tool_call": {"name": "list_files", "arguments": {}}}
    response, _ = await _prompt(workspace, home, model, [call, call, {"text": "unused"}], maxTurns=1)
    assert response.stop_reason == "max_turn_requests"


async def test_output_limit_is_max_tokens(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    response, agent = await _prompt(workspace, home, model, [{"steps": [{"text": "Cut sh"}, {"finish": "length"}]}])
    assert response.stop_reason == "max_tokens"
    assert agent.client.text().startswith("Cut sh")


async def test_content_filter_is_refusal(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    response, _ = await _prompt(workspace, home, model, [{"replay": CONTENT_FILTER}])
    assert response.stop_reason == "refusal"


async def test_a_provider_error_is_a_json_rpc_error_and_the_session_goes_on(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    model.set_script([{"error": {"status": 400, "body": {"error": {"message": "bad things"}}}}, {"text": "Recovered."}])
    async with acp_agent(workspace, home, scripted_settings(model, maxRetries=0)) as agent:
        session_id = await agent.start_session(workspace)
        with pytest.raises(RequestError) as failed:
            await agent.conn.prompt(session_id=session_id, prompt=[text_block("Go")])
        assert failed.value.code == -32603
        assert "bad things" in str(failed.value) and failed.value.data["stopReason"] == "error"
        again = await agent.conn.prompt(session_id=session_id, prompt=[text_block("Again")])
        assert again.stop_reason == "end_turn" and "Recovered." in agent.client.text()


async def test_embedded_resources_links_and_images_reach_the_model(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 32).decode()
    model.set_script([{"text": "Seen."}])
    async with acp_agent(workspace, home, scripted_settings(model, imageInput="on")) as agent:
        session_id = await agent.start_session(workspace)
        uri = (workspace / "notes.md").as_uri()
        blocks = [
            text_block("Summarize"),
            resource_block(embedded_text_resource(uri, "unsaved buffer text")),
            resource_link_block("spec.md", (workspace / "spec.md").as_uri()),
            {"type": "image", "mimeType": "image/png", "data": png},
        ]
        response = await agent.raw_request("session/prompt", {"sessionId": session_id, "prompt": [
            b if isinstance(b, dict) else b.model_dump(by_alias=True, exclude_none=True) for b in blocks
        ]})
        assert response["stopReason"] == "end_turn"
        sent = json.dumps(model.wait_for_requests(1)[0]["messages"][-1])
        assert "unsaved buffer text" in sent and uri in sent and "spec.md" in sent and "Summarize" in sent
        assert "image/png" in sent or "image_url" in sent
        listed = await agent.conn.list_sessions(cwd=str(workspace))
        assert [s.title for s in listed.sessions] == ["Summarize"]  # the user's words, not the context
