"""Secrets under ACP: no session/update, answer or question carries one (the transport is the
channel's choke point), while the text of a file the client is asked to write stays whole."""

from __future__ import annotations

import json
import secrets as random_secrets
import string
from pathlib import Path

import pytest
from acp import text_block

from tests.acp.harness import acp_agent, scripted_settings
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer


def _token(size: int) -> str:
    return "".join(random_secrets.choice(string.ascii_letters + string.digits) for _ in range(size))


async def test_no_update_carries_a_secret_but_the_users_file_keeps_its_text(
    workspace: Path, home: Path, model: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = f"ghs_{_token(36)}"
    password = _token(24)
    monkeypatch.setenv("GITHUB_TOKEN", token)  # the agent process inherits this environment
    monkeypatch.setenv("DB_PASSWORD", password)
    fixture = f'EXAMPLE_KEY = "AKIA{_token(16).upper()}"\n'  # a file of the user's that holds a key shape
    calc = workspace / "calc.py"
    calc.write_text("x = 1\n")
    model.set_script([
        {"steps": [
            {"thinking": f"I have {token} here", "chunks": 7},
            {"text": f"The token is {token} and the password {password}.", "chunks": 11},
            {"tool_call": {"id": "call_echo", "name": "bash", "arguments": {"command": f"echo {token} {password}"}}},
            {"tool_call": {"id": "call_edit", "name": "edit_file",
                           "arguments": {"filepath": "calc.py", "old_text": "x = 1\n", "new_text": fixture}}},
        ]},
        {"text": f"Done with {password}.", "chunks": 3},
    ])
    settings = scripted_settings(model, shellSandbox="off", textToolCalls=token)  # a bad value is logged
    async with acp_agent(workspace, home, settings, "--log-level", "debug") as agent:
        session_id = await agent.start_session(workspace, fs=True)
        response = await agent.conn.prompt(session_id=session_id, prompt=[text_block("Go")])
        assert response.stop_reason == "end_turn"
        streamed = agent.client.text("agent_message_chunk", session_id)
        thought = agent.client.text("agent_thought_chunk", session_id)
        incoming = json.dumps(agent.client.incoming)
        writes = list(agent.client.writes)
    stderr = agent.stderr()

    assert streamed.endswith("The token is [redacted] and the password [redacted].Done with [redacted].")  # after a notice
    assert thought == "I have [redacted] here"
    assert writes == [(str(calc.resolve()), fixture)]  # the edit the client applies is the user's text
    outside_the_edit = incoming.replace(json.dumps(fixture)[1:-1], "")
    assert "session/update" in incoming and token not in incoming and password not in incoming
    assert stderr and token not in stderr and password not in stderr  # every log line too
    assert "AKIA" not in outside_the_edit  # the diff and previews shown are redacted
