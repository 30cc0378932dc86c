"""The GitHub action (action.yml) run the way the runner runs a composite action, as far as
this machine can: its `run:` steps by bash in a clean folder, with the runner's files
(GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, GITHUB_ENV, GITHUB_PATH) and variables
(GITHUB_ACTION_PATH, RUNNER_TEMP, ...), its `${{ }}` expressions evaluated, the scripted
model as the model. `uses:` steps (cache, artifacts) are stood in for by the test: a cache
hit is a venv already at the cached path, an artifact a folder the upload step filled.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tunacode_lsp.store.session_store import SessionStore

REPO = Path(__file__).resolve().parents[2]
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
WRITE_FIX = {"turns": [
    {"tool_call": {"name": "write_file", "arguments": {"filepath": "fixed.txt", "content": "fixed\n"}}},
    {"text": "Fixed it.\nSecond line of the answer."},
]}


def parse_output_file(path: Path) -> dict[str, str]:
    """The runner's GITHUB_OUTPUT format: `name=value` lines and `name<<DELIM` blocks."""

    values: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").split("\n") if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            values[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
        elif "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
            i += 1
        else:
            assert line == "", f"not the runner's format: {line!r}"
            i += 1
    return values


@dataclass
class Job:
    """One job running the action: the runner's folders and what the steps left behind."""

    root: Path
    action_path: Path
    inputs: dict[str, str]
    env: dict[str, str]
    artifacts: dict[str, Path]  # name -> folder, shared between jobs of a test
    steps: dict[str, dict[str, str]] = field(default_factory=dict)
    summary: str = ""
    log: str = ""
    skipped_uses: list[str] = field(default_factory=list)

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def temp(self) -> Path:
        return self.root / "runner-temp"

    def evaluate(self, expr: str, action: dict[str, Any]) -> str:
        parts = expr.split(".")
        if parts[0] == "inputs" and len(parts) == 2:
            declared = action["inputs"]
            assert parts[1] in declared, f"undeclared input {parts[1]}"
            return self.inputs.get(parts[1], str(declared[parts[1]].get("default", "")))
        if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
            return self.steps.get(parts[1], {}).get(parts[3], "")
        if expr == "runner.temp":
            return str(self.temp)
        if expr == "github.action_path":
            return str(self.action_path)
        raise AssertionError(f"the test's runner does not know the expression {expr!r}")

    def substitute(self, text: Any, action: dict[str, Any]) -> str:
        return EXPRESSION.sub(lambda m: self.evaluate(m.group(1), action), str(text))

    def condition(self, text: str, action: dict[str, Any]) -> bool:
        terms = [t.strip() for t in text.split("&&")]
        verdict = True
        for term in terms:
            match = re.fullmatch(r"([\w.-]+)\s*(!=|==)\s*''", term)
            assert match, f"the test's runner does not know the condition {term!r}"
            value = self.evaluate(match.group(1), action)
            verdict &= (value != "") if match.group(2) == "!=" else (value == "")
        return verdict

    def uses(self, step: dict[str, Any], action: dict[str, Any]) -> None:
        name = step["uses"].split("@")[0]
        given = {k: self.substitute(v, action) for k, v in (step.get("with") or {}).items()}
        self.skipped_uses.append(name)
        if name == "actions/cache":
            assert given["path"] and given["key"].startswith("tunacode-action-Linux-py3.")
        elif name == "actions/download-artifact":
            wanted = given.get("name") or given.get("pattern")
            source = self.artifacts.get(wanted)
            if source is None:
                # the first run has no artifact: `name` would be a red "Artifact not found" step,
                # a `pattern` matching nothing downloads nothing and succeeds
                assert "name" not in given and given.get("pattern"), "a missing artifact must not fail a step"
            else:
                shutil.copytree(source, given["path"], dirs_exist_ok=True)
        elif name == "actions/upload-artifact":
            target = self.root.parent / f"artifact-{given['name']}"
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            shutil.copy(given["path"], target)
            self.artifacts[given["name"]] = target
        else:
            raise AssertionError(f"unexpected action {name}")

    def run(self) -> int:
        action = yaml.safe_load((self.action_path / "action.yml").read_text())
        assert action["runs"]["using"] == "composite"
        extra_env: dict[str, str] = {}
        for index, step in enumerate(action["runs"]["steps"]):
            if "if" in step and not self.condition(step["if"], action):
                continue
            if "uses" in step:
                self.uses(step, action)
                continue
            assert step["shell"] == "bash" and "${{" not in step["run"], "inputs must reach scripts through env"
            files = {name: self.root / f"step{index}-{name.lower()}" for name in ("OUTPUT", "STEP_SUMMARY", "ENV", "PATH")}
            for path in files.values():
                path.write_text("")
            env = {**self.env, **extra_env, **{f"GITHUB_{k}": str(v) for k, v in files.items()}}
            env.update({k: self.substitute(v, action) for k, v in (step.get("env") or {}).items()})
            cwd = self.workspace / self.substitute(step.get("working-directory", "."), action)
            script = self.root / f"step{index}.sh"
            script.write_text(step["run"])
            done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=cwd, env=env,
                                  capture_output=True, text=True, timeout=300)
            self.log += f"--- step {step.get('name')} (exit {done.returncode})\n{done.stdout}{done.stderr}"
            if "id" in step:
                self.steps[step["id"]] = parse_output_file(files["OUTPUT"])
            self.summary += files["STEP_SUMMARY"].read_text()
            extra_env.update(parse_output_file(files["ENV"]))
            if done.returncode != 0:
                return done.returncode
        return 0

    def outputs(self) -> dict[str, str]:
        action = yaml.safe_load((self.action_path / "action.yml").read_text())
        return {name: self.substitute(spec["value"], action) for name, spec in action["outputs"].items()}


def make_job(tmp_path: Path, name: str, inputs: dict[str, str], *, action_path: Path = REPO,
             artifacts: dict[str, Path] | None = None, cached_venv: bool = True, extra_env: dict[str, str] | None = None) -> Job:
    root = tmp_path / name
    home = root / "home"
    for folder in (root / "workspace", root / "runner-temp", home):
        folder.mkdir(parents=True)
    if cached_venv:  # a cache hit: the venv is where actions/cache restores it
        venv = home / ".cache" / "tunacode-action" / "venv"
        venv.parent.mkdir(parents=True)
        venv.symlink_to(Path(sys.prefix))  # this test run's venv, with tunacode-lsp installed
    keep = ("PATH", "LANG", "LC_ALL", "PYENV_ROOT", "PYENV_VERSION")
    env = {k: v for k, v in os.environ.items() if k in keep or k.startswith("PIP_")}
    env.update({
        "HOME": str(home), "CI": "true", "GITHUB_ACTIONS": "true", "RUNNER_OS": "Linux",
        "RUNNER_TEMP": str(root / "runner-temp"), "GITHUB_WORKSPACE": str(root / "workspace"),
        "GITHUB_ACTION_PATH": str(action_path),
    })
    env.update(extra_env or {})
    return Job(root, action_path, inputs, env, artifacts if artifacts is not None else {})


def scripted(model) -> dict[str, str]:
    return {"model": "openai-compatible:scripted", "base-url": model.chat_url}


# ---------------------------------------------------------------- the tests


def test_the_action_runs_a_request_and_sets_its_outputs_and_summary(model, tmp_path):
    model.set_script(WRITE_FIX)
    job = make_job(tmp_path, "job", {**scripted(model), "prompt": "--fix the bug", "approve": "auto",
                                      "require-changes": "true"})
    (job.workspace / "README").write_text("a project\n")
    assert job.run() == 0, job.log
    out = job.outputs()
    assert out["text"] == "Fixed it.\nSecond line of the answer."
    assert json.loads(out["changed-files"]) == ["fixed.txt"]
    assert out["exit-code"] == "0" and out["session-id"]
    assert (job.workspace / "fixed.txt").read_text() == "fixed\n"
    assert "--fix the bug" in str(model.requests[0]["messages"][-1]["content"])  # a prompt is never a flag
    assert "Fixed it.\nSecond line of the answer." in job.summary
    assert "- `fixed.txt`" in job.summary and "**exit code 0**" in job.summary
    assert "using the cached venv" in job.log
    assert job.skipped_uses == ["actions/cache"]


def test_a_denied_edit_fails_the_job_with_exit_4_and_still_sets_the_outputs(model, tmp_path):
    model.set_script(WRITE_FIX)
    job = make_job(tmp_path, "job", {**scripted(model), "prompt": "fix it", "fail-on-denied": "true"})
    assert job.run() == 4, job.log
    out = job.outputs()
    assert out["exit-code"] == "4" and json.loads(out["changed-files"]) == []
    assert "::error::tunacode-lsp run exited 4" in job.log
    # the log shows the plain view while the JSON goes to the outputs
    assert "[tool] Write fixed.txt (+1) denied" in job.log and "[done] end_turn: 2 turns, 1 tool call (1 denied)" in job.log
    assert "**Denied tool calls**" in job.summary and "`write_file` fixed.txt" in job.summary
    assert not (job.workspace / "fixed.txt").exists()


def test_prompt_file_and_working_directory(model, tmp_path):
    model.set_script({"turns": [{"text": "read the file prompt"}]})
    job = make_job(tmp_path, "job", {**scripted(model), "prompt-file": "prompt.md", "working-directory": "app"})
    (job.workspace / "app").mkdir()
    (job.workspace / "app" / "prompt.md").write_text("Prompt from a file\n")
    assert job.run() == 0, job.log
    assert "Prompt from a file" in str(model.requests[0]["messages"][-1]["content"])
    assert job.outputs()["text"] == "read the file prompt"


def test_a_configuration_problem_is_exit_2_in_the_summary(model, tmp_path):
    job = make_job(tmp_path, "job", {"model": "openai-compatible:scripted", "base-url": "127.0.0.1:1/v1", "prompt": "hi"})
    assert job.run() == 2, job.log
    assert job.outputs()["exit-code"] == "2" and job.outputs()["text"] == ""
    assert "**exit code 2** (a usage or configuration problem)" in job.summary
    assert model.requests == []


def test_the_session_artifact_carries_the_conversation_to_a_later_job(model, tmp_path):
    artifacts: dict[str, Path] = {}
    model.set_script({"turns": [{"text": "Nice to meet you, Tuna."}, {"text": "Your name is Tuna."}]})
    first = make_job(tmp_path, "first", {**scripted(model), "prompt": "My name is Tuna.", "session-artifact": "chat"},
                     artifacts=artifacts)
    assert first.run() == 0, first.log
    assert "chat" in artifacts
    second = make_job(tmp_path, "second", {**scripted(model), "prompt": "What is my name?", "session-artifact": "chat"},
                      artifacts=artifacts)
    assert second.run() == 0, second.log
    assert second.outputs()["session-id"] == first.outputs()["session-id"]
    texts = [str(m["content"]) for m in model.requests[1]["messages"]]
    assert any("My name is Tuna." in t for t in texts) and any("Nice to meet you, Tuna." in t for t in texts)
    assert second.skipped_uses == ["actions/cache", "actions/download-artifact", "actions/upload-artifact"]
    with SessionStore(second.root / "runner-temp" / "tunacode-home" / "sessions.sqlite3") as store:
        assert store.get_session(first.outputs()["session-id"]).message_count == 4


def test_a_cold_cache_installs_from_the_actions_own_checkout(model, tmp_path):
    """The whole path a first run takes: a fresh venv, pip install of the action's folder."""

    if shutil.which("python3") is None:
        pytest.skip("no python3 on PATH")
    checkout = tmp_path / "action-checkout"
    checkout.mkdir()
    for name in ("action.yml", "pyproject.toml", "README.md"):
        shutil.copy(REPO / name, checkout / name)
    shutil.copytree(REPO / "server", checkout / "server", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    pip_env = {"PIP_CACHE_DIR": subprocess.run([sys.executable, "-m", "pip", "cache", "dir"], capture_output=True,
                                               text=True).stdout.strip() or str(tmp_path / "pip-cache")}
    user_config = Path.home() / ".config" / "pip" / "pip.conf"
    if user_config.exists():  # this machine's package index settings
        pip_env["PIP_CONFIG_FILE"] = str(user_config)
    model.set_script({"turns": [{"text": "installed and ran"}]})
    job = make_job(tmp_path, "cold", {**scripted(model), "prompt": "hi"}, action_path=checkout, cached_venv=False,
                   extra_env=pip_env)
    assert job.run() == 0, job.log
    venv = job.root / "home" / ".cache" / "tunacode-action" / "venv"
    assert (venv / "bin" / "tunacode-lsp").exists() and "using the cached venv" not in job.log
    assert job.outputs()["text"] == "installed and ran"
    installed = subprocess.run([str(venv / "bin" / "python"), "-c", "import tunacode_lsp; print(tunacode_lsp.__file__)"],
                               capture_output=True, text=True).stdout
    assert str(venv) in installed  # a real install, not this checkout's editable one
    left = sorted(p.name for p in checkout.rglob("*") if p.name == "build" or p.name.endswith(".egg-info"))
    assert left == []  # the action's folder (and so the cache key) is as it was


def test_the_output_file_parser_reads_the_runners_format(tmp_path):
    path = tmp_path / "out"
    path.write_text("a=1\nb<<EOF_X\nline 1\nline=2\nEOF_X\nc=\n")
    assert parse_output_file(path) == {"a": "1", "b": "line 1\nline=2", "c": ""}


def test_settings_and_permissions_inputs_reach_the_run(model, tmp_path):
    model.set_script(WRITE_FIX)
    job = make_job(tmp_path, "job", {**scripted(model), "prompt": "fix it", "approve": "auto",
                                      "settings": '{"maxRetries": 1, "shellNetwork": false}',
                                      "permissions": '{"deny": ["write_file"]}'})
    assert job.run() == 0, job.log
    assert not (job.workspace / "fixed.txt").exists()  # the deny rule beat approve: auto
    assert "**Denied tool calls**" in job.summary


@pytest.mark.parametrize(("inputs", "needle"), [
    ({"settings": '{"maxRetries": 99}'}, "tunacode.maxRetries"),
    ({"settings": "not json"}, "the settings input is not JSON"),
    ({"permissions": '["bash"]'}, "the permissions input must be a JSON object"),
    ({"settings": '{"permissions": {}}', "permissions": '{"allow": []}'}, "give one"),
])
def test_a_bad_settings_input_is_exit_2_in_one_line(model, tmp_path, inputs, needle):
    job = make_job(tmp_path, "job", {**scripted(model), "prompt": "hi", **inputs})
    assert job.run() == 2, job.log
    errors = [line for line in job.log.splitlines() if needle in line]
    assert errors and "Traceback" not in job.log, job.log
    assert job.outputs()["exit-code"] == "2" and model.requests == []


def test_a_missing_prompt_file_is_one_clear_line(model, tmp_path):
    job = make_job(tmp_path, "job", {**scripted(model), "prompt-file": "missing.md"})
    assert job.run() == 2, job.log
    assert "::error::prompt-file missing.md: no such file in the working directory" in job.log
    assert "No such file or directory" not in job.log and "line " not in job.log  # not bash's own error
    assert "**exit code 2** (a usage or configuration problem): prompt-file missing.md" in job.summary
    assert "provider, server" not in job.summary and job.outputs()["exit-code"] == "2"


def test_a_provider_error_is_printed_once_and_named_plainly(model, tmp_path):
    job = make_job(tmp_path, "job", {"model": "openai:gpt-4.1", "prompt": "hi"})
    assert job.run() != 0
    run_log = job.log.split("--- step Run the request")[1].split("--- step")[0]
    lines = [line for line in run_log.splitlines() if "OPENAI_API_KEY" in line]
    assert len(lines) == 1, run_log
    assert "provider, server" not in job.summary


def test_max_cost_output_schema_and_mode_inputs(model, tmp_path):
    schema = tmp_path / "job" / "workspace" / "schema.json"
    model.set_script({"turns": [{"steps": [{"text": '{"verdict": "maybe"}'}, {"usage": {"cost": 0.01}}]}]})
    job = make_job(tmp_path, "job", {**scripted(model), "prompt": "judge", "output-schema": "schema.json",
                                      "max-cost": "1", "mode": "plan"})
    schema.write_text(json.dumps({"type": "object", "properties": {"verdict": {"enum": ["ok", "bad"]}}}))
    assert job.run() == 7, job.log
    assert job.outputs()["exit-code"] == "7" and "(the answer does not match output-schema)" in job.summary
    assert "the shell's sandbox:" in job.log  # the sandbox step ran (and said what it found)
