"""Every tool refuses special files alike (issue 34): a FIFO, a socket, a character device and
a link to each, named by the path argument of each tool. Before the fix grep with a FIFO
`path` blocked (ripgrep opens an explicit path whatever it is) until its bound."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.unit.tools.conftest import call, tools_for
from tunacode_lsp.tools import ToolError, build_tools

REFUSED = "not a regular file (device, socket or pipe)"


@pytest.fixture
def specials(ws: Path) -> Iterator[dict[str, str]]:
    os.mkfifo(ws / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(ws / "sock"))
    kinds = {"fifo": "pipe", "socket": "sock"}
    if os.geteuid() == 0:  # a device node needs root: a copy of /dev/zero (endless when read)
        os.mknod(ws / "zero", 0o666 | stat.S_IFCHR, os.makedev(1, 5))
        kinds["device"] = "zero"
    for kind, name in list(kinds.items()):
        (ws / f"link_{name}").symlink_to(ws / name)
        kinds[f"link to {kind}"] = f"link_{name}"
    try:
        yield kinds
    finally:
        sock.close()


def _args(tool: str, path: str) -> dict[str, Any]:
    return {
        "read_file": {"filepath": path},
        "write_file": {"filepath": path, "content": "x"},
        "edit_file": {"filepath": path, "old_text": "a", "new_text": "b"},
        "grep": {"pattern": "x", "path": path},
        "list_files": {"path": path},
        "bash": {"command": "echo hi", "cwd": path},
        "diagnostics": {"filepaths": [path]},
    }[tool]


async def _no_diagnostics(paths: list[Path]) -> dict[Path, list[dict[str, Any]]]:
    return {}


@pytest.mark.parametrize("tool", ["read_file", "write_file", "edit_file", "grep", "list_files", "bash", "diagnostics"])
async def test_each_tool_refuses_each_special_file(ws: Path, specials: dict[str, str], tool: str) -> None:
    tools = {t.name: t for t in build_tools(ws, diagnostics=_no_diagnostics)}
    for kind, path in specials.items():
        with pytest.raises(ToolError) as raised:
            await asyncio.wait_for(call(tools[tool], _args(tool, path)), 10)
        assert REFUSED in str(raised.value), (tool, kind, str(raised.value))
    assert stat.S_ISFIFO(os.stat(ws / "pipe").st_mode)  # nothing replaced


async def test_grep_over_a_folder_skips_special_files(ws: Path, specials: dict[str, str]) -> None:
    (ws / "a.txt").write_text("needle\n")
    result = await asyncio.wait_for(call(tools_for(ws)["grep"], {"pattern": "needle"}), 20)
    assert result.content[0].text == "a.txt:1:needle"
    listed = await asyncio.wait_for(call(tools_for(ws)["list_files"], {}), 20)
    assert listed.content[0].text == "a.txt"
