"""`tunacode-lsp run --settings/--settings-file/--max-cost/--output-schema` end to end: the real
CLI as a subprocess, the real server under it, the scripted model on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.clients.cli_support import run_cli, scripted_args


def _args(model, workspace: Path, prompt: str, *extra: str) -> list[str]:
    return ["run", *scripted_args(model.chat_url, workspace, *extra), prompt]


def _read_call(cost: float) -> dict:
    return {"steps": [{"tool_call": {"name": "read_file", "arguments": {"filepath": "a.txt"}}}, {"usage": {"cost": cost}}]}


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--settings", '{"maxRetries": 50}'], "tunacode.maxRetries"),
        (["--settings", '{"shellSandbox": "always"}'], "tunacode.shellSandbox"),
        (["--settings", '{"maxRetrys": 5}'], "unknown setting 'maxRetrys'"),
        (["--settings", "[1]"], "expected a JSON object"),
        (["--settings", "{nope"], "not JSON"),
        (["--settings", '{"approval": "auto"}'], "--approve"),
        (["--settings", '{"permissions": {"allow": ["bash(("]}}'], "permissions.allow"),
        (["--settings-file", "/nonexistent/s.json"], "cannot read it"),
        (["--max-cost", "0"], "--max-cost must be"),
        (["--output-schema", "/nonexistent/schema.json"], "cannot read it"),
    ],
)
def test_bad_settings_cost_or_schema_flags_are_exit_2_in_one_line(model, workspace, home, flags, needle):
    done = run_cli(_args(model, workspace, "hi", *flags), home=home)
    assert done.code == 2, done.stderr
    assert needle in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr and model.requests == []


def test_an_invalid_schema_file_is_exit_2(model, workspace, home, tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_text('{"type": "nonsense"}')
    done = run_cli(_args(model, workspace, "hi", "--output-schema", str(schema)), home=home)
    assert done.code == 2 and "not a valid JSON Schema" in done.stderr, done.stderr


def test_settings_reach_the_server(model, workspace, home, tmp_path):
    """maxRetries 0 from --settings-file: a 500 is not retried (the default retries it)."""

    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"maxRetries": 0, "permissions": {"deny": ["read_file"]}}))
    (workspace / "a.txt").write_text("secret\n")
    model.set_script({"turns": [_read_call(0.0), {"steps": [{"text": "Done."}]}]})
    done = run_cli(_args(model, workspace, "read a.txt", "--json", "--approve", "auto", "--settings-file", str(settings)),
                   home=home)
    assert done.code == 0, done.stderr
    result = done.lines[-1]
    assert [d["name"] for d in result["deniedToolCalls"]] == ["read_file"]  # the deny rule applied
    model.set_script({"turns": [{"steps": [{"error": {"status": 500}}]}, {"steps": [{"text": "retried"}]}]})
    before = len(model.requests)
    done = run_cli(_args(model, workspace, "hi", "--settings", '{"maxRetries": 0}'), home=home)
    assert done.code == 1 and len(model.requests) == before + 1, done.stderr


def test_max_cost_stops_before_the_call_that_would_pass_it(model, workspace, home):
    (workspace / "a.txt").write_text("a\n")
    model.set_script({"turns": [_read_call(0.6), _read_call(0.6), {"steps": [{"text": "never"}]}]})
    done = run_cli(_args(model, workspace, "read it", "--json", "--max-cost", "1.0"), home=home)
    assert done.code == 6, done.stderr
    result = done.lines[-1]
    assert result["maxCostReached"] is True and result["stopReason"] == "max_cost"
    assert "never" not in done.stdout
    # the server checks before each call: after the first (0.6 + a predicted 0.6 > 1.0) no other starts
    assert len(model.requests) == 1
    assert result["usage"]["cost"] == 0.6


def test_max_cost_not_reached_is_exit_0(model, workspace, home):
    model.set_script({"turns": [{"steps": [{"text": "cheap"}, {"usage": {"cost": 0.01}}]}]})
    done = run_cli(_args(model, workspace, "hi", "--max-cost", "1"), home=home)
    assert done.code == 0 and done.stdout.strip() == "cheap", done.stderr


def test_output_schema_checks_the_answer(model, workspace, home, tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "object", "required": ["verdict"],
                                  "properties": {"verdict": {"enum": ["ok", "bad"]}}}))
    model.set_script({"turns": [{"steps": [{"text": '```json\n{"verdict": "ok"}\n```'}]}]})
    done = run_cli(_args(model, workspace, "judge", "--output-schema", str(schema)), home=home)
    assert done.code == 0, done.stderr
    model.set_script({"turns": [{"steps": [{"text": '{"verdict": "maybe"}'}]}]})
    done = run_cli(_args(model, workspace, "judge", "--json", "--output-schema", str(schema)), home=home)
    assert done.code == 7, done.stderr
    assert "verdict" in done.lines[-1]["schemaError"] and "error: the answer does not match" in done.stderr
    model.set_script({"turns": [{"steps": [{"text": "it looks fine"}]}]})
    done = run_cli(_args(model, workspace, "judge", "--output-schema", str(schema)), home=home)
    assert done.code == 7 and "the answer is not JSON" in done.stderr


def test_a_required_sandbox_that_cannot_start_fails_the_run_at_once(model, workspace, home, tmp_path):
    """No bwrap on PATH (as on a stock GitHub ubuntu-24.04 runner): exit 2 before any model call."""

    from tests.clients.cli_support import cli_env

    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env = cli_env(home, PATH=str(empty))
    done = run_cli(_args(model, workspace, "hi", "--settings", '{"shellSandbox": "required"}'), home=home, env=env)
    assert done.code == 2, done.stderr
    assert "shellSandbox is required but the sandbox cannot start: bwrap (bubblewrap) is not installed" in done.stderr
    assert model.requests == []


def test_tunacode_model_applies_when_continuing_a_session(model, workspace, home):
    """docs/configuration.md: TUNACODE_MODEL is the model for new requests, a continued session's
    too; the session's recorded model is used only when no model is configured."""

    from tests.clients.cli_support import cli_env

    from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

    model.set_script({"turns": [{"steps": [{"text": "first"}]}, {"steps": [{"text": "third"}]}]})
    first = run_cli(_args(model, workspace, "hi", "--json"), home=home)
    assert first.code == 0, first.stderr
    session = first.lines[-1]["sessionId"]
    other = ScriptedModelServer({"turns": [{"steps": [{"text": "from the other model"}]}]}).start()
    try:
        env = cli_env(home, TUNACODE_MODEL="openai-compatible:other", TUNACODE_BASE_URL=other.chat_url)
        second = run_cli(["run", "--cwd", str(workspace), "--session", session, "again"], home=home, env=env)
        assert second.code == 0, second.stderr
        assert second.stdout.strip() == "from the other model" and len(other.requests) == 1
        assert other.requests[0]["model"] == "other"
    finally:
        other.stop()
    # nothing configured: the session's recorded model (and the base URL given with it) again
    third = run_cli(["run", "--cwd", str(workspace), "--session", session, "--base-url", model.chat_url, "once more"],
                    home=home)
    assert third.code == 0 and third.stdout.strip() == "third", third.stderr


def test_a_server_warning_has_one_prefix(model, workspace, home):
    """window/showMessage from the server ("TunaCode: ..." for an editor's popup) is one CLI line:
    `tunacode-lsp: warning: ...`, not `tunacode-lsp: TunaCode: ...`."""

    (workspace / ".mcp.json").write_text('{"mcpServers": {"x": 5}}')
    model.set_script({"turns": [{"steps": [{"text": "ok"}]}]})
    done = run_cli(_args(model, workspace, "hi"), home=home)
    assert done.code == 0, done.stderr
    assert "tunacode-lsp: warning: .mcp.json mcpServers.x: expected an object; left out" in done.stderr
    assert "TunaCode:" not in done.stderr
