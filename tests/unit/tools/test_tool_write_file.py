"""write_file: creates new files only."""

from __future__ import annotations

from pathlib import Path

import pytest

from tunacode_lsp.tools import ToolError

from .conftest import call, text_of


async def test_creates_file_and_parent_folders(ws: Path, tools) -> None:
    result = await call(tools["write_file"], {"filepath": "pkg/sub/mod.py", "content": "x = 1\ny = 2\n"})
    assert (ws / "pkg" / "sub" / "mod.py").read_text() == "x = 1\ny = 2\n"
    assert text_of(result) == "Created pkg/sub/mod.py (2 lines, 12 bytes)."
    assert result.details == {"path": "pkg/sub/mod.py", "lines": 2, "bytes": 12}


async def test_refuses_to_overwrite_and_points_to_edit_file(ws: Path, tools) -> None:
    (ws / "keep.txt").write_text("original\n")
    with pytest.raises(ToolError, match="edit_file"):
        await call(tools["write_file"], {"filepath": "keep.txt", "content": "replaced\n"})
    assert (ws / "keep.txt").read_text() == "original\n"


async def test_refuses_an_existing_folder(ws: Path, tools) -> None:
    (ws / "folder").mkdir()
    with pytest.raises(ToolError, match="already exists"):
        await call(tools["write_file"], {"filepath": "folder", "content": ""})


async def test_dangling_symlink_inside_creates_its_target(ws: Path, tools) -> None:
    (ws / "dangling").symlink_to(ws / "missing-target")
    await call(tools["write_file"], {"filepath": "dangling", "content": "x"})
    assert (ws / "missing-target").read_text() == "x"
    assert (ws / "dangling").is_symlink()


async def test_parent_that_is_a_file_is_refused(ws: Path, tools) -> None:
    (ws / "plain").write_text("")
    with pytest.raises(ToolError, match="not a folder"):
        await call(tools["write_file"], {"filepath": "plain/child.txt", "content": "x"})


@pytest.mark.parametrize(("args", "field"), [({"filepath": "a"}, "content"), ({"content": "x"}, "filepath")])
async def test_missing_fields_are_named(tools, args: dict, field: str) -> None:
    with pytest.raises(ToolError, match=f"missing required field '{field}'"):
        await call(tools["write_file"], args)
