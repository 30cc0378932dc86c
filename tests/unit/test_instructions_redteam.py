"""Instruction files against a hostile checkout (issues 26 and 29): a fan of imports is not
all read (it cost seconds and thousands of notices per request), and the 60,000-character
budget keeps what fits (three 20,000-character imports used to blank the whole file)."""

from __future__ import annotations

from pathlib import Path

from tunacode_lsp.agent.instructions import MAX_FILES, MAX_NOTICES, read_instruction_file


def test_a_fan_of_imports_reads_a_bounded_number_of_files_with_few_notices(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "AGENTS.md").write_text("RULE-ONE\n" + "\n".join(f"@d/{i}.md" for i in range(2_000)))
    for i in range(300):
        (tmp_path / "d" / f"{i}.md").write_text(f"part {i}\n" + "\n".join(f"@missing-{i}-{j}.md" for j in range(5)))
    found = read_instruction_file(tmp_path, "AGENTS.md")
    assert found is not None and found.text.startswith("RULE-ONE")
    assert len(found.files) <= MAX_FILES and len(found.notices) <= MAX_NOTICES + 1


def test_imports_up_to_the_budget_are_kept(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("RULE-ONE\n@a.md\n@b.md\n@c.md\n@d.md\nRULE-LAST")
    for name in "abcd":
        (tmp_path / f"{name}.md").write_text(f"START-{name}\n" + ("x" * 99 + "\n") * 190)
    found = read_instruction_file(tmp_path, "AGENTS.md")
    assert found is not None
    assert "RULE-ONE" in found.text and "START-a" in found.text and "START-c" in found.text
    assert len(found.text) <= 60_000 + 100 and found.text.endswith("[instructions cut: too long with their imports]")
