"""MCP servers the ACP client passes in session/new start like configured ones; their tools reach the model."""

from __future__ import annotations

import sys
from pathlib import Path

from acp import schema, text_block

from tests.acp.harness import acp_agent, scripted_settings
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

DEMO = str(Path(__file__).parents[1] / "mcp" / "demo_server.py")


async def test_a_client_mcp_server_is_started_and_its_tool_runs(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    model.set_script([
        {"tool_call": {"id": "call_echo", "name": "mcp__my_demo__echo", "arguments": {"text": "ping"}}},
        {"text": "Echoed."},
    ])
    demo = schema.McpServerStdio(name="my demo", command=sys.executable, args=[DEMO],
                                 env=[schema.EnvVariable(name="NOTES_DIR", value=str(workspace))])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        await agent.conn.initialize(protocol_version=1)
        session_id = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[demo])).session_id
        response = await agent.conn.prompt(session_id=session_id, prompt=[text_block("Echo ping")])
        assert response.stop_reason == "end_turn"
        offered = [t["function"]["name"] for t in model.wait_for_requests(1)[0].get("tools", [])]
        assert "mcp__my_demo__echo" in offered
        done = [u for u in agent.client.of_kind("tool_call_update") if u.tool_call_id == "call_echo"][-1]
        assert done.status == "completed" and "echo: ping" in done.content[0].content.text
        # a session without servers does not see them
        plain = (await agent.conn.new_session(cwd=str(workspace))).session_id
        model.set_script([{"text": "No tools."}])
        await agent.conn.prompt(session_id=plain, prompt=[text_block("Hi")])
        offered = [t["function"]["name"] for t in model.wait_for_requests(3)[2].get("tools", [])]
        assert "mcp__my_demo__echo" not in offered
