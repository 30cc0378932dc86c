"""Bounds of background processes (tools/background.py): the output ring, the per-session cap,
one session's tools seeing only its own processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.tools.conftest import call, tools_for
from tunacode_lsp.tools import ToolError, ToolSettings
from tunacode_lsp.tools import background as bg


def test_the_output_ring_keeps_the_newest_bytes_and_counts_the_dropped() -> None:
    ring = bg.OutputRing(limit=10)
    ring.add(b"0123456789")
    assert ring.since(0) == (b"0123456789", 0)
    ring.add(b"abcde")
    assert ring.since(0) == (b"56789abcde", 5) and ring.since(12) == (b"cde", 0) and ring.end == 15


async def test_per_session_cap_and_sessions_apart(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bg, "MAX_PER_SESSION", 2)
    registry = bg.BackgroundProcesses()
    mine = tools_for(ws, ToolSettings(background=registry.for_session("s1"), shell_sandbox="off"))
    theirs = tools_for(ws, ToolSettings(background=registry.for_session("s2"), shell_sandbox="off"))
    try:
        for _ in range(2):
            await call(mine["bash"], {"command": "exec sleep 3411", "background": True})
        with pytest.raises(ToolError, match="at most 2"):
            await call(mine["bash"], {"command": "exec sleep 3411", "background": True})
        with pytest.raises(ToolError, match="No background process 'p1' in this session"):
            await call(theirs["process_output"], {"processId": "p1"})
        with pytest.raises(ToolError, match="No background process"):
            await call(theirs["process_kill"], {"processId": "p2"})
        assert [p["running"] for p in registry.listing()] == [True, True]
    finally:
        assert registry.kill_session("s1") == 2
    assert registry.listing() == []


async def test_a_background_command_runs_in_the_same_sandbox(ws: Path, tmp_path: Path) -> None:
    from tunacode_lsp.tools.sandbox import sandbox_state

    if not sandbox_state("auto").active:
        pytest.skip("bwrap cannot run here")
    outside = tmp_path / "outside.txt"
    registry = bg.BackgroundProcesses()
    tools = tools_for(ws, ToolSettings(background=registry.for_session("s1")))
    try:
        await call(tools["bash"], {"command": f"echo ok > inside.txt; echo bad > {outside}; echo done", "background": True})
        seen = ""
        while "exited" not in seen:  # each read returns what came since the last one
            seen += (await call(tools["process_output"], {"processId": "p1", "wait": 10})).content[0].text
    finally:
        registry.kill_session("s1")
    assert (ws / "inside.txt").read_text() == "ok\n"
    assert not outside.exists()
    assert "done" in seen  # it ran; its write outside the workspace landed nowhere outside


async def test_what_runs_code_outside_is_removed_when_it_ends(ws: Path) -> None:
    """As after a foreground command: a background one may not leave an .envrc or a
    .vscode/tasks.json behind (they run code outside the sandbox later)."""
    from tunacode_lsp.tools.sandbox import sandbox_state

    if not sandbox_state("auto").active:
        pytest.skip("bwrap cannot run here")
    registry = bg.BackgroundProcesses()
    tools = tools_for(ws, ToolSettings(background=registry.for_session("s1")))
    try:
        await call(tools["bash"], {"command": "mkdir -p .vscode; echo x > .vscode/tasks.json; echo y > .envrc; echo made",
                                   "background": True})
        seen = ""
        while "exited" not in seen:
            seen += (await call(tools["process_output"], {"processId": "p1", "wait": 10})).content[0].text
    finally:
        registry.kill_session("s1")
    assert "made" in seen
    assert not (ws / ".vscode").exists() and not (ws / ".envrc").exists()
