"""A tool call's own work-done progress over the real server (docs/protocol.md, Progress):
a call still running 100 ms after it started gets its token `tunacode/<requestId>/<toolCallId>`,
begun with the tool's name and ended with its outcome; every call is reported on the
request's token, however short (tests/unit/test_lsp_sink.py: a short call creates no token)."""

from __future__ import annotations

from lsprotocol import types

from tests.conftest import scripted_options

SLOW_BASH = {"steps": [{"tool_call": {"name": "bash", "arguments": {"command": "sleep 0.5; echo slept"}}}]}
DONE = {"steps": [{"text": "Done."}]}


async def test_a_tool_call_still_running_gets_its_own_progress_token(lsp, model):
    model.set_script([SLOW_BASH, DONE])
    client = await lsp.start(init_options=scripted_options(model, shellSandbox="off"))

    result = await lsp.command("tunacode.request", {"prompt": "wait a bit"})

    assert result["stopReason"] == "end_turn", result
    call = result["toolCalls"][0]
    assert call["name"] == "bash" and call["status"] == "completed"
    reports = client.progress_reports[f"tunacode/{result['requestId']}/{call['toolCallId']}"]
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and reports[0].title == "bash"
    assert isinstance(reports[-1], types.WorkDoneProgressEnd) and reports[-1].message.startswith("completed in")
    request_reports = client.progress_reports[f"tunacode/{result['requestId']}"]
    messages = [r.message for r in request_reports if isinstance(r, types.WorkDoneProgressReport)]
    assert any(m.startswith("bash") for m in messages) and any(m.startswith("bash completed") for m in messages)
