"""ACP session/resume, session/close and session/fork over the real agent process, driven by
the SDK's own client (unstable methods in SDK 0.12, served on purpose)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block

from tests.acp.harness import acp_agent, scripted_settings
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer


async def test_initialize_advertises_resume_close_and_fork(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        init = await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        caps = init.agent_capabilities.session_capabilities
        assert caps.resume is not None and caps.close is not None and caps.fork is not None and caps.list is not None


async def test_resume_in_a_new_process_continues_without_replaying(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    model.set_script([{"text": "First answer."}, {"text": "Second answer."}])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        assert (await agent.conn.prompt(session_id=session_id, prompt=[text_block("remember 42")])).stop_reason == "end_turn"
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        with pytest.raises(RequestError):  # not usable here before resume
            await agent.conn.prompt(session_id=session_id, prompt=[text_block("hi")])
        await agent.conn.resume_session(session_id=session_id, cwd=str(workspace))
        response = await agent.conn.prompt(session_id=session_id, prompt=[text_block("what number?")])
        assert response.stop_reason == "end_turn"
        kinds = [u.session_update for s, u in agent.client.updates if s == session_id]
        assert "user_message_chunk" not in kinds  # resume replays nothing (load does)
        assert agent.client.text(session_id=session_id).endswith("Second answer.")  # after any notice
        sent = json.dumps(model.requests[-1]["messages"])
        assert "remember 42" in sent and "First answer." in sent
        with pytest.raises(RequestError) as info:
            await agent.conn.resume_session(session_id="no-such-session", cwd=str(workspace))
        assert info.value.code == -32002


async def test_close_cancels_the_running_prompt_and_ends_the_session_here(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    model.set_script([{"steps": [{"text": "Working"}, {"stall": 30}]}, {"text": "Resumed."}])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        prompt = asyncio.ensure_future(agent.conn.prompt(session_id=session_id, prompt=[text_block("go")]))
        await agent.client.wait_for(lambda: "Working" in agent.client.text(session_id=session_id))
        await agent.conn.close_session(session_id=session_id)
        assert (await asyncio.wait_for(prompt, 5)).stop_reason == "cancelled"
        with pytest.raises(RequestError) as info:
            await agent.conn.prompt(session_id=session_id, prompt=[text_block("still there?")])
        assert info.value.code == -32002
        with pytest.raises(RequestError):
            await agent.conn.close_session(session_id=session_id)  # closed already
        # the stored session stays: resume and go on
        await agent.conn.resume_session(session_id=session_id, cwd=str(workspace))
        assert (await agent.conn.prompt(session_id=session_id, prompt=[text_block("again")])).stop_reason == "end_turn"


async def test_fork_copies_the_conversation_and_leaves_the_files(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    model.set_script([
        {"tool_call": {"name": "write_file", "arguments": {"filepath": "a.txt", "content": "one\n"}}},
        {"text": "Wrote it."},
        {"text": "In the fork."},
    ])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        await agent.conn.prompt(session_id=session_id, prompt=[text_block("write a.txt")])
        fork = await agent.conn.fork_session(session_id=session_id, cwd=str(workspace))
        assert fork.session_id != session_id
        assert (workspace / "a.txt").read_text() == "one\n"
        response = await agent.conn.prompt(session_id=fork.session_id, prompt=[text_block("and now?")])
        assert response.stop_reason == "end_turn" and agent.client.text(session_id=fork.session_id).endswith("In the fork.")
        sent = json.dumps(model.requests[-1]["messages"])
        assert "write a.txt" in sent and "Wrote it." in sent
        assert (workspace / "a.txt").read_text() == "one\n"
        listed = {s.session_id for s in (await agent.conn.list_sessions(cwd=str(workspace))).sessions}
        assert {session_id, fork.session_id} <= listed


async def test_rewind_list_and_rewind_to_any_request(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    def write(name: str) -> dict:
        return {"tool_call": {"name": "write_file", "arguments": {"filepath": name, "content": name + "\n"}}}

    model.set_script([write("one.txt"), {"text": "1"}, write("two.txt"), {"text": "2"}, write("three.txt"), {"text": "3"}, {"text": "after"}])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        for prompt in ("first prompt", "second prompt", "third prompt"):
            await agent.conn.prompt(session_id=session_id, prompt=[text_block(prompt)])
        calls = len(model.requests)
        before = len(agent.client.text())
        await agent.conn.prompt(session_id=session_id, prompt=[text_block("/rewind list")])
        listed = agent.client.text()[before:]
        assert "1. first prompt" in listed and "2. second prompt" in listed and "3. third prompt" in listed
        before = len(agent.client.text())
        await agent.conn.prompt(session_id=session_id, prompt=[text_block("/rewind 9")])
        assert "no request '9'" in agent.client.text()[before:]
        before = len(agent.client.text())
        await agent.conn.prompt(session_id=session_id, prompt=[text_block("/rewind 2")])
        answer = agent.client.text()[before:]
        assert "Rewound request 2: files restored: three.txt, two.txt" in answer
        assert (workspace / "one.txt").exists() and not (workspace / "two.txt").exists() and not (workspace / "three.txt").exists()
        assert len(model.requests) == calls
        await agent.conn.prompt(session_id=session_id, prompt=[text_block("where are we?")])
        sent = json.dumps(model.requests[-1]["messages"])
        assert "first prompt" in sent and "second prompt" not in sent and "third prompt" not in sent
