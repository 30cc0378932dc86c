"""`tunacode-lsp run` and the workspace's `.mcp.json`, the real CLI as a subprocess: a
workspace server starts only with `--trust-workspace` (`--approve auto` never implies it),
with one notice naming it otherwise; and a Ctrl-C while `run` waits for `--mcp-config`
servers leaves no process of theirs behind."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from pathlib import Path

from tests.clients.cli_support import CliProcess, run_cli, scripted_args
from tests.mcp.test_workspace_consent import SECRET, SERVE, TREE, _alive

DONE = {"turns": [{"steps": [{"text": "Done."}]}]}


def _workspace_server(workspace: Path, marker: Path) -> None:
    (workspace / "serve.py").write_text(SERVE)
    entry = {"command": sys.executable, "args": ["serve.py"],
             "env": {"TREE_SERVER": TREE, "MARKER_FILE": str(marker), "SEEN": "${TUNA_TEST_SECRET}"}}
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"wsdemo": entry}}))


def _poll(predicate, timeout: float = 30.0) -> bool:
    """Until predicate() (files, /proc), bounded."""

    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        threading.Event().wait(0.05)
    return bool(predicate())


def _env(home: Path) -> dict[str, str]:
    from tests.clients.cli_support import cli_env

    return cli_env(home, TUNA_TEST_SECRET=SECRET)


def test_approve_auto_does_not_start_a_workspace_server(model, workspace, home, tmp_path):
    marker = tmp_path / "started.json"
    _workspace_server(workspace, marker)
    model.set_script(DONE)
    done = run_cli(["run", *scripted_args(model.chat_url, workspace, "--approve", "auto"), "hi"], home=home, env=_env(home))
    assert done.code == 0, done.stderr
    assert not marker.exists()  # never started
    notices = [line for line in done.stderr.splitlines() if "wsdemo" in line]
    assert len(notices) == 1 and "skipped" in notices[0] and "--trust-workspace" in notices[0], done.stderr
    assert SECRET not in done.stderr
    assert not any(t["function"]["name"].startswith("mcp__wsdemo") for t in model.requests[0].get("tools", []))


def test_trust_workspace_starts_it_and_says_what_it_trusted(model, workspace, home, tmp_path):
    marker = tmp_path / "started.json"
    _workspace_server(workspace, marker)
    model.set_script(DONE)
    args = ["run", *scripted_args(model.chat_url, workspace, "--trust-workspace"), "hi"]
    done = run_cli(args, home=home, env=_env(home))
    assert done.code == 0, done.stderr
    assert json.loads(marker.read_text())["seen"] == SECRET  # the prompt named it; trusted: expanded
    assert "mcp__wsdemo__echo" in [t["function"]["name"] for t in model.requests[0]["tools"]]  # ready before the request
    assert "Expands from your environment: TUNA_TEST_SECRET" in done.stderr and "-> Allow (--trust-workspace)" in done.stderr
    assert SECRET not in done.stderr

    # a headless answer is not remembered: without the flag the next run skips it again
    marker.unlink()
    model.set_script(DONE)
    again = run_cli(["run", *scripted_args(model.chat_url, workspace), "hi"], home=home, env=_env(home))
    assert again.code == 0 and not marker.exists() and "skipped" in again.stderr


def test_ctrl_c_while_waiting_for_mcp_servers_leaves_nothing(model, workspace, home, tmp_path):
    pidfile, marker = tmp_path / "helper.pid", tmp_path / "marker.json"
    config = tmp_path / "mcp.json"
    env = {"HELPER_PIDFILE": str(pidfile), "MARKER_FILE": str(marker), "HANG": "1"}
    config.write_text(json.dumps({"mcpServers": {"slow": {"command": sys.executable, "args": [TREE], "env": env}}}))
    model.set_script(DONE)
    cli = CliProcess(["run", *scripted_args(model.chat_url, workspace, "--mcp-config", str(config)), "hi"], home=home)
    try:
        assert _poll(lambda: (marker.exists() and marker.read_text() != "" and pidfile.exists()) or cli.proc.poll() is not None)
        assert cli.proc.poll() is None, "".join(cli.err_lines)
        server, helper = json.loads(marker.read_text())["pid"], int(pidfile.read_text())
        cli.proc.send_signal(signal.SIGINT)
        done = cli.finish()
        assert done.code == 130, done.stderr
    finally:
        if cli.proc.poll() is None:
            cli.proc.kill()
    for pid in (server, helper):
        assert _poll(lambda pid=pid: not _alive(pid)), f"process {pid} outlived the run"


def test_run_does_not_use_a_remembered_consent(model, workspace, home, tmp_path):
    """An answer remembered for the exact definition (as an editor stores it) starts nothing in `run`."""

    import asyncio

    from tunacode_lsp.agent.mcp.config import parse_servers, read_workspace_file
    from tunacode_lsp.agent.mcp.consent import KIND, consent_request_for
    from tunacode_lsp.store.consent_store import CONSENT_FILENAME, ConsentStore
    from tunacode_lsp.store.locations import project_id_for

    marker = tmp_path / "started.json"
    _workspace_server(workspace, marker)
    raw, _ = read_workspace_file(workspace)
    spec = parse_servers(raw, "workspace")[0][0]
    request = asyncio.run(consent_request_for(spec, workspace))
    ConsentStore(home / CONSENT_FILENAME).record(project_id_for(workspace), KIND, spec.name, request.fingerprint, True)
    model.set_script(DONE)
    done = run_cli(["run", *scripted_args(model.chat_url, workspace, "--approve", "auto"), "hi"], home=home, env=_env(home))
    assert done.code == 0 and not marker.exists() and "skipped" in done.stderr, done.stderr


def test_the_action_input_trust_workspace(model, tmp_path):
    """action.yml: `approve: auto` alone starts nothing the checkout defines; `trust-workspace: true` does."""

    from tests.clients.test_action import make_job, scripted

    for name, extra, started in (("pr", {}, False), ("own", {"trust-workspace": "true"}, True)):
        marker = tmp_path / f"{name}-started.json"
        model.set_script(DONE)
        job = make_job(tmp_path, name, {**scripted(model), "prompt": "hi", "approve": "auto", **extra})
        _workspace_server(job.workspace, marker)
        assert job.run() == 0, job.log
        assert marker.exists() == started, job.log
        assert ("skipped: The workspace file .mcp.json defines the MCP server 'wsdemo'" in job.log) != started
