"""Approvals: nothing that changes the workspace runs unasked under approval "ask"."""

from __future__ import annotations

import asyncio
import time

from tests.conftest import scripted_options

WRITE = {"steps": [{"tool_call": {"name": "write_file", "arguments": {"filepath": "notes.txt", "content": "hello\n"}}}]}
BASH = {"steps": [{"tool_call": {"name": "bash", "arguments": {"command": "touch ran"}}}]}
READ = {"steps": [{"tool_call": {"name": "list_files", "arguments": {}}}]}
DONE = {"steps": [{"text": "Done."}]}


def _tool_messages(model, index=-1):
    return [m["content"] for m in model.requests[index]["messages"] if m["role"] == "tool"]


async def test_allow_runs_the_tool_after_asking(lsp, model, workspace):
    model.set_script([WRITE, DONE])
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    lsp.approvals.answer = "Allow"
    result = await lsp.command("tunacode.request", {"prompt": "write notes"})
    assert result["stopReason"] == "end_turn"
    assert (workspace / "notes.txt").read_text() == "hello\n"
    [prompt] = lsp.approvals.prompts
    assert "create notes.txt (1 lines)" in prompt.message and "+hello" in prompt.message
    assert [a.title for a in prompt.actions] == [
        "Allow", "Allow for this session", "Deny", "Always allow (user settings)", "Always allow (project settings)"
    ]
    assert '"Always allow" saves: write_file(/notes.txt)' in prompt.message
    statuses = [e["status"] for e in lsp.events_of(result["requestId"]) if e["type"] == "tool_call_update"]
    assert statuses == ["awaiting_approval", "in_progress", "completed"]


async def test_deny_and_dismiss_return_an_error_result_and_the_request_goes_on(lsp, model, workspace):
    model.set_script([BASH, DONE, BASH, DONE])
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    for answer in ("Deny", None):
        lsp.approvals.answer = answer
        result = await lsp.command("tunacode.request", {"prompt": "touch a file"})
        assert result["stopReason"] == "end_turn" and result["toolCalls"][0]["status"] == "failed"
        assert not (workspace / "ran").exists()
        [declined] = _tool_messages(model)[-1:]
        assert declined.startswith("the user declined") and "touch ran" in declined


async def test_read_only_tools_are_not_asked(lsp, model):
    model.set_script([READ, DONE])
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    result = await lsp.command("tunacode.request", {"prompt": "list"})
    assert result["toolCalls"][0]["status"] == "completed" and lsp.approvals.prompts == []


async def test_allow_for_this_session_asks_once(lsp, model, workspace):
    model.set_script([BASH, DONE, BASH, DONE])
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    lsp.approvals.answer = "Allow for this session"
    first = await lsp.command("tunacode.request", {"prompt": "one"})
    lsp.approvals.answer = "Deny"  # would deny, but the session already allows bash
    second = await lsp.command("tunacode.request", {"prompt": "two", "sessionId": first["sessionId"]})
    assert second["toolCalls"][0]["status"] == "completed"
    assert len(lsp.approvals.prompts) == 1
    # another session is asked again
    model.set_script([BASH, DONE])
    third = await lsp.command("tunacode.request", {"prompt": "three"})
    assert third["toolCalls"][0]["status"] == "failed" and len(lsp.approvals.prompts) == 2


async def test_read_only_mode_denies_without_asking(lsp, model, workspace):
    model.set_script([WRITE, DONE])
    await lsp.start(init_options=scripted_options(model, approval="read-only"))
    result = await lsp.command("tunacode.request", {"prompt": "write"})
    assert result["toolCalls"][0]["status"] == "failed" and lsp.approvals.prompts == []
    assert not (workspace / "notes.txt").exists()
    assert "read-only" in _tool_messages(model)[0]


async def test_an_approval_wait_is_abortable(lsp, model, workspace):
    model.set_script([BASH, DONE])
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    lsp.approvals.block = asyncio.Event()  # the user never answers
    pending = lsp.send_command("tunacode.request", {"prompt": "touch"})
    waiting = await lsp.wait_for_event(lambda e: e.get("status") == "awaiting_approval")
    started = time.monotonic()
    await lsp.command("tunacode.abort", {"requestId": waiting["requestId"]})
    result = await asyncio.wait_for(pending, 1.0)
    assert result["stopReason"] == "cancelled" and time.monotonic() - started < 1.0
    assert result["toolCalls"][0]["status"] == "cancelled"
    assert not (workspace / "ran").exists()
    lsp.approvals.block.set()  # the user answers late: nothing happens any more
    await lsp.wait_for(lambda: lsp.approvals.open == 0)
    assert not (workspace / "ran").exists()


async def test_session_allows_are_listed_and_revoked(lsp, model, workspace):
    model.set_script([BASH, DONE, BASH, DONE])
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    lsp.approvals.answer = "Allow for this session"
    first = await lsp.command("tunacode.request", {"prompt": "one"})
    session = first["sessionId"]
    assert await lsp.command("tunacode.session.allows", {"sessionId": session}) == {"allowed": ["bash"]}
    assert await lsp.command("tunacode.session.allows", {"sessionId": session, "revoke": ["bash"]}) == {"allowed": []}
    lsp.approvals.answer = "Deny"  # asked again, and denied
    second = await lsp.command("tunacode.request", {"prompt": "two", "sessionId": session})
    assert second["toolCalls"][0]["status"] == "failed" and len(lsp.approvals.prompts) == 2
    for bad, code in (({"sessionId": "nope"}, -32001), ({"sessionId": session, "revoke": "bash"}, -32602), ({}, -32602)):
        try:
            await lsp.command("tunacode.session.allows", bad)
        except Exception as exc:
            assert getattr(exc, "code", None) == code, (bad, exc)
        else:
            raise AssertionError(bad)
