"""fs/read_text_file and fs/write_text_file: with a client that offers them, reads see the
editor's unsaved buffer and edits go into it; without, the disk."""

from __future__ import annotations

from pathlib import Path

from acp import text_block

from tests.acp.harness import acp_agent, scripted_settings
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

ON_DISK = "def add(a, b):\n    return a - b\n"
IN_BUFFER = "def add(a, b):\n    return a - b  # unsaved note\n"


def _script() -> list[dict]:
    return [
        {"tool_call": {"id": "call_read", "name": "read_file", "arguments": {"filepath": "calc.py"}}},
        {"tool_call": {"id": "call_edit", "name": "edit_file",
                       "arguments": {"filepath": "calc.py", "old_text": "a - b", "new_text": "a + b"}}},
        {"text": "Fixed."},
    ]


async def test_reads_and_edits_go_through_the_client(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    calc = workspace / "calc.py"
    calc.write_text(ON_DISK)
    real = str(calc.resolve())
    model.set_script(_script())
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        agent.client.buffers[real] = IN_BUFFER
        session_id = await agent.start_session(workspace, fs=True)
        response = await agent.conn.prompt(session_id=session_id, prompt=[text_block("Fix add")])
        assert response.stop_reason == "end_turn"
        updates = agent.client.of_kind("tool_call_update", session_id)
        read_done = [u for u in updates if u.tool_call_id == "call_read" and u.status == "completed"][0]
        assert "# unsaved note" in read_done.content[0].content.text  # the buffer, not the disk
        expected = IN_BUFFER.replace("a - b", "a + b")
        assert agent.client.writes == [(real, expected)]
        assert calc.read_text() == ON_DISK  # the editor decides when it is saved
        edit_done = [u for u in updates if u.tool_call_id == "call_edit" and u.status == "completed"][0]
        [diff] = [c for c in edit_done.content if c.type == "diff"]
        assert diff.old_text == IN_BUFFER and diff.new_text == expected


async def test_without_fs_capabilities_the_disk_is_used(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    calc = workspace / "calc.py"
    calc.write_text(ON_DISK)
    model.set_script(_script())
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        agent.client.buffers[str(calc.resolve())] = IN_BUFFER
        session_id = await agent.start_session(workspace, fs=False)
        assert (await agent.conn.prompt(session_id=session_id, prompt=[text_block("Fix add")])).stop_reason == "end_turn"
        assert agent.client.reads == [] and agent.client.writes == []
        assert calc.read_text() == ON_DISK.replace("a - b", "a + b")


async def test_files_outside_the_workspace_are_never_asked_of_the_client(workspace: Path, home: Path, tmp_path: Path, model: ScriptedModelServer) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("secret = 1\n")
    model.set_script([
        {"tool_call": {"id": "call_read", "name": "read_file", "arguments": {"filepath": str(outside)}}},
        {"text": "No."},
    ])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace, fs=True)
        assert (await agent.conn.prompt(session_id=session_id, prompt=[text_block("Read it")])).stop_reason == "end_turn"
        assert agent.client.reads == []
        done = [u for u in agent.client.of_kind("tool_call_update") if u.tool_call_id == "call_read"][-1]
        assert done.status == "failed"


async def test_the_approval_shows_the_diff_of_the_buffer(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    calc = workspace / "calc.py"
    calc.write_text(ON_DISK)
    real = str(calc.resolve())
    model.set_script(_script()[1:])
    async with acp_agent(workspace, home, scripted_settings(model, approval="ask")) as agent:
        agent.client.buffers[real] = IN_BUFFER
        agent.client.permission_answer = "allow"
        session_id = await agent.start_session(workspace, fs=True)
        assert (await agent.conn.prompt(session_id=session_id, prompt=[text_block("Fix add")])).stop_reason == "end_turn"
        [asked] = agent.client.permission_requests
        shown = asked.tool_call.content[0].content.text
        assert "+    return a + b  # unsaved note" in shown
        assert agent.client.writes == [(real, IN_BUFFER.replace("a - b", "a + b"))]
