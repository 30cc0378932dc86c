"""What a person sees: the plugin with a bad setting in a real Neovim in a terminal (tmux).
The server's warning shows once, in one line, with no hit-enter prompt and no Lua error, also
on a screen narrower than the warning (issue 17; issue 32, item 3); it stays whole in the
answer buffer as a note."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

from .test_neovim import NVIM, REPO, _version

pytestmark = pytest.mark.neovim

INIT = Path(__file__).with_name("nvim_tmux_init.lua")
TMUX = shutil.which("tmux")


def tmux(*args: str) -> str:
    return subprocess.run([TMUX, *args], capture_output=True, text=True, timeout=30, check=True).stdout


def wait_for(condition, timeout: float, what: str, session: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)  # polling the pane; the condition decides, not the time
    raise AssertionError(f"timed out waiting for {what}; the screen:\n{tmux('capture-pane', '-p', '-t', session)}")


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
@pytest.mark.parametrize("columns", [120, 50])
def test_a_bad_setting_in_a_terminal_shows_one_warning_and_no_error(tmp_path, workspace, home, columns):
    if NVIM is None or _version(NVIM) < (0, 11):
        pytest.skip("Neovim 0.11 is not installed")
    out = tmp_path / "messages.txt"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("TUNACODE_")}
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = str(tmp_path / var.lower())
    session = f"tuna-{uuid.uuid4().hex[:8]}"
    with ScriptedModelServer({"turns": []}) as model:
        env.update({"TUNACODE_HOME": str(home), "TUNA_OUT": str(out), "TUNA_RTP": str(REPO / "client-nvim"),
                    "TUNA_PYTHON": sys.executable, "TUNA_MODEL_URL": model.chat_url, "TERM": "xterm-256color"})
        exports = " ".join(f"{k}={subprocess.list2cmdline([v])}" for k, v in env.items()
                           if k.startswith(("TUNA", "XDG_")) or k == "TERM")
        tmux("new-session", "-d", "-s", session, "-x", str(columns), "-y", "30", "-c", str(workspace),
             f"env {exports} {NVIM} --clean -u {INIT}")
        try:
            wait_for(out.exists, 30, "the server to answer tunacode.status", session)
            screen = wait_for(lambda: (s := tmux("capture-pane", "-p", "-t", session)) and "tunacode.approval" in s and s,
                              10, "the warning on the screen", session)
            tmux("send-keys", "-t", session, ":echo 'still here'", "Enter")  # a prompt would eat this
            after = wait_for(lambda: (s := tmux("capture-pane", "-p", "-t", session)) and "still here" in s and s,
                             10, "the command line to answer", session)
        finally:
            subprocess.run([TMUX, "kill-session", "-t", session], capture_output=True, timeout=30)
    seen = json.loads(out.read_text())
    messages = seen["messages"]
    assert messages.count("TunaCode: tunacode.approval") == 1, messages
    warning = next(line for line in seen["answer"] if line.startswith("[note] tunacode.approval: expected one of"))
    assert "sometimes" in warning, seen["answer"]  # whole in the answer buffer
    assert "Error executing" not in messages and "already closing" not in messages, messages
    assert screen.count("tunacode.approval") == 1, screen
    assert "Press ENTER" not in screen and "Error" not in screen, screen
    assert "Press ENTER" not in after, after
