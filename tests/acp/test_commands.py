"""Slash commands over ACP (acp/commands.py): the client is offered /changes and /rewind after
session/new, and they reach the checkpoints (the same as tunacode.changes and
tunacode.session.rewind) without calling the model. The SDK's own client, a real subprocess."""

from __future__ import annotations

from pathlib import Path

from acp import text_block

from tests.acp.harness import acp_agent, scripted_settings
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

CALC = "def add(a, b):\n    return a - b\n"
EDIT = {"tool_call": {"id": "call_edit", "name": "edit_file",
                      "arguments": {"filepath": "calc.py", "old_text": "a - b", "new_text": "a + b"}}}


async def test_changes_and_rewind_as_slash_commands(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    (workspace / "calc.py").write_text(CALC)
    model.set_script([EDIT, {"text": "Fixed."}, EDIT, {"text": "Fixed again."}])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        client = agent.client
        await client.wait_for(lambda: bool(client.of_kind("available_commands_update", session_id)))
        [offer] = client.of_kind("available_commands_update", session_id)
        assert [c.name for c in offer.available_commands] == ["changes", "rewind"]

        assert (await agent.conn.prompt(session_id=session_id, prompt=[text_block("Fix add")])).stop_reason == "end_turn"
        assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
        calls = len(model.requests)

        before = len(client.text())
        await agent.conn.prompt(session_id=session_id, prompt=[text_block("/changes")])
        shown = client.text()[before:]
        assert "**calc.py** (modified)" in shown and "-    return a - b" in shown and "+    return a + b" in shown

        (workspace / "calc.py").write_text("# the user's own version\n")  # someone else changed it since
        before = len(client.text())
        await agent.conn.prompt(session_id=session_id, prompt=[text_block("/rewind")])
        assert "Not rewound: calc.py changed since" in client.text()[before:] and "/rewind force" in client.text()[before:]
        assert (workspace / "calc.py").read_text() == "# the user's own version\n"  # nothing restored

        before = len(client.text())
        await agent.conn.prompt(session_id=session_id, prompt=[text_block("/rewind force")])
        assert "Rewound the last request: files restored: calc.py" in client.text()[before:]
        assert (workspace / "calc.py").read_text() == CALC
        assert len(model.requests) == calls  # the commands never called the model

        # the next prompt runs on the shortened history: the rewound turn is gone
        await agent.conn.prompt(session_id=session_id, prompt=[text_block("Again")])
        sent = [m for m in model.requests[-2]["messages"] if m["role"] == "user"]
        assert [m["content"] if isinstance(m["content"], str) else m["content"][-1]["text"] for m in sent] == ["Again"]


async def test_a_command_before_any_request_says_so(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        response = await agent.conn.prompt(session_id=session_id, prompt=[text_block("/rewind")])
        assert response.stop_reason == "end_turn" and "no request of this session has checkpoints" in agent.client.text()
        assert model.requests == []
