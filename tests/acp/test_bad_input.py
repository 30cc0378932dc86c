"""A broken or hostile ACP client: clear JSON-RPC errors, and the process lives."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from acp import RequestError, text_block

from tests.acp.harness import Agent, acp_agent, scripted_settings, server_env
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer


async def _errors_with_id(agent: Agent, msg_id: object, count: int = 1) -> list[dict]:
    def matching() -> list[dict]:
        return [m for m in agent.client.incoming if "error" in m and m.get("id") == msg_id]

    await agent.client.wait_for(lambda: len(matching()) >= count)
    return matching()


async def _alive(agent: Agent, workspace: Path) -> None:
    assert (await agent.conn.new_session(cwd=str(workspace))).session_id
    assert agent.process.returncode is None


async def test_malformed_lines_are_answered_and_the_process_lives(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        await agent.conn.initialize(protocol_version=1)
        agent.write_raw(b'{"jsonrpc": "2.0", "id": 7, "method": \n')  # cut JSON
        [parse] = await _errors_with_id(agent, None)
        assert parse["error"]["code"] == -32700
        agent.write_raw(b"[1, 2, 3]\n")
        agent.write_raw(b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "session/new", "params": {}}\n')
        agent.write_raw(b'{"jsonrpc": "2.0", "id": 8, "method": 42}\n')
        errors = await _errors_with_id(agent, None, 3)
        assert [e["error"]["code"] for e in errors[1:]] == [-32600, -32600]
        [bad_method] = await _errors_with_id(agent, 8)
        assert bad_method["error"]["code"] == -32600
        agent.write_raw(b"\xff\xfe not utf-8\n")
        assert len(await _errors_with_id(agent, None, 4)) == 4
        await _alive(agent, workspace)


async def test_unknown_method_and_bad_params(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        await agent.conn.initialize(protocol_version=1)
        with pytest.raises(RequestError) as unknown:
            await agent.raw_request("session/teleport", {"sessionId": "x"})
        assert unknown.value.code == -32601
        with pytest.raises(RequestError) as bad:
            await agent.raw_request("session/new", {"cwd": 5})
        assert bad.value.code == -32602
        with pytest.raises(RequestError) as relative:
            await agent.conn.new_session(cwd="relative/path")
        assert relative.value.code == -32602
        with pytest.raises(RequestError) as missing:
            await agent.conn.new_session(cwd=str(workspace / "missing"))
        assert missing.value.code == -32602
        await _alive(agent, workspace)


async def test_prompt_to_an_unknown_session(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        await agent.conn.initialize(protocol_version=1)
        with pytest.raises(RequestError) as unknown:
            await agent.conn.prompt(session_id="no-such-session", prompt=[text_block("hi")])
        assert unknown.value.code == -32002
        with pytest.raises(RequestError) as load:
            await agent.conn.load_session(cwd=str(workspace), session_id="no-such-session")
        assert load.value.code == -32002
        assert model.requests == []  # the model was never called
        await _alive(agent, workspace)


async def test_a_second_prompt_on_a_busy_session_is_refused(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    model.set_script([{"steps": [{"text": "Busy", "chunks": 1}, {"stall": 30}]}])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        first = asyncio.ensure_future(agent.conn.prompt(session_id=session_id, prompt=[text_block("One")]))
        await agent.client.wait_for(lambda: "Busy" in agent.client.text(session_id=session_id))
        with pytest.raises(RequestError) as busy:
            await agent.conn.prompt(session_id=session_id, prompt=[text_block("Two")])
        assert busy.value.code == -32600 and busy.value.data["busy"] is True
        await agent.conn.cancel(session_id=session_id)
        assert (await asyncio.wait_for(first, 5)).stop_reason == "cancelled"
        assert len(model.requests) == 1


async def test_unsupported_prompt_blocks_are_invalid_params(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        audio = {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
        with pytest.raises(RequestError) as refused:
            await agent.raw_request("session/prompt", {"sessionId": session_id, "prompt": [audio]})
        assert refused.value.code == -32602
        with pytest.raises(RequestError) as empty:
            await agent.conn.prompt(session_id=session_id, prompt=[text_block("   ")])
        assert empty.value.code == -32602
        assert model.requests == []
        await _alive(agent, workspace)


async def test_requests_read_before_the_end_of_stdin_are_answered(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    """A scripted client (`printf ... | tunacode-lsp acp`) gets every answer, then the process exits 0."""

    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        "not json",
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}},
        {"jsonrpc": "2.0", "id": 3, "method": "nope", "params": {}},
    ]
    data = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines).encode()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tunacode_lsp", "acp", "--settings", json.dumps(scripted_settings(model)),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        env=server_env(home), cwd=workspace,
    )
    out, _ = await asyncio.wait_for(process.communicate(data), 30)
    answers = [json.loads(line) for line in out.decode().splitlines()]
    by_id = {a["id"]: a for a in answers}
    assert by_id[1]["result"]["protocolVersion"] == 1
    assert by_id[2]["result"]["sessionId"]
    assert by_id[3]["error"]["code"] == -32601
    assert by_id[None]["error"]["code"] == -32700
    assert process.returncode == 0
