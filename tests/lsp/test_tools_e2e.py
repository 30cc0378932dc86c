"""Tools through the real server: the demo's read -> edit -> bash sequence changes the file on disk."""

from __future__ import annotations

import shutil
from pathlib import Path

from lsprotocol import types

import tunacode_lsp.devtools as devtools
from tests.conftest import scripted_options

DEMO = Path(devtools.__file__).parent


async def test_read_edit_bash_sequence_fixes_the_file(lsp, model, workspace):
    shutil.copytree(DEMO / "demo_workspace", workspace, dirs_exist_ok=True)
    model.set_script(DEMO / "scripts" / "demo.json")
    client = await lsp.start(init_options=scripted_options(model))

    result = await lsp.command("tunacode.request", {"prompt": "Fix the failing check"})

    assert result["stopReason"] == "end_turn", result
    assert "return a + b" in (workspace / "calc.py").read_text()
    assert [c["name"] for c in result["toolCalls"]] == ["read_file", "edit_file", "bash"]
    assert all(c["status"] == "completed" and c["durationMs"] >= 0 for c in result["toolCalls"])
    assert result["turns"] == 4

    events = lsp.events_of(result["requestId"])
    for call in result["toolCalls"]:
        mine = [e for e in events if e.get("toolCallId") == call["toolCallId"]]
        assert [e["type"] for e in mine] == ["tool_call", "tool_call_update", "tool_call_update"]
        assert mine[0]["status"] == "pending" and mine[0]["args"]
        assert [e["status"] for e in mine[1:]] == ["in_progress", "completed"]
        assert mine[-1]["durationMs"] >= 0 and "result" in mine[-1]
        # every tool call is settled before the request ends
        assert events.index(mine[-1]) < len(events) - 1
        # a call still running after 100 ms has its own progress token (tests/lsp/test_tool_progress.py):
        # begin with the tool name, end with the outcome
        reports = client.progress_reports.get(f"tunacode/{result['requestId']}/{call['toolCallId']}")
        if reports is not None:
            assert isinstance(reports[0], types.WorkDoneProgressBegin) and reports[0].title == call["name"]
            assert isinstance(reports[-1], types.WorkDoneProgressEnd) and reports[-1].message.startswith("completed in")
    bash_end = [e for e in events if e.get("name") == "bash" and e.get("status") == "completed"][0]
    assert "all checks passed" in bash_end["result"]

    request_reports = client.progress_reports[f"tunacode/{result['requestId']}"]
    messages = [r.message for r in request_reports if isinstance(r, types.WorkDoneProgressReport)]
    assert any(m.startswith("read_file calc.py") for m in messages)
    assert any(m.startswith("bash completed") for m in messages)

    # the model saw each tool's result, paired with its call
    sent = model.requests
    assert len(sent) == 4
    tool_msgs = [m for m in sent[3]["messages"] if m["role"] == "tool"]
    call_ids = [tc["id"] for m in sent[3]["messages"] if m["role"] == "assistant" for tc in m.get("tool_calls", [])]
    assert [m["tool_call_id"] for m in tool_msgs] == call_ids and len(call_ids) == 3
    assert "all checks passed" in tool_msgs[-1]["content"]


async def test_escape_attempt_is_an_error_result_and_the_request_goes_on(lsp, model, workspace, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    model.set_script([
        {"steps": [{"tool_call": {"name": "read_file", "arguments": {"filepath": "../secret.txt"}}}]},
        {"steps": [{"text": "I cannot read that."}]},
    ])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "read ../secret.txt"})
    assert result["stopReason"] == "end_turn"
    assert result["toolCalls"][0]["status"] == "failed"
    tool_msg = [m for m in model.requests[1]["messages"] if m["role"] == "tool"][0]
    assert "top secret" not in tool_msg["content"] and "outside" in tool_msg["content"].lower()


async def test_unknown_tool_and_non_json_arguments_are_error_results(lsp, model):
    model.set_script([
        {"steps": [{"tool_call": {"name": "launch_rockets", "arguments": {}}},
                   {"tool_call": {"name": "read_file", "arguments": "{\"filepath\": "}}]},
        {"steps": [{"text": "Sorry."}]},
    ])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "go"})
    assert result["stopReason"] == "end_turn"
    assert [c["status"] for c in result["toolCalls"]] == ["failed", "failed"]
    tool_msgs = [m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert "Unknown tool 'launch_rockets'" in tool_msgs[0] and "read_file" in tool_msgs[0]
    assert all(m.endswith("then call the tool again.") for m in tool_msgs[:2])  # one wording
    assert "not valid JSON" in tool_msgs[1]


async def test_text_before_a_call_is_emitted_before_the_calls_events(lsp, model, workspace):
    # a fast stream: tinyagent's loop runs ahead of the event consumer
    (workspace / "notes.txt").write_text("hi\n")
    model.set_script([
        {"steps": [{"text": "Reading notes first.", "chunks": 4},
                   {"tool_call": {"name": "read_file", "arguments": {"filepath": "notes.txt"}}}]},
        {"steps": [{"text": "Done."}]},
    ])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "go"})
    types_seen = [e["type"] for e in lsp.events_of(result["requestId"])]
    first_tool = types_seen.index("tool_call")
    deltas = [i for i, t in enumerate(types_seen) if t == "text_delta"]
    assert len(deltas) >= 2 and max(deltas[:-1]) < first_tool, types_seen  # all but "Done." come first
    assert types_seen[-2:] == ["turn_end", "request_end"]
