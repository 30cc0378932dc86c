"""MCP servers' state in a real headless Neovim with the plugin and the real server:
:TunaStatus and :checkhealth tunacode (nvim_status_driver.lua writes JSON)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tests.clients.test_neovim import nvim, run_nvim  # noqa: F401 (a fixture)

from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

pytestmark = pytest.mark.neovim

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("nvim_status_driver.lua")
DEMO = str(REPO / "tests" / "mcp" / "demo_server.py")


def test_tunastatus_and_checkhealth_show_the_mcp_servers(nvim, tmp_path, workspace, home):  # noqa: F811
    notes = tmp_path / "notes"
    notes.mkdir()
    servers = {"demo": {"command": sys.executable, "args": [DEMO], "env": {"NOTES_DIR": str(notes)}},
               "bad": {"command": "/nonexistent/mcp-server"}}
    # a server the repository defines: its consent question is dismissed, so it never starts
    (workspace / "calc.py").write_text("X = 1\n")
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"repo": {"command": sys.executable,
                                                                              "args": ["-c", "pass"]}}}))
    with ScriptedModelServer({"turns": []}) as model:
        seen = run_nvim(nvim, DRIVER, tmp_path=tmp_path, workspace=workspace, home=home, model=model,
                        TUNA_MCP_SERVERS=json.dumps(servers))

    stopped = "\n".join(seen["health_stopped"])
    assert "- MCP servers" in stopped or "MCP servers ~" in stopped, stopped
    assert "the server is not running" in stopped, stopped

    shown = seen["shown"]
    lines = shown["message"].split("\n")
    assert lines[0].startswith("TunaCode ") and "(protocol 3)" in lines[0], lines
    assert "requests running: 0" in lines
    start = lines.index("MCP servers:")
    mcp = sorted(lines[start + 1:])
    assert mcp[0] == "  bad: failed: command not found: /nonexistent/mcp-server", mcp
    assert mcp[1] == "  demo: ready, 6 tools", mcp
    assert mcp[2] == "  repo: not allowed to start (the workspace's .mcp.json defines it)", mcp
    assert shown["level"] == 3  # vim.log.levels.WARN: something needs a look

    running = "\n".join(seen["health_running"])
    assert "OK demo: ready, 6 tools" in running, running
    assert "ERROR bad: failed: command not found: /nonexistent/mcp-server" in running and "check its command in the mcpServers setting" in running, running
    assert "WARNING repo: not allowed to start" in running, running
    assert seen["clients"] == 1  # :TunaStatus used the server vim.lsp.enable started
