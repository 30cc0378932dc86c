"""The Neovim plugin's default start command keeps the workspace's code out: in a real
headless Neovim started in a hostile checkout (its own `tunacode-lsp` program, found through
a relative `.` in PATH; `tunacode_lsp/`, `pygls/`, `orjson.py` ...), the plugin starts the
real server with `python3 -P -m tunacode_lsp` and nothing of the checkout runs."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from tests.clients.test_neovim import nvim, run_nvim  # noqa: F401  (the fixture)
from tests.clients.test_trust_start import imported, plant

from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

pytestmark = pytest.mark.neovim

DRIVER = Path(__file__).with_name("nvim_trust_start_driver.lua")


@pytest.mark.parametrize("relative_path_entry", [True, False], ids=["dot-in-PATH", "python3-fallback"])
def test_the_default_command_in_a_hostile_checkout_runs_none_of_it(
    nvim: str, tmp_path: Path, workspace: Path, home: Path, model: ScriptedModelServer, relative_path_entry: bool,  # noqa: F811
) -> None:
    markers = tmp_path / "markers"
    plant(workspace, markers)
    program = workspace / "tunacode-lsp"
    program.write_text(f"#!/bin/sh\necho ran > {markers / 'program'}\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    # a python3 that is the tests' Python (the server is installed there), and no tunacode-lsp
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python3 = bin_dir / "python3"
    python3.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python3.chmod(0o755)
    path = os.pathsep.join([*(["."] if relative_path_entry else []), str(bin_dir), "/usr/bin", "/bin"])
    seen = run_nvim(nvim, DRIVER, tmp_path=tmp_path, workspace=workspace, home=home, model=model, PATH=path)
    assert imported(markers) == []
    assert seen["default_cmd"] == ["python3", "-P", "-m", "tunacode_lsp"]
    assert seen["version"], seen
