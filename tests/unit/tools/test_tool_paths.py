"""Confinement rules of tools/paths.py, on real folders and symlinks."""

from __future__ import annotations

from pathlib import Path

import pytest

from tunacode_lsp.tools.errors import ToolError
from tunacode_lsp.tools.paths import display_path, resolve_in_workspace


def test_relative_and_absolute_inside_resolve(ws: Path) -> None:
    (ws / "src").mkdir()
    assert resolve_in_workspace(ws, "src/a.py") == ws / "src" / "a.py"
    assert resolve_in_workspace(ws, str(ws / "src" / "a.py")) == ws / "src" / "a.py"
    assert resolve_in_workspace(ws, "src/../b.py") == ws / "b.py"
    assert resolve_in_workspace(ws, ".") == ws


def test_symlink_inside_is_followed_to_its_target(ws: Path) -> None:
    (ws / "real.txt").write_text("x")
    (ws / "alias.txt").symlink_to(ws / "real.txt")
    assert resolve_in_workspace(ws, "alias.txt") == ws / "real.txt"


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink_file", "symlink_dir"])
def test_every_escape_is_refused(ws: Path, escapes: dict[str, str], kind: str) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(ws, escapes[kind])


def test_sibling_folder_sharing_the_prefix_is_outside(ws: Path) -> None:
    sibling = ws.parent / (ws.name + "2")
    sibling.mkdir()
    with pytest.raises(ToolError, match="outside"):
        resolve_in_workspace(ws, str(sibling / "f.txt"))


def test_new_path_under_a_symlinked_folder_out_is_refused(ws: Path, escapes: dict[str, str]) -> None:
    with pytest.raises(ToolError, match="outside"):
        resolve_in_workspace(ws, "link_dir/new/deeper.txt")


@pytest.mark.parametrize("raw", ["", "   ", "a\x00b"])
def test_empty_or_nul_paths_are_refused(ws: Path, raw: str) -> None:
    with pytest.raises(ToolError):
        resolve_in_workspace(ws, raw)


def test_display_path_is_relative_posix(ws: Path) -> None:
    assert display_path(ws, ws / "a" / "b.py") == "a/b.py"
    assert display_path(ws, ws) == "."
