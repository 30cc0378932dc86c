"""Approvals show exactly what runs (issue 13 section 2), over the real server: a user who says
Allow gets what they saw, and nothing else runs."""

from __future__ import annotations

import asyncio
import json

from lsprotocol import types

from tests.conftest import scripted_options

DONE = {"steps": [{"text": "Done."}]}


def call(tool: str, args: dict) -> dict:
    return {"steps": [{"tool_call": {"name": tool, "arguments": args}}]}


def _tool_messages(model, index=-1):
    return [m["content"] for m in model.requests[index]["messages"] if m["role"] == "tool"]


async def test_a_padded_command_is_shown_whole(lsp, model, workspace):
    """Bug: shown cut at 300 characters; the hidden tail ran after Allow."""

    padded = "echo hi" + " " * 400 + "; touch HIDDEN"
    model.set_script([call("bash", {"command": padded}), DONE])
    lsp.approvals.answer = "Deny"
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    await lsp.command("tunacode.request", {"prompt": "say hi"})
    [prompt] = lsp.approvals.prompts
    assert "touch HIDDEN" in prompt.message and "[400 blanks]" in prompt.message
    assert not (workspace / "HIDDEN").exists()


async def test_a_command_too_long_to_show_is_refused_unasked(lsp, model, workspace):
    model.set_script([call("bash", {"command": "echo " + "x" * 5000 + "; touch HIDDEN"}), DONE])
    lsp.approvals.answer = "Allow"
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    await lsp.command("tunacode.request", {"prompt": "go"})
    assert lsp.approvals.prompts == []
    assert "characters long" in _tool_messages(model)[-1] and not (workspace / "HIDDEN").exists()


async def test_edits_sent_as_a_json_string_are_shown_as_they_apply(lsp, model, workspace):
    """Bug: summarised as "0 changes (-0 +0 lines)" while it rewrote the file."""

    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    edits = json.dumps([{"old_text": "return a - b", "new_text": "return a + b  # and more"}])
    model.set_script([call("edit_file", {"filepath": "calc.py", "edits": edits}), DONE])
    lsp.approvals.answer = "Allow"
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    await lsp.command("tunacode.request", {"prompt": "fix"})
    [prompt] = lsp.approvals.prompts
    assert "edit calc.py: 1 change (-1 +1 lines)" in prompt.message
    assert "-    return a - b" in prompt.message and "+    return a + b  # and more" in prompt.message
    assert "return a + b  # and more" in (workspace / "calc.py").read_text()


async def test_a_file_changed_while_the_user_decides_is_not_written(lsp, model, workspace):
    (workspace / "calc.py").write_text("x = 1\ny = 2\n")
    model.set_script([call("edit_file", {"filepath": "calc.py", "old_text": "x = 1", "new_text": "x = 10"}), DONE])
    lsp.approvals.block = asyncio.Event()
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    pending = lsp.send_command("tunacode.request", {"prompt": "edit"})
    await lsp.wait_for(lambda: lsp.approvals.open == 1)
    (workspace / "calc.py").write_text("x = 1\ny = 2\nz = 3  # someone else\n")  # changed meanwhile
    lsp.approvals.answer = "Allow"
    lsp.approvals.block.set()  # the user clicks Allow now
    result = await asyncio.wait_for(pending, 15)
    assert "changed while the user was deciding" in _tool_messages(model)[-1]
    assert (workspace / "calc.py").read_text() == "x = 1\ny = 2\nz = 3  # someone else\n"
    assert result["stopReason"] == "end_turn"


async def test_rich_clients_get_tunacode_approve_with_the_diff(lsp, model, workspace):
    (workspace / "a.txt").write_text("old\n")
    model.set_script([call("edit_file", {"filepath": "a.txt", "old_text": "old", "new_text": "new"}), DONE])
    asked: list = []

    async def approve(params):
        asked.append(params)
        return {"decision": "allow"}

    lsp.client_handlers["tunacode/approve"] = approve
    caps = types.ClientCapabilities(experimental={"tunacode": {"approve": True}})
    await lsp.start(init_options=scripted_options(model, approval="ask"), capabilities=caps)
    await lsp.command("tunacode.request", {"prompt": "edit"})
    [params] = asked
    get = (lambda k: params[k]) if isinstance(params, dict) else (lambda k: getattr(params, k))
    assert get("tool") == "edit_file" and get("detailKind") == "diff" and "-old" in get("detail") and "+new" in get("detail")
    # one summary for the call: the approval's is the tool_call event's (no "edit edit a.txt" in a card)
    [event] = [e for e in lsp.events if e["type"] == "tool_call"]
    assert get("summary") == event["summary"] == "a.txt"
    assert lsp.approvals.prompts == []  # no showMessageRequest for a rich client
    assert (workspace / "a.txt").read_text() == "new\n"


async def test_an_open_approval_is_withdrawn_when_the_request_is_aborted(lsp, model, workspace):
    """Bug: the prompt stayed on screen after the abort, and a late Allow showed an error."""

    model.set_script([call("bash", {"command": "touch ran"}), DONE])
    lsp.approvals.block = asyncio.Event()
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    pending = lsp.send_command("tunacode.request", {"prompt": "touch"})
    await lsp.wait_for(lambda: lsp.approvals.open == 1)
    session = [e for e in lsp.events if e["type"] == "request_start"][0]["sessionId"]
    await lsp.command("tunacode.abort", {"sessionId": session})
    result = await asyncio.wait_for(pending, 10)
    assert result["stopReason"] == "cancelled"
    # the server sent $/cancelRequest: the client's prompt handler was cancelled (the prompt closed)
    await lsp.wait_for(lambda: lsp.approvals.open == 0)
    lsp.approvals.block.set()  # the user clicks late: taken quietly
    assert not (workspace / "ran").exists()
    assert (await lsp.command("tunacode.status"))["activeRequests"] == []
