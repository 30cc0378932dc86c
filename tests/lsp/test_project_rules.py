"""The project's own rules over the real server: settings files, permission rules, consent,
hooks, "Always allow", plan mode, and what tunacode.status shows."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import scripted_options

DONE = {"steps": [{"text": "Done."}]}


def bash(command: str) -> dict:
    return {"steps": [{"tool_call": {"name": "bash", "arguments": {"command": command}}}]}


def write_settings(path: Path, value: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))


def tool_messages(model, index: int = -1) -> list[str]:
    return [m["content"] for m in model.requests[index]["messages"] if m["role"] == "tool"]


def updates(lsp, result) -> list[dict]:
    return [e for e in lsp.events_of(result["requestId"]) if e["type"] == "tool_call_update"]


async def test_a_project_files_allow_rules_and_hooks_never_apply_without_consent(lsp, model, workspace, home):
    write_settings(workspace / ".tunacode/settings.json", {
        "approval": "auto",
        "permissions": {"allow": ["bash(touch ran)"]},
        "hooks": {"userPromptSubmit": [{"command": "touch hook-ran"}]},
    })
    model.set_script([bash("touch ran"), DONE, bash("touch ran"), DONE])
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    lsp.approvals.answer = "Deny"
    first = await lsp.command("tunacode.request", {"prompt": "touch"})
    assert len(lsp.approvals.prompts) == 1  # the project's allow rule and approval auto are held back
    assert not (workspace / "ran").exists() and not (workspace / "hook-ran").exists()
    notices = [e["message"] for e in lsp.events_of(first["requestId"]) if e["type"] == "notice"]
    assert any("held back until you consent" in n for n in notices)

    status = await lsp.command("tunacode.status")
    project = next(f for f in status["settings"]["files"] if f["source"] == "project")
    assert project["consented"] is False and len(project["heldBack"]) == 3
    assert status["settings"]["values"]["approval"] == {"value": "ask", "source": "editor"}

    stale = await _consent_error(lsp, "0" * 64)
    assert "changed" in stale
    await lsp.command("tunacode.settings.consent", {"fingerprint": project["fingerprint"]})
    second = await lsp.command("tunacode.request", {"prompt": "touch", "sessionId": first["sessionId"]})
    assert second["toolCalls"][0]["status"] == "completed"
    assert len(lsp.approvals.prompts) == 1  # allowed by the consented rule: not asked
    assert (workspace / "ran").exists() and (workspace / "hook-ran").exists()


async def _consent_error(lsp, fingerprint: str) -> str:
    try:
        await lsp.command("tunacode.settings.consent", {"fingerprint": fingerprint})
    except Exception as exc:  # the JSON-RPC error
        return str(exc)
    raise AssertionError("a stale fingerprint was accepted")


async def test_a_deny_rule_blocks_a_compound_command_even_under_auto(lsp, model, workspace, home):
    write_settings(home / "config/tunacode/settings.json", {"permissions": {"deny": ["bash(rm *)"]}})
    (workspace / "keep.txt").write_text("x")
    model.set_script([bash("ls && timeout 5 rm keep.txt"), DONE])
    await lsp.start(init_options=scripted_options(model, approval="auto"))
    result = await lsp.command("tunacode.request", {"prompt": "clean"})
    assert (workspace / "keep.txt").exists() and lsp.approvals.prompts == []
    final = updates(lsp, result)[-1]
    assert final["status"] == "failed" and final["reason"] == "policy"
    assert "deny rule `bash(rm *)` (user settings)" in tool_messages(model)[0]


async def test_an_ask_rule_asks_under_auto_and_the_prompt_names_it(lsp, model, workspace, home):
    write_settings(home / "config/tunacode/settings.json", {"permissions": {"ask": ["bash(touch *)"]}})
    model.set_script([bash("touch ran"), DONE])
    await lsp.start(init_options=scripted_options(model, approval="auto"))
    lsp.approvals.answer = "Deny"
    await lsp.command("tunacode.request", {"prompt": "touch"})
    [prompt] = lsp.approvals.prompts
    assert "Asked by the ask rule `bash(touch *)` (user settings)" in prompt.message
    assert not (workspace / "ran").exists()


async def test_always_allow_saves_exactly_the_rule_it_shows(lsp, model, workspace, home):
    model.set_script([bash("touch ran && echo ok"), DONE, bash("touch ran && echo ok"), DONE])
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    lsp.approvals.answer = "Always allow (user settings)"
    first = await lsp.command("tunacode.request", {"prompt": "one"})
    [prompt] = lsp.approvals.prompts
    assert '"Always allow" saves: bash(touch ran), bash(echo ok)' in prompt.message
    assert first["toolCalls"][0]["status"] == "completed", tool_messages(model, 0 if len(model.requests) < 2 else 1)
    saved = json.loads((home / "config/tunacode/settings.json").read_text())
    assert saved == {"permissions": {"allow": ["bash(touch ran)", "bash(echo ok)"]}}
    lsp.approvals.answer = "Deny"
    second = await lsp.command("tunacode.request", {"prompt": "two"})  # a new session: the rule still allows it
    assert second["toolCalls"][0]["status"] == "completed" and len(lsp.approvals.prompts) == 1


async def test_a_pre_tool_hook_blocks_with_its_reason(lsp, model, workspace, home):
    write_settings(home / "config/tunacode/settings.json", {
        "hooks": {"preToolUse": [{"matcher": "bash", "command": "echo 'not on main' >&2; exit 2"}]},
    })
    model.set_script([bash("touch ran"), DONE])
    await lsp.start(init_options=scripted_options(model, approval="auto"))
    result = await lsp.command("tunacode.request", {"prompt": "touch"})
    assert not (workspace / "ran").exists()
    assert updates(lsp, result)[-1]["reason"] == "policy"
    assert "not on main" in tool_messages(model)[0]


async def test_plan_mode_offers_only_read_only_tools(lsp, model, workspace):
    write = {"steps": [{"tool_call": {"name": "write_file", "arguments": {"filepath": "x.txt", "content": "x"}}}]}
    model.set_script([write, DONE])
    await lsp.start(init_options=scripted_options(model, approval="auto"))
    result = await lsp.command("tunacode.request", {"prompt": "plan it", "mode": "plan"})
    assert result["stopReason"] == "end_turn" and not (workspace / "x.txt").exists()
    offered = sorted(t["function"]["name"] for t in model.requests[0]["tools"])
    assert offered == ["grep", "list_files", "read_file", "todo_write"]
    assert "plan mode" in model.requests[0]["messages"][0]["content"]
    bad = await _request_error(lsp, {"prompt": "x", "mode": "yolo"})
    assert "params.mode" in bad


async def _request_error(lsp, params: dict) -> str:
    try:
        await lsp.command("tunacode.request", params)
    except Exception as exc:
        return str(exc)
    raise AssertionError("accepted")


async def test_a_nested_instruction_file_joins_the_first_read_below_it_once(lsp, model, workspace):
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "AGENTS.md").write_text("PKG-RULE: tabs, not spaces\n@../outside.md")
    (workspace / "pkg" / "a.py").write_text("a = 1\n")
    read = {"steps": [{"tool_call": {"name": "read_file", "arguments": {"filepath": "pkg/a.py"}}}]}
    model.set_script([read, read, DONE])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "read twice"})
    assert result["stopReason"] == "end_turn"
    results = tool_messages(model)
    assert len(results) == 2 and "PKG-RULE" in results[0] and "PKG-RULE" not in results[1]
    assert "PKG-RULE" not in model.requests[0]["messages"][0]["content"]  # not in the system prompt


async def test_commands_list_and_a_slash_prompt_runs_the_body_with_its_allowed_tools(lsp, model, workspace, home):
    folder = workspace / ".tunacode" / "commands"
    folder.mkdir(parents=True)
    (folder / "explain.md").write_text("---\ndescription: Explain code\nargument-hint: <file>\nallowed-tools: read_file\n---\nExplain $1.")
    model.set_script([DONE])
    await lsp.start(init_options=scripted_options(model))
    listed = await lsp.command("tunacode.commands.list")
    assert listed == {"commands": [
        {"name": "explain", "description": "Explain code", "argumentHint": "<file>", "source": "project"}
    ]}
    await lsp.command("tunacode.request", {"prompt": "/explain calc.py"})
    sent = model.requests[0]["messages"][-1]["content"]
    assert (sent if isinstance(sent, str) else sent[-1]["text"]) == "Explain calc.py."
    assert [t["function"]["name"] for t in model.requests[0]["tools"]] == ["read_file"]


async def test_an_allow_rule_never_covers_a_file_that_runs_code_outside_the_sandbox(lsp, model, workspace, home):
    write_settings(home / "config/tunacode/settings.json", {"permissions": {"allow": ["write_file"]}})
    tasks = {"steps": [{"tool_call": {"name": "write_file", "arguments": {
        "filepath": ".vscode/tasks.json", "content": "{}"}}}]}
    model.set_script([tasks, DONE])
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    lsp.approvals.answer = "Deny"
    await lsp.command("tunacode.request", {"prompt": "add a task"})
    assert len(lsp.approvals.prompts) == 1  # asked, although the rule allows write_file
    assert not (workspace / ".vscode" / "tasks.json").exists()
