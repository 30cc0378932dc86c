"""session/prompt over the real `tunacode-lsp acp`: text, thinking, tool calls, plan, stop reasons."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError, text_block

from tests.acp.harness import acp_agent, scripted_settings
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer


async def test_initialize_advertises_load_list_images_and_embedded_context(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        init = await agent.conn.initialize(protocol_version=1)
        caps = init.agent_capabilities
        assert init.protocol_version == 1
        assert caps is not None and caps.load_session is True
        assert caps.prompt_capabilities is not None
        assert caps.prompt_capabilities.image is True and caps.prompt_capabilities.embedded_context is True
        assert caps.session_capabilities is not None and caps.session_capabilities.list is not None
        assert init.agent_info is not None and init.agent_info.name == "tunacode"


async def test_text_answer_streams_message_and_thought_chunks(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    model.set_script([{"steps": [{"thinking": "Let me think.", "chunks": 2}, {"text": "Hello from TunaCode.", "chunks": 4}]}])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        response = await agent.conn.prompt(session_id=session_id, prompt=[text_block("Say hello")])
        assert response.stop_reason == "end_turn"
        assert agent.client.text("agent_message_chunk", session_id) == "Hello from TunaCode."
        assert agent.client.text("agent_thought_chunk", session_id) == "Let me think."
        sent = model.wait_for_requests(1)[0]["messages"]
        assert "Say hello" in str(sent[-1]["content"])
        assert response.usage is not None and response.usage.output_tokens > 0


async def test_usage_updates_meta_and_a_shell_call(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    model.set_script([
        {"tool_call": {"id": "call_sh", "name": "bash", "arguments": {"command": "echo hi-from-shell"}}},
        {"steps": [{"text": "Ran it."}, {"usage": {"prompt_tokens": 1200, "completion_tokens": 7}}]},
    ])
    settings = scripted_settings(model, contextWindow=50_000, shellSandbox="off")
    async with acp_agent(workspace, home, settings) as agent:
        session_id = await agent.start_session(workspace)
        response = await agent.conn.prompt(session_id=session_id, prompt=[text_block("Run echo")])
        assert response.stop_reason == "end_turn"
        assert response.field_meta is not None and response.field_meta["tunacode"]["stopReason"] == "end_turn"
        [start] = agent.client.of_kind("tool_call", session_id)
        assert start.kind == "execute" and "echo hi-from-shell" in start.title
        done = [u for u in agent.client.of_kind("tool_call_update") if u.tool_call_id == "call_sh"][-1]
        assert done.status == "completed" and done.raw_output["exitCode"] == 0
        assert "hi-from-shell" in done.content[0].content.text
        usage = agent.client.of_kind("usage_update", session_id)
        assert usage and usage[-1].size == 50_000 and usage[-1].used == 1200


async def test_a_model_that_cannot_be_used_is_32003(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    settings = {"model": "openrouter:some/model", "approval": "auto"}
    async with acp_agent(workspace, home, settings) as agent:
        with pytest.raises(RequestError) as refused:  # no OPENROUTER_API_KEY: session/new fails at once
            await agent.start_session(workspace)
        assert refused.value.code == -32003 and "OPENROUTER_API_KEY" in str(refused.value)
        listed = await agent.conn.list_sessions()
        assert listed.sessions == []  # no session was stored for it
        assert model.requests == []


async def test_a_failed_first_prompt_leaves_no_session_in_the_list(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    """A provider error on the first prompt stores the prompt and no answer: session/list leaves
    that session out (a session that was answered, or is new and empty, stays listed)."""

    model.set_script([{"steps": [{"error": {"status": 500}}]}, {"steps": [{"text": "answered"}]}])
    async with acp_agent(workspace, home, scripted_settings(model, maxRetries=0)) as agent:
        failed = await agent.start_session(workspace)
        with pytest.raises(RequestError):
            await agent.conn.prompt(session_id=failed, prompt=[text_block("Hi")])
        answered = await agent.start_session(workspace)
        response = await agent.conn.prompt(session_id=answered, prompt=[text_block("Hi again")])
        assert response.stop_reason == "end_turn"
        fresh = await agent.start_session(workspace)
        listed = {s.session_id for s in (await agent.conn.list_sessions(cwd=str(workspace))).sessions}
        assert listed == {answered, fresh}
        await agent.conn.load_session(cwd=str(workspace), session_id=failed)  # still loadable by id
