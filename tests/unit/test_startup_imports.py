"""Start-up stays light: the LSP server module (what an editor's spawn waits for) and the ACP
front end load the agent's heavy dependencies (tinyagent, pydantic, httpx, jsonschema, the MCP
SDK) only with the first request. A module-level import that pulls them in costs ~0.3 s of
every editor start (docs/performance.md, spawn -> initialize)."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

HEAVY = ("tinyagent", "pydantic", "httpx", "jsonschema", "mcp", "anthropic", "openai", "httpx2", "boto3", "google")
# the provider SDKs, and the agent's, MCP's and ACP's modules: loaded on first use only
FIRST_USE = (*HEAVY, "google.genai", "acp", "tunacode_lsp.acp", "tunacode_lsp.agent.runner",
             "tunacode_lsp.agent.provider.stream", "tunacode_lsp.agent.provider.sdk_stream", "tunacode_lsp.agent.mcp.manager", "tunacode_lsp.lsp.sink")


@pytest.mark.parametrize("module", ["tunacode_lsp.lsp.server", "tunacode_lsp.cli.run"])
def test_the_entry_module_loads_no_heavy_dependency(module):
    code = f"import sys, json, {module}; print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []


def test_the_runner_loads_no_provider_sdk_before_a_call():
    """The provider SDKs load on the first call that needs them, not with the agent."""

    code = (
        "import sys, json, tunacode_lsp.agent.runner, tunacode_lsp.agent.provider.stream; "
        "print(json.dumps(sorted(m for m in ('anthropic', 'openai', 'httpx2') if m in sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_an_idle_server_after_initialize_and_status_has_loaded_no_agent_or_provider_module(tmp_path: Path):
    """The real server over stdio, `-X importtime` listing every module it imported: through
    `initialize`, `initialized` (settings, the start-up checkpoint) and a `tunacode.status`,
    then shut down. An idle server holds none of the agent's heavy modules (issue 35: idle
    RSS <= 1.2x a process with pygls + lsprotocol; they were imported on a worker thread
    once the client was initialized, ~15 MB)."""

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "main.py").write_text("print('hi')\n")
    uri = workspace.as_uri()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUNACODE_")}
    env["TUNACODE_HOME"] = str(tmp_path / "home")
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": uri, "capabilities": {}, "workspaceFolders": [{"uri": uri, "name": "ws"}]}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand",
         "params": {"command": "tunacode.status", "arguments": []}},
    ]
    process = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "tunacode_lsp"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=workspace)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b"".join(_frame(m) for m in messages))
    process.stdin.flush()
    seen = b""
    deadline = time.monotonic() + 60
    while not re.search(rb'"id":\s*2\b', seen):  # the status answer
        ready, _, _ = select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            process.kill()
            raise AssertionError(f"no answer to tunacode.status within 60 s: {seen[-500:]!r}")
        chunk = os.read(process.stdout.fileno(), 65536)
        assert chunk, "the server closed its output before answering tunacode.status"
        seen += chunk
    process.stdin.write(_frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}) + _frame({"jsonrpc": "2.0", "method": "exit"}))
    process.stdin.flush()
    _, err = process.communicate(timeout=60)
    loaded = {line.split("|")[-1].strip() for line in err.decode("utf-8", "replace").splitlines() if line.startswith("import time:")}
    assert "tunacode_lsp.lsp.server" in loaded  # the listing works
    assert sorted(m for m in loaded if m in FIRST_USE or m.split(".")[0] in HEAVY) == []
    assert "argparse" not in loaded  # started without arguments: no parser (cli/main.py SERVE_DEFAULTS)


def test_the_run_client_loads_nothing_heavy_before_it_spawns_the_server():
    """`tunacode-lsp run` spawns the server once its arguments are checked; what it imports
    before (the command line, the log redaction, the argument checks) is on the critical path
    of every run: no attrs (~20 ms), no asyncio, no contract, no agent, no logging (~15 ms: the
    log redaction is installed right after the spawn, cli/run.py)."""

    code = ("import sys, json, tunacode_lsp.cli.main, tunacode_lsp.cli.run, tunacode_lsp.cli.inputs, "
            "tunacode_lsp.store.locations; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('attr', 'attrs', 'asyncio', 'cattrs', 'logging') "
            "or m.startswith(('tunacode_lsp.contract', 'tunacode_lsp.agent', 'tunacode_lsp.lsp')))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []


@pytest.mark.parametrize("args", [
    ["hi"],
    ["--settings", '{"maxTurns": 3}', "hi"],
    ["--settings", '{"shellSandbox": "required"}', "hi"],
    ["--output-schema", "SCHEMA", "hi"],
])
def test_the_run_client_redacts_its_logs_before_anything_can_log(tmp_path: Path, args: list[str]):
    """cli/main.py leaves the log redaction to `run`, which installs it after the spawn; a check
    before the spawn that imports modules that log (settings, the sandbox, a schema) installs it
    first. In a fresh process: the checks of `run`, then whether `logging` was imported and
    whether every log record is redacted."""

    schema = tmp_path / "schema.json"
    schema.write_text('{"type": "object"}')
    argv = [str(schema) if a == "SCHEMA" else a for a in args]
    code = "\n".join([
        "import json, os, sys",
        "from tunacode_lsp.cli import run",
        f"opts = run.parse_args({argv!r})",
        "try:",
        "    run.check_configuration(opts, os.environ)",
        "except run.UsageError:",
        "    pass",
        "seen = 'logging' in sys.modules",
        "import logging",
        "print(json.dumps([seen, getattr(logging.getLogRecordFactory(), 'redacting', False)]))",
    ])
    env = {**os.environ, "TUNACODE_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                          cwd=tmp_path, env=env)
    imported, redacting = json.loads(done.stdout)
    assert redacting is imported  # redacted whenever something could log; nothing imported for a plain run
    if args == ["hi"]:
        assert imported is False


def test_a_run_ends_with_its_client_log_redacted(model, workspace: Path, home: Path):
    """The whole `run` against the scripted model, in a fresh process through cli/main.py: its
    client installed the log redaction (after the spawn)."""

    model.set_script({"turns": [{"text": "Done."}]})
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUNACODE_")}
    env["TUNACODE_HOME"] = str(home)
    argv = ["run", "--model", "openai-compatible:scripted", "--base-url", model.chat_url, "--cwd", str(workspace), "hi"]
    code = ("import sys, json, logging; from tunacode_lsp.cli.main import main; "
            f"code = main({argv!r}); "
            "print(json.dumps([code, getattr(logging.getLogRecordFactory(), 'redacting', False)]), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                          cwd=workspace)
    assert json.loads(done.stderr.strip().splitlines()[-1]) == [0, True], done.stderr[-2000:]
    assert done.stdout.strip() == "Done."


def test_the_run_client_loads_no_wire_type_while_the_server_starts():
    """The headless client (cli/headless.py) is imported while the server starts, on the same
    cores: it speaks the contract's names (contract/names.py), not its attrs types, and loads
    pathspec only in its snapshot's thread."""

    code = ("import sys, json, tunacode_lsp.cli.main, tunacode_lsp.cli.run, tunacode_lsp.cli.headless; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('attr', 'attrs', 'cattrs', 'pathspec', 'pygls', 'lsprotocol', 'jsonschema') "
            "or m.startswith(('tunacode_lsp.contract.protocol', 'tunacode_lsp.agent', 'tunacode_lsp.lsp')))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []


def test_a_request_start_loads_no_json_schema_validator():
    """A request builds its tools; their argument schemas are checked on each tool's first
    call (tools/base.py), so jsonschema (~20 ms) and the schema checks (~20 ms) are no part
    of a request's start. Nor pathspec (~7 ms): grep's and list_files's glob loads it."""

    code = ("import sys, json, pathlib, tempfile, tunacode_lsp.agent.runner, tunacode_lsp.lsp.server; "
            "from tunacode_lsp.tools import build_tools; build_tools(pathlib.Path(tempfile.mkdtemp()), apply_patch=True); "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('jsonschema', 'referencing', 'pathspec'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []


# what `initialize` does not need: the wire types, the command handlers, the services behind
# them (sessions, requests, checkpoints, the models catalog) and MCP's configuration
BEFORE_INITIALIZE_NOT = ("tunacode_lsp.contract.protocol", "tunacode_lsp.lsp.commands", "tunacode_lsp.lsp.runs",
                         "tunacode_lsp.lsp.mcp", "tunacode_lsp.lsp.snapshot_progress", "tunacode_lsp.agent.runs",
                         "tunacode_lsp.agent.sessions", "tunacode_lsp.agent.models", "tunacode_lsp.agent.checkpoints",
                         "tunacode_lsp.agent.shadow_repo", "tunacode_lsp.agent.mcp.config", "tunacode_lsp.core.history")


def test_the_server_module_loads_only_what_initialize_needs():
    """The server module (imported, its server built, before `initialize` can be answered)
    registers every command by name; the handlers, the wire types (~65 attrs classes, ~25 ms)
    and the services load with the first command (issue 35: spawn -> initialize <= 1.05x a
    bare pygls server)."""

    code = ("import sys, json, tunacode_lsp.lsp.server; "
            f"print(json.dumps(sorted(m for m in {BEFORE_INITIALIZE_NOT!r} if m in sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []


def test_every_contract_command_is_registered_with_its_handler():
    from tunacode_lsp.contract import names, protocol
    from tunacode_lsp.lsp.commands import HANDLERS
    from tunacode_lsp.lsp.server import server

    constants = [n for n in vars(names) if n.isupper() and n != "COMMAND_NAMES"]
    assert {n: getattr(names, n) for n in constants} == {n: getattr(protocol, n) for n in constants}
    contract_commands = {v for n, v in vars(protocol).items() if n.startswith("COMMAND_")}
    assert set(names.COMMAND_NAMES) == contract_commands == set(HANDLERS) == set(server.protocol.fm.commands)
    assert len(names.COMMAND_NAMES) == len(set(names.COMMAND_NAMES))


_SPAWN_PROBE = """
import json, os, sys
events = []
def hook(event, args):
    if event == "subprocess.Popen" and "tunacode_lsp" in list(args[1]):
        events.append(["spawn", os.path.realpath(args[2] or ".")])
    elif event == "import" and args[0] in ("argparse", "typing", "tunacode_lsp.cli.run"):
        events.append(["import", args[0]])
sys.addaudithook(hook)
from tunacode_lsp.cli.main import main
try:
    code = main(ARGV)
except SystemExit as exc:
    code = exc.code
try:
    os.waitpid(-1, os.WNOHANG)
    children = True
except ChildProcessError:
    children = False
print(json.dumps({"code": code, "events": events, "children": children}), file=sys.stderr)
"""


def _run_main(argv: list[str], cwd: Path, home: Path) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUNACODE_")}
    env["TUNACODE_HOME"] = str(home)
    done = subprocess.run([sys.executable, "-c", _SPAWN_PROBE.replace("ARGV", repr(argv))], capture_output=True,
                          text=True, timeout=120, env=env, cwd=cwd)
    return json.loads(done.stderr.strip().splitlines()[-1]), done.stdout


def test_run_spawns_its_server_before_its_own_imports(model, workspace: Path, home: Path, tmp_path: Path):
    """cli/main.py starts `run`'s server (cli/spawn.py) before run's argparse, typing and
    checks are imported (~20 ms of every run's path to the spawn); the run uses it."""

    model.set_script({"turns": [{"text": "Done."}]})
    argv = ["run", "--model", "openai-compatible:scripted", "--base-url", model.chat_url, "--cwd", str(workspace), "hi"]
    probe, out = _run_main(argv, tmp_path, home)
    assert probe["code"] == 0 and out.strip() == "Done."
    events = probe["events"]
    assert events[0] == ["spawn", os.path.realpath(workspace)]  # first, and the only one
    assert [e for e in events if e[0] == "spawn"] == [events[0]]
    assert {"argparse", "typing", "tunacode_lsp.cli.run"} <= {e[1] for e in events if e[0] == "import"}
    assert probe["children"] is False  # the server was reaped


def test_a_server_started_in_another_folder_is_replaced(model, workspace: Path, home: Path, tmp_path: Path):
    """The early spawn guesses the folder from a literal --cwd; argparse also takes `--cw`. The
    guess (the current folder) is killed and reaped, and a server starts in the parsed folder."""

    model.set_script({"turns": [{"text": "Done."}]})
    argv = ["run", "--model", "openai-compatible:scripted", "--base-url", model.chat_url, "--cw", str(workspace), "hi"]
    probe, out = _run_main(argv, tmp_path, home)
    assert probe["code"] == 0 and out.strip() == "Done."
    spawns = [e[1] for e in probe["events"] if e[0] == "spawn"]
    assert spawns == [os.path.realpath(tmp_path), os.path.realpath(workspace)]
    assert probe["children"] is False


@pytest.mark.parametrize(("args", "code", "spawned"), [
    (["--max-turns", "0", "hi"], 2, True),  # a usage error: the early server is killed and reaped
    (["--help"], 0, False),  # no server for --help
    (["--cwd", "/nonexistent-folder", "hi"], 2, False),  # nowhere to start it: the parse says why
])
def test_an_early_server_never_outlives_a_run_that_does_not_use_it(args, code, spawned, tmp_path: Path):
    probe, _ = _run_main(["run", *args], tmp_path, tmp_path / "home")
    assert probe["code"] == code
    assert any(e[0] == "spawn" for e in probe["events"]) is spawned
    assert probe["children"] is False
