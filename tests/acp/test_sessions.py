"""Sessions over ACP: cancel, load after a restart (replayed history), session/list, the shared store."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from acp import text_block

from tests.acp.harness import acp_agent, scripted_settings, server_env
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer


async def test_cancel_answers_the_prompt_cancelled_within_a_second(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    model.set_script([
        {"steps": [{"text": "Working on it", "chunks": 1}, {"stall": 30}, {"text": "never"}]},
        {"text": "Back again."},
    ])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        prompt = asyncio.ensure_future(agent.conn.prompt(session_id=session_id, prompt=[text_block("Go")]))
        await agent.client.wait_for(lambda: "Working on it" in agent.client.text(session_id=session_id))
        started = time.monotonic()
        await agent.conn.cancel(session_id=session_id)
        response = await asyncio.wait_for(prompt, 5)
        elapsed = time.monotonic() - started
        assert response.stop_reason == "cancelled"
        assert elapsed < 1.0, f"cancel took {elapsed:.2f} s"
        assert model.wait_for_closed(5.0)  # the model's stream was closed at once
        # the history stays valid: the next prompt in the session runs and sees the interrupted turn
        again = await agent.conn.prompt(session_id=session_id, prompt=[text_block("Continue")])
        assert again.stop_reason == "end_turn"
        sent = model.wait_for_requests(2)[1]["messages"]
        assert "Working on it" in json.dumps(sent)
        assert "Continue" in json.dumps(sent[-1])


async def test_cancel_while_a_permission_is_open_runs_nothing(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    model.set_script([
        {"tool_call": {"id": "call_w", "name": "write_file", "arguments": {"filepath": "x.txt", "content": "x\n"}}},
        {"text": "unused"},
    ])
    async with acp_agent(workspace, home, scripted_settings(model, approval="ask")) as agent:
        agent.client.permission_hold = asyncio.Event()
        session_id = await agent.start_session(workspace)
        prompt = asyncio.ensure_future(agent.conn.prompt(session_id=session_id, prompt=[text_block("Write")]))
        await agent.client.wait_for(lambda: len(agent.client.permission_requests) == 1)
        started = time.monotonic()
        await agent.conn.cancel(session_id=session_id)
        response = await asyncio.wait_for(prompt, 5)
        assert response.stop_reason == "cancelled" and time.monotonic() - started < 1.0
        agent.client.permission_hold.set()  # a late "allow" changes nothing
        assert not (workspace / "x.txt").exists()


async def test_load_after_restart_replays_the_history_and_continues(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    model.set_script([
        {"steps": [{"thinking": "Look first."}, {"text": "Reading a.txt."},
                   {"tool_call": {"id": "call_r", "name": "read_file", "arguments": {"filepath": "a.txt"}}}]},
        {"text": "It says alpha."},
        {"text": "Still here."},
    ])
    async with acp_agent(workspace, home, scripted_settings(model)) as first:
        session_id = await first.start_session(workspace)
        assert (await first.conn.prompt(session_id=session_id, prompt=[text_block("What is in a.txt?")])).stop_reason == "end_turn"

    async with acp_agent(workspace, home, scripted_settings(model)) as second:
        await second.conn.initialize(protocol_version=1)
        listed = await second.conn.list_sessions(cwd=str(workspace))
        assert session_id in [s.session_id for s in listed.sessions]
        assert await second.conn.load_session(cwd=str(workspace), session_id=session_id) is not None
        client = second.client
        # replayed before the load answered
        kinds = [u.session_update for _, u in client.updates]
        assert kinds[0] == "user_message_chunk"
        assert client.text("user_message_chunk", session_id) == "What is in a.txt?"
        assert client.text("agent_thought_chunk", session_id) == "Look first."
        assert client.text("agent_message_chunk", session_id) == "Reading a.txt.It says alpha."
        [call] = client.of_kind("tool_call", session_id)
        assert call.tool_call_id == "call_r" and call.kind == "read" and call.title == "Read a.txt"
        *_, done = client.of_kind("tool_call_update", session_id)
        assert done.tool_call_id == "call_r" and done.status == "completed"
        assert "alpha" in done.content[0].content.text
        assert kinds.index("tool_call_update") < len(kinds) - 1  # the final text comes after the call

        response = await second.conn.prompt(session_id=session_id, prompt=[text_block("And now?")])
        assert response.stop_reason == "end_turn"
        sent = json.dumps(model.wait_for_requests(3)[2]["messages"])
        assert "It says alpha." in sent and "And now?" in sent


async def test_sessions_are_shared_with_the_cli_store(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    model.set_script([{"text": "Stored."}])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        await agent.conn.prompt(session_id=session_id, prompt=[text_block("Remember me")])
    listed = subprocess.run(
        [sys.executable, "-m", "tunacode_lsp", "sessions", "list", "--json"],
        env=server_env(home), capture_output=True, text=True, timeout=60, check=True,
    )
    sessions = json.loads(listed.stdout)
    sessions = sessions["sessions"] if isinstance(sessions, dict) else sessions
    [mine] = [s for s in sessions if s["sessionId"] == session_id]
    assert mine["cwd"] == str(workspace.resolve()) and mine["messageCount"] == 2
    shown = subprocess.run(
        [sys.executable, "-m", "tunacode_lsp", "sessions", "show", session_id, "--json"],
        env=server_env(home), capture_output=True, text=True, timeout=60, check=True,
    )
    assert "Remember me" in shown.stdout and "Stored." in shown.stdout


async def test_session_list_pages_and_filters_by_cwd(workspace: Path, home: Path, tmp_path: Path, model: ScriptedModelServer) -> None:
    other = tmp_path / "other"
    other.mkdir()
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        here = await agent.start_session(workspace)
        there = (await agent.conn.new_session(cwd=str(other))).session_id
        mine = await agent.conn.list_sessions(cwd=str(workspace))
        assert [s.session_id for s in mine.sessions] == [here] and mine.next_cursor is None
        everything = await agent.conn.list_sessions()
        assert {here, there} <= {s.session_id for s in everything.sessions}


async def test_a_session_started_over_lsp_continues_over_acp_and_back(lsp, workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    from tests.conftest import scripted_options

    model.set_script([{"text": "Answered in the language server."}, {"text": "Answered over ACP."},
                      {"text": "Back in the language server."}])
    await lsp.start(init_options=scripted_options(model))
    first = await lsp.command("tunacode.request", {"prompt": "Start in VS Code"})
    session_id = first["sessionId"]

    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        await agent.conn.initialize(protocol_version=1)
        listed = await agent.conn.list_sessions(cwd=str(workspace))
        assert session_id in [s.session_id for s in listed.sessions]
        await agent.conn.load_session(cwd=str(workspace), session_id=session_id)
        assert agent.client.text("user_message_chunk") == "Start in VS Code"
        assert agent.client.text() == "Answered in the language server."
        response = await agent.conn.prompt(session_id=session_id, prompt=[text_block("Continue in Zed")])
        assert response.stop_reason == "end_turn"

    again = await lsp.command("tunacode.request", {"prompt": "And back", "sessionId": session_id})
    assert again["stopReason"] == "end_turn"
    sent = json.dumps(model.wait_for_requests(3)[2]["messages"])
    assert "Continue in Zed" in sent and "Answered over ACP." in sent


async def test_each_session_is_confined_to_its_own_cwd(workspace: Path, home: Path, tmp_path: Path, model: ScriptedModelServer) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (workspace / "a.txt").write_text("from the workspace\n")
    (other / "a.txt").write_text("from the other project\n")
    read = {"tool_call": {"id": "call_r", "name": "read_file", "arguments": {"filepath": "a.txt"}}}
    escape = {"tool_call": {"id": "call_x", "name": "read_file", "arguments": {"filepath": str(workspace / "a.txt")}}}
    model.set_script([read, {"text": "one"}, read, escape, {"text": "two"}])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        here = await agent.start_session(workspace)
        there = (await agent.conn.new_session(cwd=str(other))).session_id
        await agent.conn.prompt(session_id=here, prompt=[text_block("Read a.txt")])
        await agent.conn.prompt(session_id=there, prompt=[text_block("Read a.txt")])

        def results(session_id: str, call: str) -> list:
            return [u for u in agent.client.of_kind("tool_call_update", session_id) if u.tool_call_id == call and u.status != "in_progress"]

        assert "from the workspace" in results(here, "call_r")[0].content[0].content.text
        assert "from the other project" in results(there, "call_r")[0].content[0].content.text
        [outside] = results(there, "call_x")
        assert outside.status == "failed" and "outside the workspace" in outside.content[0].content.text


def _tool_statuses(client: Any, session_id: str) -> list[tuple[str, str, str | None]]:
    """Each tool call's updates as (id, status, reason) in order, as a client sees them."""
    seen = []
    for sid, update in client.updates:
        if sid != session_id or update.session_update not in ("tool_call", "tool_call_update"):
            continue
        reason = (update.raw_output or {}).get("reason") if isinstance(update.raw_output, dict) else None
        seen.append((update.tool_call_id, update.status, reason))
    return seen


async def test_load_replays_each_call_through_the_statuses_it_had_live(
    workspace: Path, home: Path, model: ScriptedModelServer
) -> None:
    model.set_script([
        {"steps": [
            {"tool_call": {"id": "call_list", "name": "list_files", "arguments": {}}},
            {"tool_call": {"id": "call_read", "name": "read_file", "arguments": {"filepath": "missing.py"}}},
            {"tool_call": {"id": "call_bash", "name": "bash", "arguments": {"command": "touch ran"}}},
        ]},
        {"text": "Done."},
        {"tool_call": {"id": "call_sleep", "name": "bash", "arguments": {"command": "sleep 30"}}},
        {"text": "unused"},
    ])
    async with acp_agent(workspace, home, scripted_settings(model, approval="ask")) as first:
        session_id = await first.start_session(workspace)
        first.client.permission_answer = "deny"
        await first.conn.prompt(session_id=session_id, prompt=[text_block("Look around")])
        first.client.permission_answer = "allow"
        prompt = asyncio.ensure_future(first.conn.prompt(session_id=session_id, prompt=[text_block("Wait")]))
        await first.client.wait_for(lambda: ("call_sleep", "in_progress", None) in _tool_statuses(first.client, session_id))
        await first.conn.cancel(session_id=session_id)
        assert (await asyncio.wait_for(prompt, 10)).stop_reason == "cancelled"
        await first.client.wait_for(lambda: ("call_sleep", "failed", "aborted") in _tool_statuses(first.client, session_id))
        live = _tool_statuses(first.client, session_id)

    async with acp_agent(workspace, home, scripted_settings(model)) as second:
        await second.conn.initialize(protocol_version=1)
        await second.conn.load_session(cwd=str(workspace), session_id=session_id)
        replayed = _tool_statuses(second.client, session_id)
    assert replayed == live
    finals = {call: (status, reason) for call, status, reason in replayed if status in ("completed", "failed")}
    assert finals == {
        "call_list": ("completed", None), "call_read": ("failed", "error"),
        "call_bash": ("failed", "denied"), "call_sleep": ("failed", "aborted"),
    }
