"""The plugin's default key maps in a real headless Neovim: setup() sets them, never over a
mapping of the user's own, and `keymaps = false` sets none (issue 32, default key maps)."""

from __future__ import annotations

import json
import subprocess

import pytest
from tests.clients.test_neovim import REPO, nvim  # noqa: F401 (a fixture)

pytestmark = pytest.mark.neovim

PROBE = """
vim.g.mapleader = ' '
vim.opt.runtimepath:prepend(%(rtp)s)
vim.keymap.set('n', '<leader>ts', '<Cmd>echo "mine"<CR>')
require('tunacode').setup(%(opts)s)
local out = {}
for _, lhs in ipairs({ '<leader>tc', '<leader>ta', '<leader>ts', '<leader>tr' }) do
  out[lhs] = vim.fn.maparg(lhs, 'n')
end
out.visual = vim.fn.maparg('<leader>ta', 'x')
io.open(%(out)s, 'w'):write(vim.json.encode(out))
vim.cmd('qa!')
"""


def _maps(nvim: str, tmp_path, opts: str) -> dict:  # noqa: F811
    out, init = tmp_path / f"maps-{len(opts)}.json", tmp_path / f"init-{len(opts)}.lua"
    init.write_text(PROBE % {"rtp": json.dumps(str(REPO / "client-nvim")), "opts": opts, "out": json.dumps(str(out))})
    subprocess.run([nvim, "--headless", "--clean", "-u", str(init)], check=True, timeout=30, cwd=tmp_path)
    return json.loads(out.read_text())


def test_default_keymaps_leave_the_users_own_alone(nvim, tmp_path):  # noqa: F811
    maps = _maps(nvim, tmp_path, "{}")
    assert maps["<leader>tc"] == "<Cmd>TunaChat<CR>" and maps["<leader>ta"] == "<Cmd>TunaAsk<CR>"
    assert maps["<leader>tr"] == "<Cmd>TunaRewind!<CR>" and maps["visual"] == ":TunaAsk<CR>"
    assert maps["<leader>ts"] == '<Cmd>echo "mine"<CR>'  # the user's mapping stays
    none = _maps(nvim, tmp_path, "{ keymaps = false }")
    assert none["<leader>tc"] == "" and none["visual"] == ""
