"""How requests end when the client misbehaves or the connection ends (issue 12, bugs 3, 4,
6, 7, 11, 12), over raw bytes: a client that never answers, answers wrongly, answers late,
shuts the server down, closes stdin, or the server gets SIGTERM/SIGHUP mid-tool."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import time

import pytest
import pytest_asyncio

from tests.conftest import scripted_options
from tests.lsp.raw_wire_client import NO_ANSWER, RawClient

PROGRESS_CAPS = {"window": {"workDoneProgress": True}}
DONE = {"steps": [{"text": "Done."}]}


def _tool_script(command: str) -> dict:
    return {"steps": [{"text": "Running it."}, {"tool_call": {"name": "bash", "arguments": {"command": command}}}]}


SLOW_TOOL = _tool_script("echo $$ > ready; sleep 30; touch late")


@pytest_asyncio.fixture
async def raw(home, workspace):
    client = await RawClient.start(home, workspace)
    try:
        yield client
    finally:
        await client.close()


def _events(raw: RawClient, type_: str | None = None) -> list[dict]:
    return [m["params"] for m in raw.messages if m.get("method") == "tunacode/event" and (type_ is None or m["params"]["type"] == type_)]


def _stored(home, session_id: str) -> tuple[list[dict], int]:
    from tunacode_lsp.store.session_store import SessionStore

    store = SessionStore(home / "sessions.sqlite3")
    try:
        messages = store.load_messages(session_id)
    finally:
        store.close()
    with sqlite3.connect(home / "sessions.sqlite3") as conn:
        leases = conn.execute("SELECT count(*) FROM leases").fetchone()[0]
    return messages, leases


def _no_dangling_calls(messages: list[dict]) -> None:
    from tunacode_lsp.core.history import unanswered_tool_calls

    assert unanswered_tool_calls(messages) == []
    assert any(m.get("role") == "toolResult" or m.get("role") == "tool_result" for m in messages), messages


async def _start_tool(raw: RawClient, workspace, model, **options):
    """A request whose bash tool is running (its pid known)."""

    model.set_script([SLOW_TOOL, DONE])
    os.mkfifo(workspace / "ready")
    await raw.initialize(workspace, scripted_options(model, **{"shellSandbox": "off", **options}), PROGRESS_CAPS)
    raw.answers["window/workDoneProgress/create"] = lambda _p: None
    msg_id = raw.request("workspace/executeCommand", {"command": "tunacode.request", "arguments": [{"prompt": "run it"}], "workDoneToken": "client-tok"})
    pid = int(await asyncio.wait_for(asyncio.to_thread((workspace / "ready").read_text), 15))
    start = _events(raw, "request_start")[0]
    return msg_id, pid, start


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


# ---------------------------------------------------------------- bug 3


async def test_a_client_that_never_answers_progress_create_still_gets_its_answer(raw, workspace, model, home):
    """Bug: request_end came, the response never; the session lease stayed taken."""

    model.set_script([DONE, DONE])
    raw.answers["window/workDoneProgress/create"] = lambda _p: NO_ANSWER
    await raw.initialize(workspace, scripted_options(model), PROGRESS_CAPS)
    answer = await raw.command("tunacode.request", {"prompt": "hi"}, timeout=20)
    assert answer["result"]["stopReason"] == "end_turn"
    creates = [m for m in raw.messages if m.get("method") == "window/workDoneProgress/create"]
    assert creates
    cancels = {m["params"]["id"] for m in raw.messages if m.get("method") == "$/cancelRequest"}
    assert creates[0]["id"] in cancels, "the unanswered create was not withdrawn"
    sid = answer["result"]["sessionId"]
    _, leases = _stored(home, sid)
    assert leases == 0
    again = await raw.command("tunacode.request", {"prompt": "again", "sessionId": sid}, timeout=20)
    assert again["result"]["stopReason"] == "end_turn"


# ---------------------------------------------------------------- bugs 4 and 12


async def test_a_bare_string_approval_answer_is_a_denial_at_once(raw, workspace, model):
    """Bug: pygls dropped the answer "Allow" and the approval waited until requestTimeout."""

    model.set_script([_tool_script("touch ran"), DONE])
    raw.answers["window/showMessageRequest"] = lambda _p: "Allow"
    await raw.initialize(workspace, scripted_options(model, approval="ask"))
    started = time.monotonic()
    answer = await raw.command("tunacode.request", {"prompt": "run it"}, timeout=20)
    assert time.monotonic() - started < 10
    assert answer["result"]["stopReason"] == "end_turn"
    assert not (workspace / "ran").exists()
    assert answer["result"]["toolCalls"][0]["status"] == "failed"


async def test_an_open_approval_is_withdrawn_when_its_request_ends_and_a_late_answer_is_quiet(raw, workspace, model):
    model.set_script([_tool_script("touch ran"), DONE])
    raw.answers["window/showMessageRequest"] = lambda _p: NO_ANSWER
    await raw.initialize(workspace, scripted_options(model, approval="ask"))
    msg_id = raw.request("workspace/executeCommand", {"command": "tunacode.request", "arguments": [{"prompt": "run it"}]})
    prompt = await raw.wait_for(lambda m: m.get("method") == "window/showMessageRequest")
    abort = await raw.command("tunacode.abort", {"sessionId": _events(raw, "request_start")[0]["sessionId"]})
    assert abort["result"] == {"aborted": 1}
    answer = await raw.response(msg_id)
    assert answer["result"]["stopReason"] == "cancelled"
    await raw.wait_for(lambda m: m.get("method") == "$/cancelRequest" and m["params"]["id"] == prompt["id"])
    raw.send({"jsonrpc": "2.0", "id": prompt["id"], "result": {"title": "Allow"}})  # the user clicks late
    status = await raw.command("tunacode.status")
    assert status["result"]["activeRequests"] == []
    shown = [m for m in raw.messages if m.get("method") == "window/showMessage"]
    assert not [m for m in shown if "Error" in m["params"]["message"]], shown
    assert not (workspace / "ran").exists()


# ---------------------------------------------------------------- bug 11


async def test_shutdown_while_a_tool_runs_answers_the_request_first(raw, workspace, model, home):
    msg_id, pid, start = await _start_tool(raw, workspace, model)
    shutdown_id = raw.request("shutdown")
    answer = await raw.response(msg_id)
    shutdown = await raw.response(shutdown_id)
    assert answer["result"]["stopReason"] == "cancelled", answer
    assert shutdown.get("result", "missing") is None
    order = [m.get("id") for m in raw.messages if "method" not in m]
    assert order.index(msg_id) < order.index(shutdown_id)
    events = _events(raw)
    assert events[-1]["type"] == "request_end"
    ends = {m["params"]["token"] for m in raw.messages if m.get("method") == "$/progress" and m["params"]["value"]["kind"] == "end"}
    begins = {m["params"]["token"] for m in raw.messages if m.get("method") == "$/progress" and m["params"]["value"]["kind"] == "begin"}
    assert "client-tok" in begins and begins <= ends, (begins, ends)
    late = await raw.command("tunacode.status")
    assert late["error"]["code"] == -32600
    assert _gone(pid)
    raw.notify("exit")
    assert await raw.exit_code() == 0
    messages, leases = _stored(home, start["sessionId"])
    _no_dangling_calls(messages)
    assert leases == 0


# ---------------------------------------------------------------- bugs 6 and 7


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
async def test_a_stop_signal_while_a_tool_runs_settles_and_exits(raw, workspace, model, home, name):
    """Bug: the server died, the command ran on as an orphan, lease and dangling call stayed."""

    _, pid, start = await _start_tool(raw, workspace, model)
    sent = time.monotonic()
    raw.process.send_signal(getattr(signal, name))
    await raw.exit_code(timeout=5)
    assert time.monotonic() - sent < 2.0
    assert _gone(pid)
    assert not (workspace / "late").exists()
    messages, leases = _stored(home, start["sessionId"])
    _no_dangling_calls(messages)
    assert leases == 0


async def test_stdin_closed_while_a_tool_runs_settles_before_exit(raw, workspace, model, home):
    _, pid, start = await _start_tool(raw, workspace, model)
    raw.process.stdin.close()
    await raw.exit_code(timeout=5)
    assert _gone(pid)
    messages, leases = _stored(home, start["sessionId"])
    _no_dangling_calls(messages)
    assert leases == 0
