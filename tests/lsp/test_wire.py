"""Framing, JSON-RPC 2.0 and the LSP lifecycle over raw bytes (issue 12, bugs 13 and 14).

Each test writes bytes a broken or hostile client could send and checks the server stays
responsive, answers per JSON-RPC 2.0, never sends a traceback, and exits as LSP says."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import pytest_asyncio

from tests.lsp.raw_wire_client import RawClient, frame


@pytest_asyncio.fixture
async def raw(home, workspace):
    client = await RawClient.start(home, workspace)
    try:
        yield client
    finally:
        await client.close()


async def _still_answers(raw: RawClient) -> None:
    answer = await raw.command("tunacode.status", timeout=10)
    assert "result" in answer and answer["result"]["protocolVersion"]


def _no_traceback(raw: RawClient) -> None:
    wire = json.dumps(raw.messages)
    assert "Traceback" not in wire and 'File \\"' not in wire


@pytest.mark.parametrize(
    "broken",
    [
        pytest.param(b"Content-Length: abc\r\n\r\n{}", id="length-not-a-number"),
        pytest.param(b'content-length: 2\r\n\r\n{}', id="lower-case-name"),
        pytest.param(b'Content-Length: 40\n\n{"jsonrpc":"2.0","method":"x/unknown"}  ', id="bare-LF"),
        pytest.param(b'Content-Length: 30\r\n\r\n{"jsonrpc":"2.0","id":77,"method":"shutdown"}', id="length-short"),
        pytest.param(b'Content-Length:  2\r\n\r\n{}', id="two-spaces"),
        pytest.param(b"x" * (3 * 1024 * 1024) + b"\r\n", id="huge-line"),
    ],
)
async def test_malformed_framing_does_not_leave_the_server_deaf(raw, workspace, broken):
    """Bug: one malformed header left the server deaf for good, even to shutdown and exit."""

    await raw.initialize(workspace)
    raw.write(broken)
    await _still_answers(raw)
    _no_traceback(raw)


async def test_a_70_mb_line_without_newline_does_not_crash_it(raw, workspace):
    await raw.initialize(workspace)
    chunk = b"y" * (1024 * 1024)
    for _ in range(70):
        raw.write(chunk)
        await raw.process.stdin.drain()
    raw.write(b"\r\n\r\n")
    await _still_answers(raw)
    assert raw.process.returncode is None


async def test_lower_case_header_is_read(raw, workspace):
    await raw.initialize(workspace)
    body = json.dumps({"jsonrpc": "2.0", "id": "lc", "method": "workspace/executeCommand",
                       "params": {"command": "tunacode.status", "arguments": [{}]}}).encode()
    raw.write(b"content-length: %d\n\n%s" % (len(body), body))
    answer = await raw.response("lc", timeout=10)
    assert "result" in answer


async def test_non_json_body_is_a_parse_error(raw, workspace):
    await raw.initialize(workspace)
    raw.write(frame(b"{not json"))
    error = await raw.wait_for(lambda m: m.get("error", {}).get("code") == -32700, timeout=10)
    assert error["id"] is None
    await _still_answers(raw)


async def test_message_without_jsonrpc_version_is_invalid_request(raw, workspace):
    await raw.initialize(workspace)
    raw.send({"id": 5, "method": "workspace/executeCommand", "params": {"command": "tunacode.status", "arguments": [{}]}})
    answer = await raw.response(5, timeout=10)
    assert answer["error"]["code"] == -32600


async def test_object_as_id_is_invalid_request_without_traceback(raw, workspace):
    await raw.initialize(workspace)
    raw.send({"jsonrpc": "2.0", "id": {"a": 1}, "method": "workspace/executeCommand",
              "params": {"command": "tunacode.status", "arguments": [{}]}})
    error = await raw.wait_for(lambda m: "error" in m, timeout=10)
    assert error["error"]["code"] == -32600 and error["id"] is None
    assert "data" not in error["error"] or not error["error"]["data"]
    _no_traceback(raw)
    await _still_answers(raw)


async def test_exit_without_shutdown_exits_1_quickly(raw, workspace):
    await raw.initialize(workspace)
    await _still_answers(raw)
    raw.notify("exit")
    sent = time.monotonic()
    code = await raw.exit_code()
    assert code == 1
    assert time.monotonic() - sent < 0.5  # the LSP budget is 0.1 s; the shared machine gets slack


async def test_exit_after_shutdown_exits_0_within_100_ms(raw, workspace):
    await raw.initialize(workspace)
    answer = await raw.call("shutdown")
    assert answer.get("result", "missing") is None
    raw.notify("exit")
    sent = time.monotonic()
    assert await raw.exit_code() == 0
    elapsed = time.monotonic() - sent
    assert elapsed < 0.3, f"gone after {elapsed:.3f} s"


async def test_requests_after_shutdown_get_invalid_request(raw, workspace):
    await raw.initialize(workspace)
    await raw.call("shutdown")
    answer = await raw.command("tunacode.status", timeout=10)
    assert answer["error"]["code"] == -32600


async def test_before_initialize_requests_get_server_not_initialized(raw, workspace):
    raw.notify("workspace/didChangeConfiguration", {"settings": {}})
    answer = await raw.command("tunacode.status", timeout=10)
    assert answer["error"]["code"] == -32002
    assert [m for m in raw.messages if m.get("id") != answer["id"]] == [], "the server sent something else"
    init = await raw.initialize(workspace)
    assert "result" in init
    await _still_answers(raw)


async def test_second_initialize_is_an_error(raw, workspace):
    await raw.initialize(workspace)
    again = await raw.call("initialize", {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}})
    assert again["error"]["code"] == -32600
    await _still_answers(raw)


async def test_did_change_configuration_before_initialize_does_not_raise(raw, workspace):
    raw.notify("workspace/didChangeConfiguration", {"settings": {}})
    await raw.call("shutdown", timeout=10)  # answered (-32002) after the notification was handled
    await raw.initialize(workspace)
    await _still_answers(raw)
    raw.process.stdin.close()
    await raw.exit_code()
    stderr = await raw.stderr()
    assert "AttributeError" not in stderr and "client_capabilities" not in stderr, stderr[-2000:]
    shown = [m["params"]["message"] for m in raw.messages if m.get("method") == "window/showMessage"]
    assert not [t for t in shown if "Error" in t or "client_capabilities" in t], shown


async def test_stdin_closed_exits(raw, workspace):
    await raw.initialize(workspace)
    raw.process.stdin.close()
    await asyncio.wait_for(raw.process.wait(), 5)
