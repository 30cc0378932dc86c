"""session/prompt over the real `tunacode-lsp acp`: text, thinking, tool calls, plan, stop reasons."""

from __future__ import annotations

from pathlib import Path

from acp import text_block
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
