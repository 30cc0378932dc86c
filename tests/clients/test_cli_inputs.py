"""`tunacode-lsp run --context-file / --image / --mcp-config` end to end: the real CLI as a
subprocess, the real server under it, the scripted model on 127.0.0.1, a real MCP server (the
tests' FastMCP demo) started from the file the flag names."""

from __future__ import annotations

import base64
import io
import json
import sys
from pathlib import Path

import pytest
from tests.clients.cli_support import run_cli, scripted_args

from tunacode_lsp.cli import run as cli_run

DEMO_MCP = str(Path(__file__).parents[1] / "mcp" / "demo_server.py")
DONE = {"turns": [{"steps": [{"text": "Done."}]}]}
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def _args(model, workspace: Path, prompt: str, *extra: str) -> list[str]:
    return ["run", *scripted_args(model.chat_url, workspace, *extra), prompt]


def _first_user_text(model) -> str:
    content = [m for m in model.requests[0]["messages"] if m["role"] == "user"][0]["content"]
    return content if isinstance(content, str) else "\n".join(p.get("text", "") for p in content if isinstance(p, dict))


def test_context_files_and_line_ranges_reach_the_model(model, workspace, home):
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n")
    (workspace / "notes.md").write_text("tuna notes\n")
    model.set_script(DONE)
    done = run_cli(_args(model, workspace, "fix it", "--context-file", str(workspace / "calc.py") + ":5-6",
                         "--context-file", str(workspace / "notes.md")), home=home)
    assert done.code == 0, done.stderr
    text = _first_user_text(model)
    assert "Selection in calc.py, lines 5-6:" in text and "def sub(a, b):\n    return a - b" in text
    assert "def add" not in text  # only the lines asked for
    assert "File notes.md (1 line):\n```\ntuna notes\n```" in text  # bug: said 2 lines, with a blank one
    assert text.index("Context from the editor:") < text.index("fix it")


def test_an_image_reaches_the_model_as_image_content(model, workspace, home):
    (workspace / "shot.png").write_bytes(PNG)
    model.set_script(DONE)
    done = run_cli(_args(model, workspace, "what is this", "--image", str(workspace / "shot.png")), home=home)
    assert done.code == 0, done.stderr
    user = [m for m in model.requests[0]["messages"] if m["role"] == "user"][0]["content"]
    images = [p for p in user if isinstance(p, dict) and p.get("type") == "image_url"]
    assert len(images) == 1 and images[0]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()


@pytest.mark.parametrize(
    ("make", "flag", "needle"),
    [
        (lambda d: None, "--context-file={d}/missing.py", "no such file"),
        (lambda d: (d / "a.py").write_text("x\n"), "--context-file={d}/a.py:2-3", "not in the file (1 lines)"),
        (lambda d: (d / "a.py").write_text("x\n"), "--context-file={d}/a.py:0", "not in the file"),
        (lambda d: (d / "fake.png").write_text("not an image"), "--image={d}/fake.png", "not a PNG, JPEG, GIF or WebP"),
        (lambda d: None, "--image={d}/none.png", "cannot read it"),
        (lambda d: (d / "m.json").write_text("{nope"), "--mcp-config={d}/m.json", "not JSON"),
        (lambda d: (d / "m.json").write_text('{"servers": {}}'), "--mcp-config={d}/m.json", '"mcpServers"'),
    ],
)
def test_bad_inputs_exit_2_before_any_server_starts(tmp_path, capsys, monkeypatch, make, flag, needle):
    make(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert cli_run.main([flag.format(d=tmp_path), "--cwd", str(tmp_path), "hi"]) == 2
    err = capsys.readouterr().err
    assert needle in err and flag.split("=")[0] in err, err


def test_context_outside_the_workspace_is_refused_by_the_server(model, workspace, home, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    model.set_script(DONE)
    done = run_cli(_args(model, workspace, "hi", "--context-file", str(outside)), home=home)
    assert done.code == 2 and "params.context[0]" in done.stderr, done.stderr
    assert model.requests == []  # nothing reached the model


def test_mcp_config_starts_the_servers_before_the_request(model, workspace, home, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "demo": {"command": sys.executable, "args": [DEMO_MCP], "env": {"NOTES_DIR": str(notes)}},
        "broken": {"command": str(tmp_path / "no-such-server")},
    }}))
    model.set_script({"turns": [
        {"steps": [{"tool_call": {"name": "mcp__demo__echo", "arguments": {"text": "from ci"}}}]},
        {"steps": [{"text": "Echoed."}]},
    ]})
    done = run_cli(_args(model, workspace, "echo", "--mcp-config", str(config)), home=home)
    assert done.code == 0, done.stderr
    names = [t["function"]["name"] for t in model.requests[0]["tools"]]
    assert "mcp__demo__echo" in names  # ready before the request started
    tool_results = [m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_results == ["echo: from ci"]
    assert "MCP server 'broken' is failed" in done.stderr
