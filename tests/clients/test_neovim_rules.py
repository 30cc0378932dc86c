"""Prompt commands and plan mode in a real headless Neovim with the plugin and the real server."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.clients.test_neovim import nvim, run_nvim  # noqa: F401 (a fixture)

from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

pytestmark = pytest.mark.neovim

DRIVER = Path(__file__).with_name("nvim_rules_driver.lua")


def test_slash_completion_and_plan_mode(nvim, tmp_path, workspace, home):  # noqa: F811
    folder = workspace / ".tunacode" / "commands"
    folder.mkdir(parents=True)
    (folder / "review.md").write_text("---\ndescription: Review a file\n---\nReview $1.")
    (folder / "release.md").write_text("Release.")
    (folder / "deploy.md").write_text("Deploy.")
    with ScriptedModelServer({"turns": [{"steps": [{"text": "The plan."}]}]}) as model:
        seen = run_nvim(nvim, DRIVER, tmp_path=tmp_path, workspace=workspace, home=home, model=model)
        request = model.requests[0]
    assert seen["completion"] == ["/release", "/review"]
    assert seen["mode_completion"] == ["agent", "plan"] and seen["mode"] == "plan"
    assert seen["stop_reason"] == "end_turn"
    offered = sorted(t["function"]["name"] for t in request["tools"])
    assert offered == ["diagnostics", "grep", "list_files", "read_file", "todo_write"]  # Neovim offers diagnostics
    last = request["messages"][-1]["content"]
    assert (last if isinstance(last, str) else last[-1]["text"]) == "Review calc.py."
