"""`tunacode-lsp run` and the project's own rules: --mode plan, "/name args", and a project
settings file that applies whole only with --trust-workspace (never with --approve auto)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.clients.cli_support import run_cli, scripted_args

DONE = {"steps": [{"text": "Done."}]}


def _args(model, workspace: Path, prompt: str, *extra: str) -> list[str]:
    return ["run", *scripted_args(model.chat_url, workspace, *extra), prompt]


def test_mode_plan_and_a_slash_command(model, workspace, home):
    (workspace / ".tunacode" / "commands").mkdir(parents=True)
    (workspace / ".tunacode" / "commands" / "audit.md").write_text("Audit $ARGUMENTS for bugs.")
    model.set_script([DONE])
    done = run_cli(_args(model, workspace, "/audit src/", "--mode", "plan"), home=home)
    assert done.code == 0, done.stderr
    request = model.requests[0]
    assert sorted(t["function"]["name"] for t in request["tools"]) == ["grep", "list_files", "read_file", "todo_write"]
    last = request["messages"][-1]["content"]
    assert (last if isinstance(last, str) else last[-1]["text"]) == "Audit src/ for bugs."


def test_a_project_allow_rule_applies_only_with_trust_workspace(model, workspace, home):
    (workspace / ".tunacode").mkdir()
    (workspace / ".tunacode" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["bash(touch ran)"]}}))
    touch = {"steps": [{"tool_call": {"name": "bash", "arguments": {"command": "touch ran"}}}]}
    model.set_script([touch, DONE, touch, DONE])
    done = run_cli(_args(model, workspace, "touch", "--approve", "deny"), home=home)
    assert done.code == 0, done.stderr
    assert not (workspace / "ran").exists()  # the allow rule waits for consent: asked, and run denies
    done = run_cli(_args(model, workspace, "touch", "--approve", "deny", "--trust-workspace"), home=home)
    assert done.code == 0, done.stderr
    assert (workspace / "ran").exists() and "applied whole (--trust-workspace)" in done.stderr
    assert not (home / "consent.sqlite3").exists()  # for that run only
