"""The request lifecycle under any timing: a request is registered and its session reserved
the moment its handler starts, so a second request cannot slip in and an abort that arrives
while it is still starting stops it before the model is called."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types

from tests.conftest import scripted_options

DONE = {"steps": [{"text": "Done."}]}
WORKSPACE_CONFIG_CAPS = types.ClientCapabilities(
    workspace=types.WorkspaceClientCapabilities(configuration=True),
    window=types.WindowClientCapabilities(work_done_progress=True),
)


async def _error_code(awaitable) -> int | None:
    with pytest.raises(Exception) as info:
        await awaitable
    return getattr(info.value, "code", None)


async def test_two_requests_on_one_session_in_the_same_instant(lsp, model):
    """Bug: both ran and the stored history became user, user, assistant, assistant."""

    model.set_script([DONE, DONE, DONE])
    await lsp.start(init_options=scripted_options(model))
    session = await lsp.command("tunacode.session.new", {})
    sid = session["sessionId"]

    first = lsp.send_command("tunacode.request", {"prompt": "one", "sessionId": sid})
    second = lsp.send_command("tunacode.request", {"prompt": "two", "sessionId": sid})
    outcomes = await asyncio.gather(first, second, return_exceptions=True)

    answered = [o for o in outcomes if isinstance(o, dict)]
    refused = [o for o in outcomes if isinstance(o, Exception)]
    assert len(answered) == 1 and answered[0]["stopReason"] == "end_turn"
    assert len(refused) == 1 and getattr(refused[0], "code", None) == -32002
    got = await lsp.command("tunacode.session.get", {"sessionId": sid})
    assert [m["role"] for m in got["messages"]] == ["user", "assistant"]
    assert len(model.requests) == 1


def _stored_session(home, workspace) -> str:
    """A session already in the store (made before the server starts, in the real file)."""

    from tunacode_lsp.store.session_store import SessionStore

    store = SessionStore(home / "sessions.sqlite3")
    try:
        return store.create_session(cwd=str(workspace), model="openai-compatible:scripted").session_id
    finally:
        store.close()


async def _start_with_settings_held(lsp, model):
    """The server asks workspace/configuration after `initialized`; the client holds the
    answer, so every command waits in its handler (bounded by the server: 5 s)."""

    model.set_script([DONE, DONE])
    lsp.configuration.block = asyncio.Event()
    client = await lsp.start(init_options=scripted_options(model), capabilities=WORKSPACE_CONFIG_CAPS, configuration={})
    await lsp.wait_for(lambda: lsp.configuration.asked >= 1)
    return client


async def test_abort_while_the_request_is_starting(lsp, model, home, workspace):
    """Bug: an abort that arrived while the request was starting was answered
    {aborted: 0} and the request went on to call the model."""

    sid = _stored_session(home, workspace)
    await _start_with_settings_held(lsp, model)
    pending = lsp.send_command("tunacode.request", {"prompt": "hello", "sessionId": sid})
    abort = lsp.send_command("tunacode.abort", {"sessionId": sid})
    lsp.configuration.block.set()  # both handlers go on, the request first
    assert await asyncio.wait_for(abort, 10) == {"aborted": 1}
    result = await asyncio.wait_for(pending, 10)
    assert result["stopReason"] == "cancelled"
    assert model.requests == [], "the model was called for an aborted request"
    events = lsp.events_of(result["requestId"])
    assert events and events[-1]["type"] == "request_end"
    assert (await lsp.command("tunacode.status"))["activeRequests"] == []


async def test_cancel_request_while_the_request_is_starting(lsp, model, home, workspace):
    sid = _stored_session(home, workspace)
    client = await _start_with_settings_held(lsp, model)
    params = types.ExecuteCommandParams(command="tunacode.request", arguments=[{"prompt": "hi", "sessionId": sid}])
    future = asyncio.ensure_future(
        client.protocol.send_request_async("workspace/executeCommand", params, msg_id="starting-1")
    )
    status = lsp.send_command("tunacode.status")  # queued behind the request, same wait
    client.protocol.notify("$/cancelRequest", types.CancelParams(id="starting-1"))
    await asyncio.wait_for(status, 10)  # the cancel notification has been handled by now
    lsp.configuration.block.set()
    assert await _error_code(asyncio.wait_for(future, 10)) == -32800
    assert model.requests == [], "the model was called for a cancelled request"
    assert (await lsp.command("tunacode.status"))["activeRequests"] == []
    # the session is free again
    again = await lsp.command("tunacode.request", {"prompt": "again", "sessionId": sid})
    assert again["stopReason"] == "end_turn"


async def test_a_client_that_never_answers_progress_create(lsp, model, home, workspace):
    """Bug: request_end came but never the response, and the session's lease was never
    released (another server got "busy" for ever)."""

    never = asyncio.Event()

    async def hang(params):
        await never.wait()

    lsp.client_handlers[types.WINDOW_WORK_DONE_PROGRESS_CREATE] = hang
    model.set_script([DONE, DONE])
    caps = types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True))
    await lsp.start(init_options=scripted_options(model), capabilities=caps)
    result = await asyncio.wait_for(lsp.command("tunacode.request", {"prompt": "hi"}), 20)
    assert result["stopReason"] == "end_turn"
    assert lsp.events_of(result["requestId"])[-1]["type"] == "request_end"
    never.set()

    from tests.lsp.harness import LspHarness

    other = LspHarness(workspace, home)  # a second server on the same store
    try:
        await other.start(init_options=scripted_options(model))
        again = await asyncio.wait_for(other.command("tunacode.request", {"prompt": "me", "sessionId": result["sessionId"]}), 20)
        assert again["stopReason"] == "end_turn"
    finally:
        await other.stop()


LOCK_HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("ROLLBACK")
print("released", flush=True)
"""


async def test_a_finished_answer_survives_a_long_database_lock(lsp, model, home):
    """Bug: another process holding the database locked past the busy timeout made a finished
    answer disappear ("internal error: database is locked")."""

    import sys

    model.set_script([{"steps": [{"text": "slow answer " * 10, "chunks": 10, "delay": 0.2}]}])
    await lsp.start(init_options=scripted_options(model))
    pending = lsp.send_command("tunacode.request", {"prompt": "take your time"})
    await lsp.wait_for_event(lambda e: e["type"] == "text_delta")
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-c", LOCK_HOLDER, str(home / "sessions.sqlite3"), "7",
        stdout=asyncio.subprocess.PIPE,
    )
    assert (await asyncio.wait_for(holder.stdout.readline(), 10)).strip() == b"locked"
    result = await asyncio.wait_for(pending, 40)
    await holder.wait()
    assert result["stopReason"] == "end_turn", result.get("error")
    got = await lsp.command("tunacode.session.get", {"sessionId": result["sessionId"]})
    assert [m["role"] for m in got["messages"]] == ["user", "assistant"]
    assert got["messages"][1]["content"][0]["text"].startswith("slow answer")


async def test_lifecycle_rules_of_the_base_protocol(home, workspace):
    """Bugs: before initialize, requests were served; a second initialize was accepted;
    exit without shutdown exited 0, and slowly; didChangeConfiguration before initialize raised."""

    from tests.lsp.raw_client import RawServer

    server = await RawServer.start(home, workspace)
    try:
        server.notify("workspace/didChangeConfiguration", {"settings": {}})
        server.request("early", "workspace/executeCommand", {"command": "tunacode.status", "arguments": [{}]})
        early = await server.answer_to("early")
        assert early["error"]["code"] == -32002
        assert len(server.messages) == 1  # nothing else was sent
        await server.initialize(workspace)
        server.request(2, "initialize", {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}})
        again = await server.answer_to(2)
        assert again["error"]["code"] == -32600 and "already" in again["error"]["message"]
        loop = asyncio.get_running_loop()
        server.notify("exit")
        started = loop.time()
        code = await asyncio.wait_for(server.proc.wait(), 5)
        assert code == 1  # exit without shutdown
        assert loop.time() - started < 0.5
    finally:
        await server.close()


async def test_shutdown_while_a_request_runs(home, workspace, model):
    """Bug: the request got pygls's generic -32800, no request_end, and a history with neither
    [INTERRUPTED] nor a tool result; requests after shutdown got silence."""

    from tests.lsp.raw_client import RawServer

    model.set_script([{"steps": [{"text": "word " * 50, "chunks": 50, "delay": 0.1}]}, DONE])
    server = await RawServer.start(home, workspace)
    try:
        await server.initialize(workspace, scripted_options(model))
        server.request("req", "workspace/executeCommand", {"command": "tunacode.request", "arguments": [{"prompt": "talk"}]})
        while not any(m.get("method") == "tunacode/event" and m["params"]["type"] == "text_delta" for m in server.messages):
            await server.read()
        server.request("bye", "shutdown")
        answer = await server.answer_to("req")
        assert answer["result"]["stopReason"] == "cancelled"
        events = [m["params"] for m in server.messages if m.get("method") == "tunacode/event"]
        assert events[-1]["type"] == "request_end"
        assert "error" not in await server.answer_to("bye")
        server.request("late", "workspace/executeCommand", {"command": "tunacode.status", "arguments": [{}]})
        late = await server.answer_to("late")
        assert late["error"]["code"] == -32600
        server.notify("exit")
        assert await asyncio.wait_for(server.proc.wait(), 5) == 0
    finally:
        await server.close()

    from tunacode_lsp.store.session_store import SessionStore

    store = SessionStore(home / "sessions.sqlite3")
    try:
        session_id = answer["result"]["sessionId"]
        messages = store.load_messages(session_id)
        assert [m["role"] for m in messages] == ["user", "assistant"]
        assert messages[1]["content"][0]["text"].rstrip().endswith("[INTERRUPTED]")
    finally:
        store.close()


@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "stdin closed"])
async def test_a_signal_or_a_closed_connection_while_a_tool_runs(home, workspace, model, how):
    """Bugs: the server died and the command kept running as an orphan, the lease and a
    dangling tool call stayed in the store."""

    import signal as signals

    from tests.lsp.raw_client import RawServer
    from tunacode_lsp.store.session_store import SessionStore

    tag = f"tunacode-orphan-{abs(hash(how))}"
    command = f"echo started > started; exec -a {tag} sleep 300"
    model.set_script([{"steps": [{"tool_call": {"name": "bash", "arguments": {"command": f"bash -c '{command}'"}}}]}, DONE])
    server = await RawServer.start(home, workspace)
    try:
        await server.initialize(workspace, scripted_options(model, shellSandbox="off"))
        server.request("req", "workspace/executeCommand", {"command": "tunacode.request", "arguments": [{"prompt": "run"}]})
        while not any(m.get("method") == "tunacode/event" and m["params"].get("status") == "in_progress" for m in server.messages):
            await server.read()
        session_id = next(m["params"]["sessionId"] for m in server.messages if m.get("method") == "tunacode/event")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while not (workspace / "started").exists() and loop.time() < deadline:
            await asyncio.sleep(0.02)  # the command is running (a bounded poll of the file it writes)
        assert (workspace / "started").exists()
        started = loop.time()
        if how == "stdin closed":
            server.proc.stdin.close()
        else:
            server.proc.send_signal(getattr(signals, how))
        await asyncio.wait_for(server.proc.wait(), 5)
        assert loop.time() - started < 2.5
    finally:
        await server.close()
    assert not _pids_named(tag), "the command outlived the server"
    store = SessionStore(home / "sessions.sqlite3")
    try:
        messages = store.load_messages(session_id)
        calls = [b["id"] for m in messages if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_call"]
        answered = [m["tool_call_id"] for m in messages if m["role"] == "tool_result"]
        assert calls and set(calls) <= set(answered), "a tool call was left dangling"
        import sqlite3

        with sqlite3.connect(home / "sessions.sqlite3") as conn:  # the lease was released, not left to go stale
            assert conn.execute("SELECT count(*) FROM leases WHERE session_id = ?", (session_id,)).fetchone()[0] == 0
    finally:
        store.close()


def _pids_named(tag: str) -> list[int]:
    import os

    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if handle.read().split(b"\0")[0] == tag.encode():
                        found.append(int(entry))
            except OSError:
                continue
    return found
