"""Tool calls over ACP: tool_call / tool_call_update with kind, locations and diffs; permissions; plan."""

from __future__ import annotations

import asyncio
from pathlib import Path

from acp import text_block

from tests.acp.harness import RecordingClient, acp_agent, scripted_settings
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

CALC = "def add(a, b):\n    return a - b\n"


def _edit_turns() -> list[dict]:
    return [
        {"steps": [{"text": "Reading.", "chunks": 1},
                   {"tool_call": {"id": "call_read", "name": "read_file", "arguments": {"filepath": "calc.py"}}}]},
        {"tool_call": {"id": "call_edit", "name": "edit_file",
                       "arguments": {"filepath": "calc.py", "old_text": "a - b", "new_text": "a + b"}}},
        {"text": "Fixed."},
    ]


async def test_tool_calls_carry_kind_locations_results_and_a_diff(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    (workspace / "calc.py").write_text(CALC)
    model.set_script(_edit_turns())
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        response = await agent.conn.prompt(session_id=session_id, prompt=[text_block("Fix add")])
        assert response.stop_reason == "end_turn"
        client = agent.client
        starts = {u.tool_call_id: u for u in client.of_kind("tool_call", session_id)}
        assert starts["call_read"].kind == "read" and starts["call_edit"].kind == "edit"
        real = str((workspace / "calc.py").resolve())
        assert [loc.path for loc in starts["call_read"].locations] == [real]
        assert [loc.path for loc in starts["call_edit"].locations] == [real]
        assert starts["call_edit"].raw_input["new_text"] == "a + b"

        progress = client.of_kind("tool_call_update", session_id)
        read_statuses = [u.status for u in progress if u.tool_call_id == "call_read"]
        assert read_statuses == ["in_progress", "completed"]
        read_done = [u for u in progress if u.tool_call_id == "call_read" and u.status == "completed"][0]
        assert "return a - b" in read_done.content[0].content.text
        edit_done = [u for u in progress if u.tool_call_id == "call_edit" and u.status == "completed"][0]
        diffs = [c for c in edit_done.content if c.type == "diff"]
        assert len(diffs) == 1
        assert diffs[0].path == real and diffs[0].old_text == CALC and diffs[0].new_text == CALC.replace("a - b", "a + b")
        assert (workspace / "calc.py").read_text() == CALC.replace("a - b", "a + b")

        # order: the text before the call, the call, its updates, then the final text
        order = [u.session_update for _, u in client.updates]
        assert order.index("agent_message_chunk") < order.index("tool_call")
        assert client.text(session_id=session_id) == "Reading.Fixed."


async def test_a_new_file_has_a_diff_without_old_text_and_a_plan_is_sent(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    todos = [{"content": "Write the note", "status": "in_progress", "activeForm": "Writing the note"},
             {"content": "Report", "status": "pending", "activeForm": "Reporting"}]
    model.set_script([
        {"tool_call": {"id": "call_plan", "name": "todo_write", "arguments": {"todos": todos}}},
        {"tool_call": {"id": "call_write", "name": "write_file", "arguments": {"filepath": "note.txt", "content": "hi\n"}}},
        {"text": "Done."},
    ])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        response = await agent.conn.prompt(session_id=session_id, prompt=[text_block("Write a note")])
        assert response.stop_reason == "end_turn"
        plans = agent.client.of_kind("plan", session_id)
        assert [(e.content, e.status) for e in plans[-1].entries] == [("Write the note", "in_progress"), ("Report", "pending")]
        done = [u for u in agent.client.of_kind("tool_call_update") if u.tool_call_id == "call_write" and u.status == "completed"][0]
        diff = [c for c in done.content if c.type == "diff"][0]
        assert diff.old_text is None and diff.new_text == "hi\n"
        start = [u for u in agent.client.of_kind("tool_call") if u.tool_call_id == "call_plan"][0]
        assert start.kind == "think"


def _write_turns(name: str = "out.txt") -> list[dict]:
    return [
        {"tool_call": {"id": "call_w", "name": "write_file", "arguments": {"filepath": name, "content": "data\n"}}},
        {"text": "Finished."},
    ]


async def test_permission_allowed_once_runs_the_tool(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    model.set_script(_write_turns())
    async with acp_agent(workspace, home, scripted_settings(model, approval="ask")) as agent:
        session_id = await agent.start_session(workspace)
        agent.client.permission_answer = "allow"
        response = await agent.conn.prompt(session_id=session_id, prompt=[text_block("Write it")])
        assert response.stop_reason == "end_turn"
        [asked] = agent.client.permission_requests
        assert asked.session_id == session_id and asked.tool_call.tool_call_id == "call_w"
        assert asked.tool_call.kind == "edit"
        assert {o.kind for o in asked.options} == {"allow_once", "allow_always", "reject_once"}
        assert "+data" in asked.tool_call.content[0].content.text  # the diff the user approves
        # the client saw the tool call before it was asked about it
        seen = agent.client.updates[: agent.client.updates_before_permission[0]]
        assert any(u.session_update == "tool_call" and u.tool_call_id == "call_w" for _, u in seen)
        assert (workspace / "out.txt").read_text() == "data\n"
        statuses = [u.status for u in agent.client.of_kind("tool_call_update") if u.tool_call_id == "call_w"]
        assert statuses[-1] == "completed"


async def test_permission_rejected_runs_nothing(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    model.set_script(_write_turns())
    async with acp_agent(workspace, home, scripted_settings(model, approval="ask")) as agent:
        session_id = await agent.start_session(workspace)
        agent.client.permission_answer = "deny"
        response = await agent.conn.prompt(session_id=session_id, prompt=[text_block("Write it")])
        assert response.stop_reason == "end_turn"
        assert len(agent.client.permission_requests) == 1
        assert not (workspace / "out.txt").exists()
        final = [u for u in agent.client.of_kind("tool_call_update") if u.tool_call_id == "call_w"][-1]
        assert final.status == "failed" and "denied" in final.content[0].content.text


async def test_permission_cancelled_outcome_is_a_denial(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    model.set_script(_write_turns())
    async with acp_agent(workspace, home, scripted_settings(model, approval="ask")) as agent:
        session_id = await agent.start_session(workspace)
        agent.client.permission_answer = None
        response = await agent.conn.prompt(session_id=session_id, prompt=[text_block("Write it")])
        assert response.stop_reason == "end_turn"
        assert not (workspace / "out.txt").exists()


async def test_allow_always_is_not_asked_again_in_the_session(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    model.set_script([
        {"tool_call": {"id": "call_1", "name": "write_file", "arguments": {"filepath": "a.txt", "content": "a\n"}}},
        {"tool_call": {"id": "call_2", "name": "write_file", "arguments": {"filepath": "b.txt", "content": "b\n"}}},
        {"text": "Both."},
    ])
    async with acp_agent(workspace, home, scripted_settings(model, approval="ask")) as agent:
        session_id = await agent.start_session(workspace)
        agent.client.permission_answer = "allow_session"
        response = await agent.conn.prompt(session_id=session_id, prompt=[text_block("Write two")])
        assert response.stop_reason == "end_turn"
        assert len(agent.client.permission_requests) == 1
        assert (workspace / "a.txt").exists() and (workspace / "b.txt").exists()


async def test_a_permission_never_answered_is_denied_in_bounded_time(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    model.set_script(_write_turns())
    client = RecordingClient()
    client.permission_hold = asyncio.Event()  # never released: the client never answers
    async with acp_agent(workspace, home, scripted_settings(model, approval="ask"), "--permission-timeout", "1",
                         client=client) as agent:
        session_id = await agent.start_session(workspace)
        response = await asyncio.wait_for(agent.conn.prompt(session_id=session_id, prompt=[text_block("Write it")]), 10)
        assert response.stop_reason == "end_turn"
        assert len(client.permission_requests) == 1
        assert not (workspace / "out.txt").exists()
        final = [u for u in client.of_kind("tool_call_update") if u.tool_call_id == "call_w"][-1]
        assert final.status == "failed"
        # the process lives and serves the next request
        assert (await agent.conn.new_session(cwd=str(workspace))).session_id != session_id
        client.permission_hold.set()
