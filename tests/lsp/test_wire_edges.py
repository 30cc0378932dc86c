"""Wire edge cases seen through a validating proxy (issue 32, item 10), over raw bytes:
`exit` in the middle of a request, a message over the size limit, and `exit` after a
refused early `shutdown`."""

from __future__ import annotations

import asyncio
import json
import os

import pytest_asyncio

from tests.conftest import scripted_options
from tests.lsp.raw_wire_client import RawClient

PROGRESS_CAPS = {"window": {"workDoneProgress": True, "showMessage": {}}}
SLOW_TOOL = {"steps": [{"text": "Running it."}, {"tool_call": {"name": "bash", "arguments": {"command": "echo $$ > ready; sleep 30"}}}]}


@pytest_asyncio.fixture
async def raw(home, workspace):
    client = await RawClient.start(home, workspace)
    try:
        yield client
    finally:
        await client.close()


def _progress(raw: RawClient, kind: str) -> set:
    return {m["params"]["token"] for m in raw.messages if m.get("method") == "$/progress" and m["params"]["value"]["kind"] == kind}


async def test_exit_in_the_middle_of_a_request_ends_every_open_progress_first(raw, workspace, model):
    """Bug: `exit` while a tool ran left the request's progress tokens open (spinners forever)."""

    model.set_script([SLOW_TOOL, {"steps": [{"text": "Done."}]}])
    os.mkfifo(workspace / "ready")
    await raw.initialize(workspace, scripted_options(model, shellSandbox="off"), PROGRESS_CAPS)
    raw.answers["window/workDoneProgress/create"] = lambda _p: None
    raw.request("workspace/executeCommand", {"command": "tunacode.request", "arguments": [{"prompt": "run it"}], "workDoneToken": "client-tok"})
    await asyncio.wait_for(asyncio.to_thread((workspace / "ready").read_text), 15)
    await raw.wait_for(lambda m: m.get("method") == "$/progress" and m["params"]["token"] != "client-tok"
                       and m["params"]["value"]["kind"] == "begin")  # the tool's own progress is open too
    raw.notify("exit")
    assert await raw.exit_code(timeout=5) == 1
    await raw.read_to_end(5)  # stdout closed: every message read
    begins, ends = _progress(raw, "begin"), _progress(raw, "end")
    assert "client-tok" in begins and len(begins) >= 2
    assert begins <= ends, (begins, ends)


async def test_a_message_over_the_size_limit_is_answered_with_an_error_and_the_server_lives_on(raw, workspace):
    """Bug: a 100 MB workspace/executeCommand was dropped unanswered; the client waited forever."""

    from tunacode_lsp.lsp.framing import MAX_BODY

    await raw.initialize(workspace)
    body = json.dumps({"jsonrpc": "2.0", "id": "big", "method": "workspace/executeCommand",
                       "params": {"command": "tunacode.status", "arguments": [{"x": "a" * (100 * 1024 * 1024)}]}}).encode()
    raw.write(b"Content-Length: %d\r\n\r\n" % len(body))
    for start in range(0, len(body), 4 * 1024 * 1024):
        raw.write(body[start:start + 4 * 1024 * 1024])
        await raw.process.stdin.drain()
    del body
    answer = await raw.response("big", timeout=30)
    assert answer["error"]["code"] == -32600
    assert str(MAX_BODY) in answer["error"]["message"] and "too large" in answer["error"]["message"]
    status = await raw.command("tunacode.status", timeout=10)
    assert "result" in status


async def test_a_huge_message_with_its_id_last_is_answered_with_that_id(raw, workspace):
    await raw.initialize(workspace)
    body = b'{"jsonrpc":"2.0","params":{"command":"tunacode.status","arguments":[{"id":"inner","x":"' + b"b" * (70 * 1024 * 1024) + b'"}]},"id":42,"method":"workspace/executeCommand"}'
    raw.write(b"Content-Length: %d\r\n\r\n" % len(body))
    for start in range(0, len(body), 4 * 1024 * 1024):
        raw.write(body[start:start + 4 * 1024 * 1024])
        await raw.process.stdin.drain()
    answer = await raw.response(42, timeout=30)
    assert answer["error"]["code"] == -32600
    assert "result" in await raw.command("tunacode.status", timeout=10)


async def test_exit_after_a_refused_early_shutdown_exits_1(raw, workspace):
    """Bug: `shutdown` before `initialize` was refused (-32002), yet the later `exit` ended 0."""

    refused = await raw.call("shutdown")
    assert refused["error"]["code"] == -32002
    raw.notify("exit")
    assert await raw.exit_code(timeout=5) == 1
