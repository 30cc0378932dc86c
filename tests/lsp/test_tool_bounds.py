"""Bounds of the tools through the real server (issue 34): special files refused at once, and
the `toolTimeouts` setting reaching the tools."""

from __future__ import annotations

import asyncio
import os
import time

from tests.conftest import scripted_options

DONE = {"steps": [{"text": "Done."}]}


def call(tool: str, args: dict) -> dict:
    return {"steps": [{"tool_call": {"name": tool, "arguments": args}}]}


def _tool_messages(model, index=-1):
    return [m["content"] for m in model.requests[index]["messages"] if m["role"] == "tool"]


async def test_grep_naming_a_fifo_is_refused_at_once(lsp, model, workspace):
    """Bug: ripgrep opened the FIFO named by `path` and waited for a writer: the request hung."""

    os.mkfifo(workspace / "pipe")
    (workspace / "link").symlink_to(workspace / "pipe")
    model.set_script([call("grep", {"pattern": "x", "path": "pipe"}), call("grep", {"pattern": "x", "path": "link"}), DONE])
    await lsp.start(init_options=scripted_options(model, approval="auto"))
    result = await asyncio.wait_for(lsp.command("tunacode.request", {"prompt": "search the pipe"}), 30)
    assert result["stopReason"] == "end_turn", result
    assert [c["status"] for c in result["toolCalls"]] == ["failed", "failed"]
    assert "'pipe' is not a regular file" in _tool_messages(model, 1)[-1]
    assert "'pipe' is not a regular file" in _tool_messages(model, 2)[-1]


async def test_tool_timeouts_setting_bounds_a_command(lsp, model, workspace):
    model.set_script([call("bash", {"command": "sleep 30"}), DONE])
    await lsp.start(init_options=scripted_options(model, approval="auto", toolTimeouts={"bash": 1}))
    started = time.monotonic()
    result = await asyncio.wait_for(lsp.command("tunacode.request", {"prompt": "wait"}), 30)
    assert time.monotonic() - started < 20
    assert result["toolCalls"][0]["status"] == "failed"
    assert "timed out after 1 s" in _tool_messages(model, 1)[-1]
