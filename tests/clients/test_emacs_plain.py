"""A plain LSP client in a real editor: Emacs 28 with eglot 1.9 (Debian's emacs-nox and
elpa-eglot) in a terminal (tmux), set up with docs/plain-clients.md's block, against the real
server and the scripted model. `tunacode-ask` starts a detached request through
`eglot-execute-command`; its shell command rewrites calc.py, whose buffer is open and clean;
`tunacode-result` shows the answer once the request has ended.
With `global-auto-revert-mode` the buffer shows the new text by itself and typing asks nothing;
without it, typing asks "changed on disk; really edit the buffer?" (the docs' two claims)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

from .test_neovim_tmux import TMUX, editor_env, screen, start, stop, tmux, wait_for

pytestmark = pytest.mark.neovim  # a real editor in tmux, like the Neovim tests

REPO = Path(__file__).resolve().parents[2]
EMACS = shutil.which("emacs")
NEW = "X = 2  # by the agent\n"  # another size: a check by time and size sees it even within the same second
REWRITE = f"printf '{NEW.strip()}\\n' > calc.py"
SCRIPT = {"turns": [{"steps": [{"tool_call": {"name": "bash", "arguments": {"command": REWRITE}}}]},
                    {"text": "Rewrote it."}, {"text": "Again."}]}


def doc_block(language: str, name: str) -> str:
    """The ```language block after `<!-- plain-test: NAME -->` in docs/plain-clients.md."""

    text = (REPO / "docs" / "plain-clients.md").read_text()
    found = re.search(rf"<!-- plain-test: {name} -->\n```{language}\n(.*?)\n```", text, re.S)
    assert found, f"docs/plain-clients.md has no block {name!r}"
    return found.group(1)


def user_settings(tmp_path: Path, model: ScriptedModelServer) -> dict[str, str]:
    """The settings file plain clients rely on (docs/plain-clients.md): approval auto. The
    model comes from the environment: a detached request checks its model against the
    editor's and the environment's settings only, before the files are read (a server bug,
    reported), so a model set only in the file is refused at once."""

    folder = tmp_path / "xdg_config_home" / "tunacode"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps({"approval": "auto", "shellSandbox": "off"}))
    return {"TUNACODE_MODEL": "openai-compatible:scripted", "TUNACODE_BASE_URL": model.chat_url}


@pytest.mark.skipif(TMUX is None or EMACS is None, reason="tmux or emacs (Debian emacs-nox) is not installed")
@pytest.mark.parametrize("auto_revert", [True, False])
def test_emacs_eglot_buffer_follows_the_servers_write(tmp_path, workspace, home, auto_revert):
    has_eglot = subprocess.run([EMACS, "-q", "--batch", "--eval", "(require 'eglot)"], capture_output=True, timeout=60)
    if has_eglot.returncode != 0:
        pytest.skip("eglot is not installed (Debian elpa-eglot; built in from Emacs 29)")
    block = doc_block("elisp", "emacs")
    if not auto_revert:
        block = "\n".join(line for line in block.splitlines() if "global-auto-revert-mode" not in line)
    init = tmp_path / "init.el"
    init.write_text(block + "\n")
    (workspace / "calc.py").write_text("X = 1\n")
    (tmp_path / "emacs-home").mkdir()
    session = f"tuna-{uuid.uuid4().hex[:8]}"
    with ScriptedModelServer(SCRIPT) as model:
        env = editor_env(tmp_path, home, model, HOME=str(tmp_path / "emacs-home"), **user_settings(tmp_path, model))
        start(session, workspace, f"{env} {EMACS} -nw -q -l {init} calc.py")
        try:
            wait_for(lambda: "Eglot" in (s := screen(session)) or "eglot" in s, 30, "eglot to connect", session)
            tmux("send-keys", "-t", session, "M-x", "")
            tmux("send-keys", "-t", session, "tunacode-ask", "Enter")
            wait_for(lambda: "Ask TunaCode" in screen(session), 10, "the prompt", session)
            tmux("send-keys", "-t", session, "rewrite calc.py", "Enter")
            wait_for(lambda: (workspace / "calc.py").read_text() == NEW, 30, "the server's write", session)
            if auto_revert:
                shown = wait_for(lambda: (s := screen(session)) and "X = 2" in s and s, 15,
                                 "the buffer to follow the file", session)
                tmux("send-keys", "-t", session, "M-<", "# ok ", "")
                typed = wait_for(lambda: (s := screen(session)) and "# ok X = 2" in s and s, 10, "the typing", session)
                assert "changed on disk" not in typed, typed
                assert "X = 1" not in shown, shown
                for _ in range(10):  # the answer once the request has ended (detached)
                    tmux("send-keys", "-t", session, "M-x", "")
                    tmux("send-keys", "-t", session, "tunacode-result", "Enter")
                    told = wait_for(lambda: (s := screen(session)) and ("Rewrote it." in s or "still running" in s)
                                    and s, 10, "the result", session)
                    if "Rewrote it." in told:
                        break
                    tmux("send-keys", "-t", session, "C-g", "")
                    wait_for(lambda: "still running" not in screen(session), 10, "the message to clear", session)
                assert "TunaCode (end_turn): Rewrote it." in told, told
                tmux("send-keys", "-t", session, "M-x", "")  # the next question continues the session
                tmux("send-keys", "-t", session, "tunacode-ask", "Enter")
                wait_for(lambda: "Ask TunaCode" in screen(session), 10, "the prompt", session)
                tmux("send-keys", "-t", session, "and again", "Enter")
                wait_for(lambda: len(model.requests) == 3, 30, "the second request", session)
                assert "rewrite calc.py" in str(model.requests[2]["messages"]), model.requests[2]["messages"]
            else:
                # Typed only once Emacs is idle again (the request's end shown): keys typed while
                # Emacs still waits inside `tunacode-ask` for the detached answer (a fast server
                # writes the file first) were sometimes lost, "#" with no question.
                wait_for(lambda: "Rewrote it." in screen(session), 30, "the request's end", session)
                tmux("send-keys", "-t", session, "M-<", "#", "")
                asked = wait_for(lambda: (s := screen(session)) and "changed on disk; really edit the buffer?" in s and s,
                                 10, "Emacs's question", session)
                assert "calc.py changed on disk" in asked, asked
        finally:
            stop(session)
