"""Untrusted text in a CI log is fenced: a model's answer or a tool's output holding
`::error::`, `::add-mask::`, `::set-output` or `::stop-commands::` lines runs no workflow
command, from `tunacode-lsp run` under GITHUB_ACTIONS=true and from the action's step."""

from __future__ import annotations

import json
import re

from tests.clients.cli_support import cli_env, run_cli
from tests.clients.test_action import make_job, scripted

HOSTILE = (
    "Here is the fix.\n"
    "::error file=app.py,line=1::pwned\n"
    "::add-mask::Here\n"
    "::set-output name=approved::true\n"
    "  ::warning::indented\n"
    "::stop-commands::attacker\n"
    "::error::after the attacker's own fence\n"
    "::attacker::\n"
    "::error::after the attacker ended it"
)
SCRIPT = {"turns": [
    {"steps": [{"text": "Checking.\n"},
               {"tool_call": {"name": "bash", "arguments": {"command": "printf '::error::from-a-tool\\n::add-mask::x\\n'; env"}}}]},
    {"steps": [{"text": HOSTILE, "chunks": 7}]},
]}
COMMAND = re.compile(r"::([A-Za-z-]+)(?: [^:]*)?::(.*)")


def workflow_commands(log: str) -> list[str]:
    """The commands the Actions runner would run from this log: a line (leading blanks
    trimmed) of the form `::name params::value`; nothing while `::stop-commands::TOKEN` holds,
    until a line `::TOKEN::`."""

    ran: list[str] = []
    stopped: str | None = None
    for line in log.split("\n"):
        line = line.strip()
        if stopped is not None:
            if line == f"::{stopped}::":
                stopped = None
            continue
        match = COMMAND.fullmatch(line)
        if match is None:
            continue
        if match.group(1) == "stop-commands":
            stopped = match.group(2)
        ran.append(match.group(1))
    return ran


def _args(model, workspace, *extra: str) -> list[str]:
    return ["run", "--model", "openai-compatible:scripted", "--base-url", model.chat_url, "--cwd", str(workspace),
            "--approve", "auto", *extra, "fix it"]


def test_the_runner_model_sees_the_commands_of_an_unfenced_log():
    assert workflow_commands(HOSTILE) == ["error", "add-mask", "set-output", "warning", "stop-commands", "error"]


def test_run_under_github_actions_fences_the_answer_and_the_tool_lines(model, workspace, home):
    model.set_script(SCRIPT)
    done = run_cli(_args(model, workspace), home=home, env=cli_env(home, GITHUB_ACTIONS="true"))
    assert done.code == 0, done.stderr
    assert "::error file=app.py,line=1::pwned" in done.stdout  # shown, as text
    for stream in (done.stdout, done.stderr):
        assert workflow_commands(stream) == ["stop-commands"]  # ours, and nothing after it
    token = re.search(r"::stop-commands::([0-9a-f]{32})", done.stdout).group(1)
    assert len(token) == 32 and token not in json.dumps(model.requests)  # no tool can learn it (env)
    assert done.stdout.rstrip().endswith(f"::{token}::")


def test_run_json_under_github_actions_keeps_stdout_json_lines(model, workspace, home):
    model.set_script(SCRIPT)
    done = run_cli(_args(model, workspace, "--json"), home=home, env=cli_env(home, GITHUB_ACTIONS="true"))
    assert done.code == 0, done.stderr
    assert all(line.startswith("{") for line in done.stdout.splitlines())  # no command can start a line
    assert workflow_commands(done.stdout) == [] and workflow_commands(done.stderr) == ["stop-commands"]


def test_run_outside_github_actions_prints_no_fence(model, workspace, home):
    model.set_script(SCRIPT)
    done = run_cli(_args(model, workspace), home=home, env=cli_env(home, GITHUB_ACTIONS=""))
    assert done.code == 0, done.stderr
    assert re.search(r"::stop-commands::[0-9a-f]{32}", done.stdout + done.stderr) is None


def test_the_actions_step_is_fenced_whole(model, tmp_path):
    model.set_script(SCRIPT)
    job = make_job(tmp_path, "job", {**scripted(model), "prompt": "fix it", "approve": "auto"})
    assert job.run() == 0, job.log
    assert job.outputs()["text"].endswith("::error::after the attacker ended it")  # the output is the answer
    steps = job.log.split("--- step ")
    [run_step] = [s for s in steps if s.startswith("Run the request")]
    assert "::error file=app.py,line=1::pwned" in run_step and "from-a-tool" in run_step
    assert workflow_commands(run_step) == ["stop-commands"]
    token = re.search(r"::stop-commands::([0-9a-f]{32})", run_step).group(1)
    assert token not in json.dumps(model.requests)  # not in the environment a tool could print
    assert workflow_commands(job.log).count("error") == 0  # the verdict step is quiet on success


def test_sessions_show_fences_stored_model_text_and_export_redacts_old_rows(home, workspace):
    from tunacode_lsp.store.session_store import SessionStore

    token = "ghp_" + "k7" * 18
    with SessionStore(home / "sessions.sqlite3") as store:
        record = store.create_session(cwd=str(workspace), model="openai-compatible:scripted", title="old")
        store.append_messages(record.session_id, [
            {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1},
            {"role": "assistant", "content": [{"type": "text", "text": "ok\n::error::from the store"}], "stop_reason": "stop",
             "timestamp": 2, "api": "openai-completions", "provider": "openai-compatible", "model": "scripted"},
        ])
    # a row as an older version stored it, written past the store's redacting connection
    import sqlite3

    with sqlite3.connect(home / "sessions.sqlite3") as db:
        body = json.dumps({"role": "user", "content": [{"type": "text", "text": f"my token {token}"}], "timestamp": 3})
        db.execute("UPDATE messages SET body = ? WHERE seq = (SELECT MIN(seq) FROM messages)", (body.encode(),))

    listed = run_cli(["sessions", "list", "--json"], home=home, cwd=workspace)
    assert record.session_id in listed.stdout, (listed.stdout, listed.stderr, record.session_id)
    shown = run_cli(["sessions", "show", record.session_id], home=home, cwd=workspace, env=cli_env(home, GITHUB_ACTIONS="true"))
    assert shown.code == 0, shown.stderr
    assert "::error::from the store" in shown.stdout and workflow_commands(shown.stdout) == ["stop-commands"]
    exported = run_cli(["sessions", "export", record.session_id], home=home, cwd=workspace, env=cli_env(home, GITHUB_ACTIONS="true"))
    assert exported.code == 0, exported.stderr
    document = json.loads(exported.stdout)  # still one JSON document: export is not fenced
    assert token not in exported.stdout and "my token [redacted]" in json.dumps(document)
