"""A plain LSP client in a real editor: Vim 9 with ALE 3.3 (Debian's vim and vim-ale) in a
terminal (tmux), set up with docs/plain-clients.md's block, against the real server and the
scripted model. `:TunaAsk` sends a detached `tunacode.request` through ALE; its shell
command rewrites calc.py, whose buffer is open and clean. With `autoread` and the `checktime`
autocmd the buffer shows the new text at the first pause (CursorHold) after a key; without
`autoread` the check asks W11 (the docs' two claims)."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

from .test_emacs_plain import NEW, SCRIPT, doc_block, user_settings
from .test_neovim_tmux import TMUX, editor_env, screen, start, stop, tmux, wait_for

pytestmark = pytest.mark.neovim  # a real editor in tmux, like the Neovim tests

VIM = shutil.which("vim")
ALE = Path("/usr/share/vim-ale")  # Debian's vim-ale


@pytest.mark.skipif(TMUX is None or VIM is None or not ALE.is_dir(),
                    reason="tmux, vim or ALE (Debian vim-ale) is not installed")
@pytest.mark.parametrize("autoread", [True, False])
def test_vim_ale_buffer_follows_the_servers_write(tmp_path, workspace, home, autoread):
    block = doc_block("vim", "vim")
    if not autoread:
        block = block.replace("set autoread", "set noautoread")
    vimrc = tmp_path / "vimrc"
    vimrc.write_text(f"set nocompatible\nset runtimepath^={ALE}\nfiletype plugin on\n{block}\n")
    (workspace / "calc.py").write_text("X = 1\n")
    session = f"tuna-{uuid.uuid4().hex[:8]}"
    with ScriptedModelServer(SCRIPT) as model:
        env = editor_env(tmp_path, home, model, HOME=str(tmp_path), **user_settings(tmp_path, model))
        start(session, workspace, f"{env} {VIM} -u {vimrc} -i NONE calc.py")
        try:
            wait_for(lambda: "X = 1" in screen(session), 10, "Vim", session)
            tmux("send-keys", "-t", session, ":TunaAsk rewrite calc.py", "Enter")
            wait_for(lambda: (workspace / "calc.py").read_text() == NEW, 30, "the server's write", session)
            tmux("send-keys", "-t", session, "h", "")  # the user moves on; CursorHold comes at the next pause
            if autoread:
                shown = wait_for(lambda: (s := screen(session)) and "X = 2" in s and s, 15,
                                 "the buffer to follow the file (CursorHold)", session)
                assert "W11" not in shown and "X = 1" not in shown, shown
            else:
                asked = wait_for(lambda: (s := screen(session)) and "W11" in s and s, 15, "Vim's question", session)
                assert 'File "calc.py" has changed since editing started' in asked, asked
        finally:
            stop(session)
