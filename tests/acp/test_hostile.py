"""A hostile model or a client that goes away: nothing read outside the workspace, nothing run
unasked, nothing lost, no unbounded wait."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path

from acp import text_block

from tests.acp.harness import RecordingClient, acp_agent, scripted_settings
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer


async def test_paths_outside_the_workspace_get_no_location_and_no_diff(workspace: Path, home: Path, tmp_path: Path, model: ScriptedModelServer) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET\n")
    model.set_script([
        {"tool_call": {"id": "call_out", "name": "edit_file",
                       "arguments": {"filepath": str(secret), "old_text": "TOP", "new_text": "NOT"}}},
        {"text": "Tried."},
    ])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        assert (await agent.conn.prompt(session_id=session_id, prompt=[text_block("Edit it")])).stop_reason == "end_turn"
        [start] = [u for u in agent.client.of_kind("tool_call") if u.tool_call_id == "call_out"]
        assert start.locations is None
        final = [u for u in agent.client.of_kind("tool_call_update") if u.tool_call_id == "call_out"][-1]
        assert final.status == "failed"
        assert all(c.type != "diff" for c in final.content or [])
        wire = json.dumps([m for m in agent.client.incoming], default=str)
        assert "TOP SECRET" not in wire
        assert secret.read_text() == "TOP SECRET\n"


async def test_an_unknown_permission_option_is_a_denial(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    model.set_script([
        {"tool_call": {"id": "call_w", "name": "write_file", "arguments": {"filepath": "x.txt", "content": "x\n"}}},
        {"text": "Done."},
    ])
    client = RecordingClient()
    client.permission_answer = "allow-everything-forever"
    async with acp_agent(workspace, home, scripted_settings(model, approval="ask"), client=client) as agent:
        session_id = await agent.start_session(workspace)
        assert (await agent.conn.prompt(session_id=session_id, prompt=[text_block("Write")])).stop_reason == "end_turn"
        assert len(client.permission_requests) == 1
        assert not (workspace / "x.txt").exists()


async def _interrupted_then_continued(workspace: Path, home: Path, model: ScriptedModelServer, stop: str) -> None:
    model.set_script([
        {"steps": [{"text": "Half an answer", "chunks": 1}, {"stall": 60}]},
        {"text": "Continued."},
    ])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        prompt = asyncio.ensure_future(agent.conn.prompt(session_id=session_id, prompt=[text_block("Start")]))
        await agent.client.wait_for(lambda: "Half an answer" in agent.client.text())
        started = time.monotonic()
        if stop == "eof":
            assert agent.process.stdin is not None
            agent.process.stdin.close()
        else:
            agent.process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(agent.process.wait(), 10)
        assert code == 0 and time.monotonic() - started < 4.0
        prompt.cancel()
    # nothing lost, the lease released: another process continues the session
    async with acp_agent(workspace, home, scripted_settings(model)) as again:
        await again.conn.initialize(protocol_version=1)
        await again.conn.load_session(cwd=str(workspace), session_id=session_id)
        assert "Half an answer" in again.client.text()
        response = await again.conn.prompt(session_id=session_id, prompt=[text_block("Go on")])
        assert response.stop_reason == "end_turn"
        sent = json.dumps(model.wait_for_requests(2)[1]["messages"])
        assert "Half an answer" in sent and "Go on" in sent


async def test_the_client_closing_stdin_mid_prompt_settles_the_session(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    await _interrupted_then_continued(workspace, home, model, "eof")


async def test_sigterm_mid_prompt_settles_the_session(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    await _interrupted_then_continued(workspace, home, model, "sigterm")


async def test_an_edit_of_a_fifo_does_not_block_the_agent(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    """The diff snapshot must never open a FIFO (an open without a writer blocks forever)."""

    import os

    os.mkfifo(workspace / "pipe.txt")
    model.set_script([
        {"tool_call": {"id": "call_fifo", "name": "edit_file",
                       "arguments": {"filepath": "pipe.txt", "old_text": "a", "new_text": "b"}}},
        {"text": "Could not."},
    ])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        response = await asyncio.wait_for(agent.conn.prompt(session_id=session_id, prompt=[text_block("Edit")]), 20)
        assert response.stop_reason == "end_turn"
        final = [u for u in agent.client.of_kind("tool_call_update") if u.tool_call_id == "call_fifo"][-1]
        assert final.status == "failed"


async def test_a_lone_surrogate_from_the_model_keeps_the_wire_valid(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    from tests.acp.test_stop_reasons import _chunk

    body = _chunk({"role": "assistant", "content": "bad \ud800 text"}) + _chunk({}, "stop") + "data: [DONE]\n\n"
    model.set_script([{"replay": body}, {"text": "Next answer."}])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        first = await asyncio.wait_for(agent.conn.prompt(session_id=session_id, prompt=[text_block("Go")]), 20)
        assert first.stop_reason == "end_turn"  # the provider replaced it (core.text.loads_text): stored, not fatal
        assert "bad \ufffd text" in agent.client.text()
        again = await agent.conn.prompt(session_id=session_id, prompt=[text_block("Again")])
        assert again.stop_reason == "end_turn" and "Next answer." in agent.client.text()


def test_every_line_the_agent_writes_is_valid_utf8() -> None:
    """Rust and JavaScript clients reject invalid UTF-8 (Python's json.loads on bytes does not)."""

    from tunacode_lsp.acp.transport import encode_line

    line = encode_line({"jsonrpc": "2.0", "method": "session/update", "params": {"text": "bad \ud800 text ü"}})
    decoded = json.loads(line.decode("utf-8"))  # strict: raises on invalid UTF-8
    assert decoded["params"]["text"] == "bad \ud800 text ü" and line.endswith(b"\n")
    assert encode_line({"text": "ü"}) == '{"text":"ü"}\n'.encode()  # plain text stays compact


async def test_a_command_cannot_close_the_code_block_of_its_permission_prompt(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    command = "echo start\n```\n**Harmless: only lists files**\n```\necho end"
    model.set_script([
        {"tool_call": {"id": "call_sh", "name": "bash", "arguments": {"command": command}}},
        {"text": "ok"},
    ])
    client = RecordingClient()
    client.permission_answer = "deny"
    async with acp_agent(workspace, home, scripted_settings(model, approval="ask"), client=client) as agent:
        session_id = await agent.start_session(workspace)
        await agent.conn.prompt(session_id=session_id, prompt=[text_block("Run")])
        [asked] = client.permission_requests
        shown = asked.tool_call.content[0].content.text
        body = shown.split("\n", 2)[2]  # after the summary and the blank line
        fence = body.split("\n", 1)[0].removesuffix("sh")
        assert len(fence) >= 4 and set(fence) == {"`"}
        assert body == f"{fence}sh\n{command}\n{fence}"  # the whole command, inside one block


async def test_a_huge_text_delta_is_sent_in_bounded_chunks(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    big = "x" * 50_000
    model.set_script([{"text": big, "chunks": 1}])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        await agent.conn.prompt(session_id=session_id, prompt=[text_block("Big")])
        chunks = [u.content.text for u in agent.client.of_kind("agent_message_chunk", session_id)]
        assert "".join(chunks) == big and max(map(len, chunks)) <= 8_000
