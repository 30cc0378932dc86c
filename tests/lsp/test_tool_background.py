"""Background processes through the real server (issue 34): bash {background: true} returns a
processId at once; process_output and process_kill follow it; approval as for any command;
listed in tunacode.status; ended on session delete and when the server exits; abortable wait."""

from __future__ import annotations

import asyncio
import os

from tests.conftest import scripted_options

DONE = {"steps": [{"text": "Done."}]}


def call(tool: str, args: dict) -> dict:
    return {"steps": [{"tool_call": {"name": tool, "arguments": args}}]}


def _tool_messages(model, index=-1):
    return [m["content"] for m in model.requests[index]["messages"] if m["role"] == "tool"]


def _alive(seconds: int) -> bool:
    """A live `sleep <seconds>` (the pid inside the sandbox's namespace means nothing outside)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if handle.read() != f"sleep\0{seconds}\0".encode():
                    continue
            with open(f"/proc/{entry}/stat") as handle:
                if handle.read().split(") ", 1)[1][0] != "Z":
                    return True
        except OSError:
            continue
    return False


async def _until_gone(seconds: int, timeout: float = 10) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if not _alive(seconds):
            return True
        await asyncio.sleep(0.05)  # polling a process table: there is no event to wait for
    return False


def serve(seconds: int) -> str:
    return f"echo ready; exec sleep {seconds}"


async def test_start_read_list_kill(lsp, model, workspace):
    model.set_script([
        call("bash", {"command": serve(3401), "background": True}),
        call("process_output", {"processId": "p1", "wait": 10}),
        DONE,
    ])
    await lsp.start(init_options=scripted_options(model))
    first = await asyncio.wait_for(lsp.command("tunacode.request", {"prompt": "serve"}), 30)
    assert first["toolCalls"][0]["status"] == "completed"
    assert "Started in the background as p1" in _tool_messages(model, 1)[-1]
    assert "ready" in _tool_messages(model, 2)[-1] and "p1 is running" in _tool_messages(model, 2)[-1]
    assert _alive(3401)
    status = await lsp.command("tunacode.status")
    [listed] = status["backgroundProcesses"]
    assert listed["processId"] == "p1" and listed["running"] is True and listed["sessionId"] == first["sessionId"]

    model.set_script([call("process_kill", {"processId": "p1"}), call("process_output", {"processId": "p9"}), DONE])
    await lsp.command("tunacode.request", {"prompt": "stop", "sessionId": first["sessionId"]})
    assert "Killed p1" in _tool_messages(model, -2)[-1] and "exited with code -9" in _tool_messages(model, -2)[-1]
    assert "No background process 'p9'" in _tool_messages(model)[-1]
    assert await _until_gone(3401)
    [listed] = (await lsp.command("tunacode.status"))["backgroundProcesses"]
    assert listed["running"] is False and listed["exitCode"] == -9


async def test_denied_background_command_starts_nothing(lsp, model, workspace):
    model.set_script([call("bash", {"command": "touch ran; sleep 300", "background": True}), DONE])
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    lsp.approvals.answer = "Deny"
    result = await lsp.command("tunacode.request", {"prompt": "serve"})
    assert result["toolCalls"][0]["status"] == "failed" and len(lsp.approvals.prompts) == 1
    assert "touch ran" in lsp.approvals.prompts[0].message
    assert "in the background, until stopped" in lsp.approvals.prompts[0].message
    assert not (workspace / "ran").exists()
    assert (await lsp.command("tunacode.status"))["backgroundProcesses"] == []


async def test_session_delete_and_server_exit_end_them(lsp, model, workspace):
    model.set_script([call("bash", {"command": serve(3402), "background": True}), call("process_output", {"processId": "p1", "wait": 10}), DONE,
                      call("bash", {"command": serve(3403), "background": True}), call("process_output", {"processId": "p2", "wait": 10}), DONE])
    await lsp.start(init_options=scripted_options(model))
    first = await lsp.command("tunacode.request", {"prompt": "serve"})
    second = await lsp.command("tunacode.request", {"prompt": "serve again"})
    await lsp.wait_for(lambda: _alive(3402) and _alive(3403))
    await lsp.command("tunacode.session.delete", {"sessionId": first["sessionId"]})
    assert await _until_gone(3402)
    assert _alive(3403)
    assert [p["sessionId"] for p in (await lsp.command("tunacode.status"))["backgroundProcesses"]] == [second["sessionId"]]
    await lsp.stop()
    assert await _until_gone(3403)


async def test_a_waiting_process_output_is_aborted_at_once(lsp, model, workspace):
    model.set_script([call("bash", {"command": "exec sleep 3404", "background": True}),
                      call("process_output", {"processId": "p1", "wait": 60}), DONE])
    await lsp.start(init_options=scripted_options(model))
    pending = lsp.send_command("tunacode.request", {"prompt": "wait"})
    event = await lsp.wait_for_event(lambda e: e.get("name") == "process_output" and e.get("status") == "in_progress")
    started = asyncio.get_running_loop().time()
    await lsp.command("tunacode.abort", {"requestId": event["requestId"]})
    result = await asyncio.wait_for(pending, 10)
    assert result["stopReason"] == "cancelled"
    assert asyncio.get_running_loop().time() - started < 5
    # the process itself outlives the request: it belongs to the session
    assert (await lsp.command("tunacode.status"))["backgroundProcesses"][0]["running"] is True
