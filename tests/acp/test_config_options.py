"""ACP configOptions (model, mode, approval) and session/set_config_option, with the SDK's
own client over a real subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError, text_block
from acp.schema import ClientCapabilities, FileSystemCapabilities

from tests.acp.harness import acp_agent, scripted_settings
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

WRITE = {"tool_call": {"name": "write_file", "arguments": {"filepath": "x.txt", "content": "x"}}}


async def test_config_options_are_offered_and_set(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    model.set_script([WRITE, {"text": "Planned."}, WRITE, {"text": "Refused."}])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        await agent.conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities(fs=FileSystemCapabilities()))
        created = await agent.conn.new_session(cwd=str(workspace))
        options = {o.id: o for o in created.config_options or []}
        assert list(options) == ["model", "mode", "approval"]
        assert options["model"].current_value == "openai-compatible:scripted"
        assert options["mode"].current_value == "agent" and options["approval"].current_value == "auto"
        assert [o.value for o in options["mode"].options] == ["agent", "plan"]

        changed = await agent.conn.set_config_option(config_id="mode", session_id=created.session_id, value="plan")
        assert {o.id: o.current_value for o in changed.config_options}["mode"] == "plan"
        await agent.conn.prompt(session_id=created.session_id, prompt=[text_block("plan it")])
        assert sorted(t["function"]["name"] for t in model.requests[0]["tools"]) == [
            "grep", "list_files", "read_file", "todo_write"
        ]
        assert not (workspace / "x.txt").exists()

        await agent.conn.set_config_option(config_id="mode", session_id=created.session_id, value="agent")
        await agent.conn.set_config_option(config_id="approval", session_id=created.session_id, value="read-only")
        await agent.conn.prompt(session_id=created.session_id, prompt=[text_block("write it")])
        assert not (workspace / "x.txt").exists()  # read-only, although the server's setting is auto
        assert "read-only" in [m for m in model.requests[3]["messages"] if m["role"] == "tool"][-1]["content"]

        for config_id, value in (("mode", "yolo"), ("approval", "always"), ("colour", "red"), ("model", "made:up")):
            with pytest.raises(RequestError):
                await agent.conn.set_config_option(config_id=config_id, session_id=created.session_id, value=value)
        with pytest.raises(RequestError):
            await agent.conn.set_config_option(config_id="mode", session_id="nope", value="plan")
