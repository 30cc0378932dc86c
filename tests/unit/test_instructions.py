"""Instruction files: AGENTS.md / CLAUDE.md, the user's file, nested files, @imports (confined,
depth <= 5, bounded), and what a hostile checkout can put there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tunacode_lsp.agent.instructions import (
    MAX_TOTAL_CHARS,
    NestedInstructions,
    read_instruction_file,
    root_instructions,
)


def test_agents_md_wins_over_claude_md_and_the_users_file_comes_first(tmp_path: Path) -> None:
    root, config = tmp_path / "repo", tmp_path / "config"
    root.mkdir()
    (config / "tunacode").mkdir(parents=True)
    (root / "CLAUDE.md").write_text("claude rules")
    (config / "tunacode" / "AGENTS.md").write_text("user rules")
    sections, notices = root_instructions(root, {"XDG_CONFIG_HOME": str(config)})
    assert [text for _title, text in sections] == ["user rules", "claude rules"] and notices == []
    (root / "AGENTS.md").write_text("agents rules")
    sections, _ = root_instructions(root, {"XDG_CONFIG_HOME": str(config)})
    assert sections[1] == ("project instructions (from AGENTS.md)", "agents rules")


def test_imports_are_expanded_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "AGENTS.md").write_text("top\n@docs/style.md\nend")
    (tmp_path / "docs" / "style.md").write_text("style\n  @more.md  ")
    (tmp_path / "docs" / "more.md").write_text("more")
    found = read_instruction_file(tmp_path, "AGENTS.md")
    assert found is not None and found.text == "top\nstyle\nmore\nend"
    assert found.files == ["AGENTS.md", "docs/style.md", "docs/more.md"]


def test_an_email_address_or_inline_at_is_not_an_import(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("mail me@example.com\nuse @decorators here")
    assert read_instruction_file(tmp_path, "AGENTS.md").text == "mail me@example.com\nuse @decorators here"  # type: ignore[union-attr]


def test_imports_stop_at_depth_five_and_cycles_once(tmp_path: Path) -> None:
    for i in range(8):
        (tmp_path / f"f{i}.md").write_text(f"level {i}\n@f{i + 1}.md")
    found = read_instruction_file(tmp_path, "f0.md")
    assert found is not None and "level 5" in found.text and "level 6" not in found.text
    assert any("deeper than 5" in n for n in found.notices)
    (tmp_path / "a.md").write_text("a\n@b.md")
    (tmp_path / "b.md").write_text("b\n@a.md")
    cycle = read_instruction_file(tmp_path, "a.md")
    assert cycle is not None and cycle.text == "a\nb" and any("cycle" in n for n in cycle.notices)


@pytest.mark.parametrize("target", ["../secret.txt", "/etc/passwd", "link.md", "fifo.md", "sub/../../secret.txt"])
def test_imports_never_leave_the_workspace(tmp_path: Path, target: str) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    (root / "link.md").symlink_to(tmp_path / "secret.txt")
    os.mkfifo(root / "fifo.md")
    (root / "AGENTS.md").write_text(f"rules\n@{target}")
    found = read_instruction_file(root, "AGENTS.md")
    assert found is not None and "TOP SECRET" not in found.text and found.text.startswith("rules")
    assert found.notices


def test_a_file_with_many_imports_is_bounded(tmp_path: Path) -> None:
    for i in range(10):
        (tmp_path / f"big{i}.md").write_text("x" * 19_000)
    (tmp_path / "AGENTS.md").write_text("\n".join(f"@big{i}.md" for i in range(10)))
    found = read_instruction_file(tmp_path, "AGENTS.md")
    assert found is not None and len(found.text) < MAX_TOTAL_CHARS + 200


def test_nested_files_join_once_per_request_from_the_top_down(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "AGENTS.md").write_text("root: in the system prompt, not here")
    (tmp_path / "pkg" / "AGENTS.md").write_text("pkg rules")
    (tmp_path / "pkg" / "sub" / "CLAUDE.md").write_text("sub rules")
    nested = NestedInstructions(tmp_path)
    text, _ = nested.for_call("read_file", "pkg/sub/x.py")
    assert "pkg rules" in text and "sub rules" in text and "root:" not in text
    assert text.index("pkg rules") < text.index("sub rules")
    assert nested.for_call("edit_file", str(tmp_path / "pkg" / "y.py")) == ("", [])
    assert nested.for_call("grep", "pkg/other/z.py") == ("", [])  # only reads and edits
    assert nested.for_call("read_file", "../elsewhere/AGENTS.md") == ("", [])
    assert NestedInstructions(tmp_path).for_call("write_file", "pkg/new.py")[0].startswith("[Instructions from pkg/AGENTS.md")
