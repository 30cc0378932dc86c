"""MCP servers through the real server: a FastMCP server of the tests and a third-party one
from PyPI, tools under the same approvals and abort, trust for workspace files, faults."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import scripted_options

DEMO = str(Path(__file__).with_name("demo_server.py"))
DONE = {"steps": [{"text": "Done."}]}


def call(tool: str, args: dict) -> dict:
    return {"steps": [{"tool_call": {"name": tool, "arguments": args}}]}


def demo(notes: Path, **extra) -> dict:
    return {"command": sys.executable, "args": [DEMO], "env": {"NOTES_DIR": str(notes)}, **extra}


async def _status_until(lsp, predicate, timeout: float = 30.0) -> dict:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        status = await lsp.command("tunacode.status")
        if predicate(status["mcpServers"]):
            return status
        if loop.time() > deadline:
            raise AssertionError(f"MCP state not reached: {status['mcpServers']}")
        await asyncio.sleep(0.1)  # polling the server's status, bounded by the deadline


def _ready(name: str):
    return lambda servers: any(s["name"] == name and s["state"] == "ready" for s in servers)


def _tool_results(model, index: int = -1) -> list[str]:
    return [m["content"] for m in model.requests[index]["messages"] if m["role"] == "tool"]


async def test_tools_of_a_settings_server_run_with_approval_by_annotation(lsp, model, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    model.set_script([call("mcp__demo__echo", {"text": "hi"}), call("mcp__demo__write_note", {"name": "n.txt", "text": "x"}), DONE])
    lsp.approvals.answer = "Deny"
    await lsp.start(init_options=scripted_options(model, approval="ask", mcpServers={"demo": demo(notes)}))
    status = await _status_until(lsp, _ready("demo"))
    [server] = status["mcpServers"]
    assert server["tools"] == 6 and "error" not in server

    result = await lsp.command("tunacode.request", {"prompt": "use the tools"})
    assert result["stopReason"] == "end_turn"
    names = [t["function"]["name"] for t in model.requests[0]["tools"]]
    assert "mcp__demo__echo" in names and "read_file" in names
    assert _tool_results(model, 1)[0] == "echo: hi"  # read-only: no approval asked
    assert len(lsp.approvals.prompts) == 1  # the changing tool was asked about...
    prompt = lsp.approvals.prompts[0].message
    assert "demo" in prompt and "write_note" in prompt and '"text": "x"' in prompt  # with its full arguments
    assert "declined" in _tool_results(model, 2)[-1]  # ...and denied
    assert not (notes / "n.txt").exists()


async def test_abort_during_a_slow_mcp_call(lsp, model, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    model.set_script([call("mcp__demo__slow", {"seconds": 30}), DONE])
    await lsp.start(init_options=scripted_options(model, mcpServers={"demo": demo(notes)}))
    await _status_until(lsp, _ready("demo"))
    pending = lsp.send_command("tunacode.request", {"prompt": "sleep"})
    started = await lsp.wait_for_event(lambda e: e["type"] == "tool_call_update" and e["status"] == "in_progress")
    t0 = time.monotonic()
    await lsp.command("tunacode.abort", {"sessionId": started["sessionId"]})
    result = await asyncio.wait_for(pending, 5)
    assert result["stopReason"] == "cancelled" and time.monotonic() - t0 < 1.0
    # the server got notifications/cancelled (its tool saw the cancellation)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    while not (notes / "slow-cancelled").exists() and loop.time() < deadline:
        await asyncio.sleep(0.05)
    assert (notes / "slow-cancelled").exists()
    stored = await lsp.command("tunacode.session.get", {"sessionId": result["sessionId"]})
    calls = [b["id"] for m in stored["messages"] if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_call"]
    answered = [m["tool_call_id"] for m in stored["messages"] if m["role"] == "tool_result"]
    assert calls and set(calls) <= set(answered)  # the history stays valid


async def test_timeout_big_result_and_image(lsp, model, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    model.set_script([call("mcp__demo__slow", {"seconds": 10}), call("mcp__demo__big", {}), call("mcp__demo__picture", {}), DONE])
    await lsp.start(init_options=scripted_options(model, mcpToolTimeout=1, mcpServers={"demo": demo(notes)}))
    await _status_until(lsp, _ready("demo"))
    result = await lsp.command("tunacode.request", {"prompt": "go"})
    assert result["stopReason"] == "end_turn"
    assert "did not answer within 1 s" in _tool_results(model, 1)[-1]
    big = _tool_results(model, 2)[-1]
    assert "characters cut from the middle" in big and len(big) < 40_000
    assert _tool_results(model, 3)[-1]  # the image call answered


async def test_a_crashing_server_is_restarted_and_other_tools_go_on(lsp, model, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    model.set_script([call("mcp__demo__crash", {}), call("list_files", {}), DONE, call("mcp__demo__echo", {"text": "back"}), DONE])
    await lsp.start(init_options=scripted_options(model, mcpServers={"demo": demo(notes)}))
    await _status_until(lsp, _ready("demo"))
    result = await lsp.command("tunacode.request", {"prompt": "crash it"})
    assert result["stopReason"] == "end_turn"
    assert "failed during crash" in _tool_results(model, 1)[-1]
    await _status_until(lsp, _ready("demo"))  # restarted
    again = await lsp.command("tunacode.request", {"prompt": "echo", "sessionId": result["sessionId"]})
    assert again["stopReason"] == "end_turn" and _tool_results(model, -1)[-1] == "echo: back"


@pytest.mark.parametrize(
    ("entry", "expect"),
    [
        ({"command": "/nonexistent/mcp-server"}, "command not found"),
        ({"command": sys.executable, "args": ["-c", "import sys; sys.exit(1)"]}, ""),
        ({"command": sys.executable, "args": ["-c", "import time; time.sleep(600)"]}, "no answer within 2 s"),
    ],
)
async def test_servers_that_cannot_start_fail_clearly(lsp, model, entry, expect, monkeypatch):
    model.set_script([DONE])
    await lsp.start(init_options=scripted_options(model, mcpStartupTimeout=2, mcpServers={"bad": entry}))
    # a request does not wait for MCP servers and does not fail for them
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert result["stopReason"] == "end_turn"
    status = await _status_until(lsp, lambda s: s and s[0]["state"] == "failed" and s[0].get("error"), timeout=90)
    assert expect in status["mcpServers"][0]["error"]


async def test_workspace_file_needs_the_users_allowance(lsp, model, workspace, tmp_path, home):
    notes = tmp_path / "notes"
    notes.mkdir()
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"demo": demo(notes)}}))
    model.set_script([DONE])
    lsp.approvals.answer = "Deny"
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    await lsp.wait_for(lambda: len(lsp.approvals.prompts) >= 1)
    assert ".mcp.json" in lsp.approvals.prompts[0].message and "demo" in lsp.approvals.prompts[0].message
    status = await _status_until(lsp, lambda s: s and s[0]["state"] == "not_allowed")
    assert status["mcpServers"][0]["tools"] == 0
    await lsp.stop()

    # the answer is remembered: a new server does not ask again
    from tests.lsp.harness import LspHarness

    again = LspHarness(workspace, home)
    again.approvals.answer = "Allow"
    await again.start(init_options=scripted_options(model, approval="ask"))
    status = await _status_until(again, lambda s: s and s[0]["state"] == "not_allowed")
    assert again.approvals.prompts == []
    await again.stop()


async def test_workspace_file_allowed_then_runs_whatever_the_approval(lsp, model, workspace, tmp_path, home):
    """Consent is to the definition, not to tool calls: once given, read-only starts it too."""

    notes = tmp_path / "notes"
    notes.mkdir()
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"demo": demo(notes)}}))
    model.set_script([DONE])
    lsp.approvals.answer = "Allow"
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    await _status_until(lsp, _ready("demo"))
    await lsp.stop()

    from tests.lsp.harness import LspHarness

    ro = LspHarness(workspace, home)
    await ro.start(init_options=scripted_options(model, approval="read-only"))
    await _status_until(ro, _ready("demo"))
    assert ro.approvals.prompts == []
    await ro.stop()


async def test_settings_change_adds_and_removes_servers(lsp, model, tmp_path):
    from lsprotocol import types

    notes = tmp_path / "notes"
    notes.mkdir()
    model.set_script([DONE])
    caps = types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(configuration=True))
    client = await lsp.start(init_options=scripted_options(model), capabilities=caps, configuration={})
    assert (await lsp.command("tunacode.status"))["mcpServers"] == []
    client.set_configuration(section="tunacode", item={"mcpServers": {"demo": demo(notes)}})
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await _status_until(lsp, _ready("demo"))
    client.set_configuration(section="tunacode", item={"mcpServers": {}})
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await _status_until(lsp, lambda s: s == [])


async def test_third_party_server_from_pypi(lsp, model):
    """mcp-server-time, run as its users run it."""

    exe = shutil.which("mcp-server-time", path=os.path.dirname(sys.executable))
    assert exe, "mcp-server-time is installed with the test extras"
    model.set_script([call("mcp__time__get_current_time", {"timezone": "UTC"}), DONE])
    await lsp.start(init_options=scripted_options(model, mcpServers={"time": {"command": exe, "args": ["--local-timezone", "UTC"]}}))
    await _status_until(lsp, _ready("time"))
    result = await lsp.command("tunacode.request", {"prompt": "what time is it?"})
    assert result["stopReason"] == "end_turn"
    assert '"timezone": "UTC"' in _tool_results(model, 1)[-1]


def _mcp_processes(*, guards: bool = True) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if DEMO.encode() in cmdline and (guards or b"process_guard" not in cmdline):
                pids.append(int(entry.name))
    return pids


async def test_no_mcp_process_outlives_the_server(model, workspace, home, tmp_path):
    from tests.lsp.harness import LspHarness

    notes = tmp_path / "notes"
    notes.mkdir()
    model.set_script([DONE])
    before = set(_mcp_processes())
    lsp = LspHarness(workspace, home)
    await lsp.start(init_options=scripted_options(model, mcpServers={"demo": demo(notes), "demo2": demo(notes)}))
    await _status_until(lsp, lambda s: len(s) == 2 and all(x["state"] == "ready" for x in s))
    assert len(set(_mcp_processes(guards=False)) - before) == 2  # each under its guard (gone too, below)
    await lsp.stop()  # shutdown + exit
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while set(_mcp_processes()) - before and loop.time() < deadline:
        await asyncio.sleep(0.05)
    assert set(_mcp_processes()) - before == set()


async def test_a_cut_mcp_result_is_kept_whole_and_read_file_reads_it(lsp, model, tmp_path, home):
    """Issue 34: an MCP result cut for the model is kept whole like bash's, in the session's
    outputs folder, and read_file reads it by the path the cut result names."""

    import re

    notes = tmp_path / "notes"
    notes.mkdir()
    model.set_script([call("mcp__demo__big", {}), DONE])
    await lsp.start(init_options=scripted_options(model, mcpServers={"demo": demo(notes)}))
    await _status_until(lsp, _ready("demo"))
    first = await lsp.command("tunacode.request", {"prompt": "go"})
    big = _tool_results(model, 1)[-1]
    assert "characters cut from the middle" in big and len(big) < 40_000
    found = re.search(r"is kept in (\S+): read it with read_file", big)
    assert found, big[-400:]
    kept = Path(found.group(1))
    assert kept.parent == home / "outputs" / first["sessionId"]
    assert kept.name.startswith("mcp-demo-big-") and kept.read_text() == "x" * 2_000_000
    model.set_script([call("read_file", {"filepath": str(kept), "offset": 0, "limit": 1}), DONE])
    await lsp.command("tunacode.request", {"prompt": "read it", "sessionId": first["sessionId"]})
    assert "xxxxxxxx" in _tool_results(model, 1)[-1]
