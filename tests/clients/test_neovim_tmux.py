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


def editor_env(tmp_path: Path, home: Path, model: ScriptedModelServer, **extra: str) -> str:
    """The `env NAME=value ...` words that start an editor in tmux: clean XDG folders, the
    store in `home`, the venv's programs (tunacode-lsp) first on PATH, no provider key."""

    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("TUNACODE_")}
    env.update({f"XDG_{name}_HOME": str(tmp_path / f"xdg_{name.lower()}_home") for name in ("CONFIG", "DATA", "STATE",
                                                                                           "CACHE")})
    env.update({"TUNACODE_HOME": str(home), "TUNA_RTP": str(REPO / "client-nvim"), "TUNA_PYTHON": sys.executable,
                "TUNA_MODEL_URL": model.chat_url, "TERM": "xterm-256color",
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", **extra})
    return "env " + " ".join(f"{k}={subprocess.list2cmdline([v])}" for k, v in env.items()
                             if k.startswith(("TUNA", "XDG_")) or k in ("TERM", "PATH", "HOME") or k in extra)


def start(session: str, workspace: Path, command: str, columns: int = 120, rows: int = 30) -> None:
    tmux("new-session", "-d", "-s", session, "-x", str(columns), "-y", str(rows), "-c", str(workspace), command)


def screen(session: str) -> str:
    return tmux("capture-pane", "-p", "-t", session)


def stop(session: str) -> None:
    subprocess.run([TMUX, "kill-session", "-t", session], capture_output=True, timeout=30)


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
    session = f"tuna-{uuid.uuid4().hex[:8]}"
    with ScriptedModelServer({"turns": []}) as model:
        start(session, workspace, f"{editor_env(tmp_path, home, model, TUNA_OUT=str(out))} {NVIM} --clean -u {INIT}",
              columns)
        try:
            wait_for(out.exists, 30, "the server to answer tunacode.status", session)
            shown = wait_for(lambda: (s := screen(session)) and "tunacode.approval" in s and s,
                             10, "the warning on the screen", session)
            tmux("send-keys", "-t", session, ":echo 'still here'", "Enter")  # a prompt would eat this
            after = wait_for(lambda: (s := screen(session)) and "still here" in s and s,
                             10, "the command line to answer", session)
        finally:
            stop(session)
    seen = json.loads(out.read_text())
    messages = seen["messages"]
    assert messages.count("TunaCode: tunacode.approval") == 1, messages
    warning = next(line for line in seen["answer"] if line.startswith("[note] tunacode.approval: expected one of"))
    assert "sometimes" in warning, seen["answer"]  # whole in the answer buffer
    assert "Error executing" not in messages and "already closing" not in messages, messages
    assert shown.count("tunacode.approval") == 1, shown
    assert "Press ENTER" not in shown and "Error" not in shown, shown
    assert "Press ENTER" not in after, after
