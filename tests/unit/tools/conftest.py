"""Fixtures for the tool tests: a real workspace folder, a folder outside it, and escape routes."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from tinyagent.agent_types import AgentTool, AgentToolResult

from tunacode_lsp.tools import ToolSettings, build_tools


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return Path(os.path.realpath(root))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("TOP SECRET\n")
    return Path(os.path.realpath(folder))


@pytest.fixture
def escapes(ws: Path, outside: Path) -> dict[str, str]:
    """Each way out of the workspace, as a path string a model could send (file targets)."""
    (ws / "link_file").symlink_to(outside / "secret.txt")
    (ws / "link_dir").symlink_to(outside, target_is_directory=True)
    return {
        "dotdot": "../outside/secret.txt",
        "absolute": str(outside / "secret.txt"),
        "symlink_file": "link_file",
        "symlink_dir": "link_dir/secret.txt",
    }


def tools_for(root: Path, settings: ToolSettings = ToolSettings()) -> dict[str, AgentTool]:
    return {tool.name: tool for tool in build_tools(root, settings)}


@pytest.fixture
def tools(ws: Path) -> dict[str, AgentTool]:
    return tools_for(ws)


async def call(
    tool: AgentTool,
    args: dict[str, Any],
    signal: asyncio.Event | None = None,
    on_update: Any = None,
) -> AgentToolResult:
    assert tool.execute is not None
    return await tool.execute("call-1", args, signal, on_update)


def text_of(result: AgentToolResult) -> str:
    return "".join(block.text or "" for block in result.content)


def refs_of(read_output: str) -> dict[int, str]:
    """{line number: hash} parsed from read_file output."""
    refs: dict[int, str] = {}
    for line in read_output.splitlines()[1:]:
        head, sep, _ = line.partition("|")
        number, colon, digest = head.partition(":")
        if sep and colon and number.isdigit():
            refs[int(number)] = digest
    return refs
