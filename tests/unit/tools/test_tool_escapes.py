"""Every tool refuses every way out of the workspace, and nothing outside is read, listed or written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tunacode_lsp.tools import ToolError

from .conftest import call, text_of

KINDS = ["dotdot", "absolute", "symlink_file", "symlink_dir"]


def outside_state(outside: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in outside.iterdir()}


@pytest.mark.parametrize("kind", KINDS)
async def test_read_file(tools, escapes: dict[str, str], kind: str) -> None:
    with pytest.raises(ToolError, match="outside the workspace") as caught:
        await call(tools["read_file"], {"filepath": escapes[kind]})
    assert "TOP SECRET" not in str(caught.value)


@pytest.mark.parametrize("kind", KINDS + ["dangling_symlink"])
async def test_write_file(ws: Path, outside: Path, tools, escapes: dict[str, str], kind: str) -> None:
    (ws / "dangling_out").symlink_to(outside / "ghost.txt")
    targets = {
        "dotdot": "../outside/new.txt",
        "absolute": str(outside / "new.txt"),
        "symlink_file": escapes["symlink_file"],
        "symlink_dir": "link_dir/new.txt",
        "dangling_symlink": "dangling_out",
    }
    with pytest.raises(ToolError, match="outside the workspace"):
        await call(tools["write_file"], {"filepath": targets[kind], "content": "pwned\n"})
    assert outside_state(outside) == {"secret.txt": "TOP SECRET\n"}


@pytest.mark.parametrize("kind", KINDS)
async def test_edit_file(outside: Path, tools, escapes: dict[str, str], kind: str) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        await call(tools["edit_file"], {"filepath": escapes[kind], "old_text": "TOP SECRET", "new_text": "pwned"})
    assert outside_state(outside) == {"secret.txt": "TOP SECRET\n"}


@pytest.mark.parametrize("kind", KINDS)
async def test_bash_cwd(outside: Path, tools, escapes: dict[str, str], kind: str) -> None:
    folders = {"dotdot": "../outside", "absolute": str(outside), "symlink_file": "link_file", "symlink_dir": "link_dir"}
    with pytest.raises(ToolError, match="outside the workspace"):
        await call(tools["bash"], {"command": "touch pwned", "cwd": folders[kind]})
    assert outside_state(outside) == {"secret.txt": "TOP SECRET\n"}


@pytest.mark.parametrize("kind", KINDS)
async def test_grep_path(tools, escapes: dict[str, str], kind: str) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        await call(tools["grep"], {"pattern": "SECRET", "path": escapes[kind]})


async def test_grep_does_not_follow_links_out(tools, escapes: dict[str, str]) -> None:
    result = await call(tools["grep"], {"pattern": "SECRET"})
    assert text_of(result).startswith("No matches")


@pytest.mark.parametrize("kind", KINDS)
async def test_list_files_path(outside: Path, tools, escapes: dict[str, str], kind: str) -> None:
    folders = {"dotdot": "../outside", "absolute": str(outside), "symlink_file": "link_file", "symlink_dir": "link_dir"}
    with pytest.raises(ToolError, match="outside the workspace"):
        await call(tools["list_files"], {"path": folders[kind]})


async def test_list_files_does_not_follow_links_out(ws: Path, tools, escapes: dict[str, str]) -> None:
    (ws / "mine.txt").write_text("x")
    assert text_of(await call(tools["list_files"], {})) == "mine.txt"
