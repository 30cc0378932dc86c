"""What a person sees during a request in a real Neovim in a terminal (tmux), with the plugin,
the real server and the scripted model: a shell command rewrites a file whose buffer holds
the user's unsaved edits and another whose buffer is clean. No W12 question stops the
answer: the clean buffer is reloaded, the user's text is kept with a notice; and every
window's statusline shows the request's end without an autocmd of the user's (issue 32,
items 4 and 5)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

from .test_neovim import NVIM, _version
from .test_neovim_tmux import TMUX, editor_env, screen, start, stop, tmux, wait_for

pytestmark = pytest.mark.neovim

INIT = Path(__file__).with_name("nvim_tmux_request_init.lua")
REWRITE = "printf 'X = 2\\n' > calc.py; printf 'new notes\\n' > notes.txt"
SCRIPT = {"turns": [{"steps": [{"tool_call": {"name": "bash", "arguments": {"command": REWRITE}}}]},
                    {"text": "Rewrote both."}]}


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
def test_a_command_rewrites_open_files_no_w12_and_statuslines_follow(tmp_path, workspace, home):
    if NVIM is None or _version(NVIM) < (0, 11):
        pytest.skip("Neovim 0.11 is not installed")
    (workspace / "calc.py").write_text("X = 1\n")
    (workspace / "notes.txt").write_text("notes\n")
    out = tmp_path / "dump.json"
    session = f"tuna-{uuid.uuid4().hex[:8]}"
    with ScriptedModelServer(SCRIPT) as model:
        start(session, workspace, f"{editor_env(tmp_path, home, model, TUNA_OUT=str(out))} {NVIM} --clean -u {INIT} "
              "-o calc.py notes.txt", rows=40)
        try:
            wait_for(lambda: "notes.txt" in screen(session), 10, "Neovim", session)
            tmux("send-keys", "-t", session, "O# mine", "Escape")  # an unsaved edit in calc.py
            wait_for(lambda: "# mine" in screen(session), 10, "the edit", session)
            tmux("send-keys", "-t", session, ":TunaAsk rewrite both", "Enter")
            shown = wait_for(lambda: (s := screen(session)) and "-- end_turn" in s and s, 30,
                             "the answer's end (a W12 question would stop it)", session)
            shown = wait_for(lambda: (s := screen(session)) and s.count("TunaCode: end_turn") >= 3 and s, 10,
                             "every window's statusline to show the end", session)
            tmux("send-keys", "-t", session, ":lua TunaDump()", "Enter")
            wait_for(out.exists, 10, "the dump", session)
        finally:
            stop(session)
    seen = json.loads(out.read_text())
    assert "W12" not in shown and "has changed" not in shown and "Press ENTER" not in shown, shown
    assert "W12" not in seen["messages"], seen["messages"]
    assert seen["buffers"]["notes.txt"] == {"lines": ["new notes"], "modified": False}  # reloaded
    assert seen["buffers"]["calc.py"] == {"lines": ["# mine", "X = 1"], "modified": True}  # the user's text kept
    assert (workspace / "calc.py").read_text() == "X = 2\n"
    note = "[note] calc.py changed on disk while its buffer has your unsaved edits: your text is kept " \
        "(:e! loads the file, :w writes yours over it)"
    assert note in seen["answer"], seen["answer"]
    assert "Rewrote both." in seen["answer"]
