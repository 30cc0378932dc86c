"""Untrusted text in a CI log is fenced: a model's answer or a tool's output holding
`::error::`, `::add-mask::`, `::set-output` or `::stop-commands::` lines runs no workflow
command, from `tunacode-lsp run` under GITHUB_ACTIONS=true and from the action's step."""

from __future__ import annotations

import json
import re

from tests.clients.cli_support import run_cli
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
    done = run_cli(_args(model, workspace), home=home, env={"GITHUB_ACTIONS": "true"})
    assert done.code == 0, done.stderr
    assert "::error file=app.py,line=1::pwned" in done.stdout  # shown, as text
    for stream in (done.stdout, done.stderr):
        assert workflow_commands(stream) == ["stop-commands"]  # ours, and nothing after it
    token = re.search(r"::stop-commands::([0-9a-f]{32})", done.stdout).group(1)
    assert len(token) == 32 and token not in json.dumps(model.requests)  # no tool can learn it (env)
    assert done.stdout.rstrip().endswith(f"::{token}::")


def test_run_json_under_github_actions_keeps_stdout_json_lines(model, workspace, home):
    model.set_script(SCRIPT)
    done = run_cli(_args(model, workspace, "--json"), home=home, env={"GITHUB_ACTIONS": "true"})
    assert done.code == 0, done.stderr
    assert all(line.startswith("{") for line in done.stdout.splitlines())  # no command can start a line
    assert workflow_commands(done.stdout) == [] and workflow_commands(done.stderr) == ["stop-commands"]


def test_run_outside_github_actions_prints_no_fence(model, workspace, home):
    model.set_script(SCRIPT)
    done = run_cli(_args(model, workspace), home=home, env={"GITHUB_ACTIONS": ""})
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
