"""`tunacode-lsp run --approve auto` (the pull-request workflow) never writes a file that a tool
runs by itself outside the sandbox (issue 26): `.vscode/tasks.json` is denied, other files are not."""

from __future__ import annotations

from tests.clients.cli_support import run_cli, scripted_args


def test_approve_auto_denies_an_edit_of_vscode_tasks(model, workspace, home):
    turns = [{"tool_call": {"name": "write_file", "arguments": {"filepath": ".vscode/tasks.json", "content": "{}"}}},
             {"tool_call": {"name": "write_file", "arguments": {"filepath": "notes.txt", "content": "x"}}},
             {"text": "done"}]
    model.set_script({"turns": turns})
    done = run_cli(["run", *scripted_args(model.chat_url, workspace, "--approve", "auto", "--json"), "write"], home=home)
    assert done.code == 0, done.stderr
    assert not (workspace / ".vscode" / "tasks.json").exists()
    assert (workspace / "notes.txt").read_text() == "x"
