"""Ignore and attribute files that are not regular files never hang `run`: over the real
`run` (its own snapshot reads ignore files; the server's checkpoints run git over the
workspace), a `.gitignore` that is a FIFO, a link to one, a nested one, `.git/info/exclude`
variants, `.gitattributes` and an endless device: the answer comes, quickly, and the files
are named in a warning. And `--timeout` bounds the whole run."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from tests.clients.cli_support import run_cli, scripted_args

HELLO = {"turns": [{"steps": [{"text": "Hello from the scripted model.", "chunks": 2}]}]}
BOUND = 20.0  # seconds for the whole run: far below git's own 60 s timeout (and the 30 s lock wait)


def _special(kind: str, workspace: Path) -> str:
    """Make the hostile file; returns the name a warning should carry."""

    (workspace / ".git" / "info").mkdir(parents=True)
    (workspace / "sub").mkdir()
    (workspace / "sub" / "code.py").write_text("x = 1\n")
    if kind == "fifo":
        os.mkfifo(workspace / ".gitignore")
        return ".gitignore"
    if kind == "link-to-fifo":
        os.mkfifo(workspace / "pipe")
        (workspace / ".gitignore").symlink_to("pipe")
        return ".gitignore"
    if kind == "link-to-outside-fifo":
        os.mkfifo(workspace.parent / "pipe")
        (workspace / ".gitignore").symlink_to(workspace.parent / "pipe")
        return ".gitignore"
    if kind == "nested-fifo":
        os.mkfifo(workspace / "sub" / ".gitignore")
        return "sub/.gitignore"
    if kind == "exclude-fifo":
        os.mkfifo(workspace / ".git" / "info" / "exclude")
        return ".git/info/exclude"
    if kind == "exclude-link-to-fifo":
        os.mkfifo(workspace / "pipe")
        (workspace / ".git" / "info" / "exclude").symlink_to("../../pipe")
        return ".git/info/exclude"
    if kind == "gitattributes-fifo":
        os.mkfifo(workspace / "sub" / ".gitattributes")
        return "sub/.gitattributes"
    if kind == "link-to-dev-zero":
        (workspace / ".gitignore").symlink_to("/dev/zero")
        return ".gitignore"
    raise AssertionError(kind)


KINDS = ["fifo", "link-to-fifo", "link-to-outside-fifo", "nested-fifo", "exclude-fifo", "exclude-link-to-fifo",
         "gitattributes-fifo", "link-to-dev-zero"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_special_ignore_file_never_hangs_run(model, workspace, home, kind):
    name = _special(kind, workspace)
    model.set_script(HELLO)
    started = time.monotonic()
    done = run_cli(["run", *scripted_args(model.chat_url, workspace, "--timeout", "30"), "hi"], home=home, timeout=BOUND)
    took = time.monotonic() - started
    assert done.code == 0, done.stderr
    assert "Hello from the scripted model." in done.stdout
    assert took < BOUND
    assert name in done.stderr, done.stderr  # named: the run's warning, or the server's checkpoint note


def test_timeout_bounds_the_whole_run_start_up_waits_included(model, workspace, home, tmp_path):
    """An MCP server of --mcp-config that never finishes starting: `run` waits for it before
    the request (up to 40 s); `--timeout 3` still ends the whole run within 3 + 15 s."""

    config = tmp_path / "mcp.json"
    pid_file = tmp_path / "stuck.pid"
    stuck = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    config.write_text(json.dumps({"mcpServers": {"stuck": {"command": sys.executable, "args": ["-c", stuck]}}}))
    model.set_script(HELLO)
    started = time.monotonic()
    done = run_cli(["run", *scripted_args(model.chat_url, workspace, "--timeout", "3", "--mcp-config", str(config)), "hi"],
                   home=home, timeout=60)
    took = time.monotonic() - started
    if pid_file.exists():  # an MCP server's own session outlives the run (not this test's subject)
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert done.code == 124, done.stderr
    assert took < 3 + 15 + 5, took
    assert "--timeout 3" in done.stderr
