"""edit_file on real files: both edit forms, atomicity, and the two regressions of the old tool."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tunacode_lsp.tools import ToolError
from tunacode_lsp.tools.textfile import line_hash

from .conftest import call, refs_of, text_of

CALC = '''def add(a: int, b: int) -> int:
    """Return the sum of a and b."""
    return a - b


def multiply(a: int, b: int) -> int:
    """Return the product of a and b."""
    return a * b
'''


@pytest.fixture
def calc(ws: Path) -> Path:
    path = ws / "calc.py"
    path.write_text(CALC)
    return path


async def read_refs(tools, filepath: str) -> dict[int, str]:
    return refs_of(text_of(await call(tools["read_file"], {"filepath": filepath})))


async def test_demo_edit_old_text_returns_a_unified_diff(calc: Path, tools) -> None:
    args = {"filepath": "calc.py", "edits": [{"old_text": "return a - b", "new_text": "return a + b"}]}
    result = await call(tools["edit_file"], args)
    assert calc.read_text() == CALC.replace("return a - b", "return a + b")
    diff = result.details["diff"]
    assert diff.startswith("--- a/calc.py\n+++ b/calc.py\n@@ -1,")
    assert "\n-    return a - b\n+    return a + b\n" in diff
    assert text_of(result).startswith("Edited calc.py: 1 edit applied (+1 -1).\n--- a/calc.py")
    assert (result.details["added"], result.details["removed"]) == (1, 1)


async def test_top_level_old_text_shorthand(calc: Path, tools) -> None:
    await call(tools["edit_file"], {"filepath": "calc.py", "old_text": "a * b", "new_text": "b * a"})
    assert "return b * a" in calc.read_text()


async def test_edits_given_as_json_string_or_single_object_are_accepted(calc: Path, tools) -> None:
    await call(tools["edit_file"], {"filepath": "calc.py", "edits": '[{"old_text": "a * b", "new_text": "b * a"}]'})
    await call(tools["edit_file"], {"filepath": "calc.py", "edits": {"old_text": "a - b", "new_text": "b - a"}})
    assert "return b * a" in calc.read_text() and "return b - a" in calc.read_text()


async def test_old_text_not_found_or_ambiguous_is_refused(calc: Path, tools) -> None:
    with pytest.raises(ToolError, match="not found.*exactly"):
        await call(tools["edit_file"], {"filepath": "calc.py", "old_text": "return a / b", "new_text": "x"})
    with pytest.raises(ToolError, match=r"more than once.*lines 1, 6.*surrounding"):
        await call(tools["edit_file"], {"filepath": "calc.py", "old_text": "(a: int, b: int)", "new_text": "()"})
    assert calc.read_text() == CALC


async def test_old_text_copied_with_read_prefixes_gets_a_hint(calc: Path, tools) -> None:
    copied = f"3:{line_hash('    return a - b')}|    return a - b"
    with pytest.raises(ToolError, match="LINE:HASH"):
        await call(tools["edit_file"], {"filepath": "calc.py", "old_text": copied, "new_text": "x"})


async def test_line_and_hash_edit_after_read(calc: Path, tools) -> None:
    refs = await read_refs(tools, "calc.py")
    result = await call(
        tools["edit_file"],
        {"filepath": "calc.py", "edits": [{"line": 3, "hash": refs[3], "new_text": "    return a + b"}]},
    )
    assert calc.read_text().splitlines()[2] == "    return a + b"
    assert result.details["edits"] == 1


async def test_range_edit_replaces_inclusive_lines_and_empty_text_deletes(calc: Path, tools) -> None:
    refs = await read_refs(tools, "calc.py")
    edit = {"line": 4, "hash": refs[4], "end_line": 8, "end_hash": refs[8], "new_text": ""}
    await call(tools["edit_file"], {"filepath": "calc.py", "edits": [edit]})
    assert calc.read_text() == "".join(CALC.splitlines(keepends=True)[:3])


async def test_hash_as_copied_from_read_output_is_accepted(calc: Path, tools) -> None:
    refs = await read_refs(tools, "calc.py")
    edit = {"line": 3, "hash": f"3:{refs[3]}|    return a - b", "new_text": "    return 0"}
    await call(tools["edit_file"], {"filepath": "calc.py", "edits": [edit]})
    assert "    return 0\n" in calc.read_text()


async def test_wrong_hash_is_refused(calc: Path, tools) -> None:
    await read_refs(tools, "calc.py")
    with pytest.raises(ToolError, match="Hash mismatch at line 3.*Read the file again"):
        await call(tools["edit_file"], {"filepath": "calc.py", "edits": [{"line": 3, "hash": "0000", "new_text": "x"}]})
    assert calc.read_text() == CALC


async def test_line_edit_without_a_read_is_refused(calc: Path, tools) -> None:
    edit = {"line": 3, "hash": line_hash("    return a - b"), "new_text": "    return a + b"}
    with pytest.raises(ToolError, match="read_file first"):
        await call(tools["edit_file"], {"filepath": "calc.py", "edits": [edit]})
    assert calc.read_text() == CALC


async def test_regression_file_changed_on_disk_between_read_and_edit(calc: Path, tools) -> None:
    """The old tool checked a cache of the read. Here line 3 still has the same text and hash after
    the outside change, so only a check of the whole file on disk can notice it."""
    refs = await read_refs(tools, "calc.py")
    changed = CALC.replace("def add(", "def plus(")
    calc.write_text(changed)
    assert changed.splitlines()[2] == CALC.splitlines()[2]
    edit = {"line": 3, "hash": refs[3], "new_text": "    return a + b"}
    with pytest.raises(ToolError, match="changed on disk since you last read it.*Nothing was written"):
        await call(tools["edit_file"], {"filepath": "calc.py", "edits": [edit]})
    assert calc.read_text() == changed


async def test_regression_external_shift_onto_a_repeated_line(ws: Path, tools) -> None:
    """Two lines inserted at the top from outside: line 4 is blank before and after, but it is another
    blank line now. The old tool edited it; now the edit is refused and nothing is written."""
    path = ws / "blank.txt"
    path.write_text("a\n\nb\n\n\nc\n")
    refs = await read_refs(tools, "blank.txt")
    shifted = "x\ny\na\n\nb\n\n\nc\n"
    path.write_text(shifted)
    assert shifted.splitlines()[3] == "" and refs[4] == line_hash("")
    edit = {"line": 4, "hash": refs[4], "new_text": "FILLED"}
    with pytest.raises(ToolError, match="changed on disk"):
        await call(tools["edit_file"], {"filepath": "blank.txt", "edits": [edit]})
    assert path.read_text() == shifted


async def test_regression_external_change_of_old_text_is_refused(calc: Path, tools) -> None:
    await read_refs(tools, "calc.py")
    calc.write_text(CALC.replace("return a - b", "return a - b - 0"))
    with pytest.raises(ToolError):
        await call(tools["edit_file"], {"filepath": "calc.py", "old_text": "return a - b\n", "new_text": "return 1\n"})
    assert "return a - b - 0" in calc.read_text()


async def test_regression_multiline_replace_then_older_reference_same_call(calc: Path, tools) -> None:
    """All edits of one call refer to the file before the call: the line ref still means line 8."""
    refs = await read_refs(tools, "calc.py")
    edits = [
        {"old_text": '    """Return the sum of a and b."""\n', "new_text": '    """Return\n    the sum\n    of a and b."""\n'},
        {"line": 8, "hash": refs[8], "new_text": "    return b * a"},
    ]
    await call(tools["edit_file"], {"filepath": "calc.py", "edits": edits})
    lines = calc.read_text().splitlines()
    assert lines[1:4] == ['    """Return', "    the sum", '    of a and b."""']
    assert lines[9] == "    return b * a"
    assert lines.count("    return b * a") == 1 and "    return a - b" in lines


async def test_regression_multiline_replace_then_older_reference_next_call(calc: Path, tools) -> None:
    """After a replace that added lines, a reference from before it is mapped to where its line went."""
    refs = await read_refs(tools, "calc.py")
    await call(
        tools["edit_file"],
        {"filepath": "calc.py", "old_text": "    return a - b\n", "new_text": "    total = a + b\n    return total\n"},
    )
    await call(tools["edit_file"], {"filepath": "calc.py", "edits": [{"line": 8, "hash": refs[8], "new_text": "    return b * a"}]})
    lines = calc.read_text().splitlines()
    assert lines[8] == "    return b * a"
    assert lines[2:4] == ["    total = a + b", "    return total"]


async def test_regression_older_reference_to_a_repeated_line_is_refused_not_misplaced(ws: Path, tools) -> None:
    """Line 4 was the 3rd blank line; after an insert above, line 4 is another blank line with the same
    hash. The old tool edited it (the wrong line). Now: either the right line or a refusal."""
    path = ws / "gaps.txt"
    path.write_text("start\n\n\n\nend\n")
    refs = await read_refs(tools, "gaps.txt")
    await call(tools["edit_file"], {"filepath": "gaps.txt", "old_text": "start\n", "new_text": "start\nnew\n"})
    before = path.read_text()
    with pytest.raises(ToolError, match="ambiguous.*could mean line 4, 5"):
        await call(tools["edit_file"], {"filepath": "gaps.txt", "edits": [{"line": 4, "hash": refs[4], "new_text": "X"}]})
    assert path.read_text() == before


async def test_reference_into_lines_replaced_by_an_earlier_edit_is_refused(calc: Path, tools) -> None:
    refs = await read_refs(tools, "calc.py")
    await call(tools["edit_file"], {"filepath": "calc.py", "old_text": "    return a - b\n", "new_text": "    return a + b\n"})
    with pytest.raises(ToolError, match="before an earlier edit"):
        await call(tools["edit_file"], {"filepath": "calc.py", "edits": [{"line": 3, "hash": refs[3], "new_text": "x"}]})


async def test_fresh_whole_read_after_edits_gives_usable_references(ws: Path, tools) -> None:
    path = ws / "gaps.txt"
    path.write_text("start\n\n\n\nend\n")
    await read_refs(tools, "gaps.txt")
    await call(tools["edit_file"], {"filepath": "gaps.txt", "old_text": "start\n", "new_text": "start\nnew\n"})
    refs = await read_refs(tools, "gaps.txt")
    await call(tools["edit_file"], {"filepath": "gaps.txt", "edits": [{"line": 4, "hash": refs[4], "new_text": "X"}]})
    assert path.read_text() == "start\nnew\n\nX\n\nend\n"


async def test_several_edits_are_all_or_nothing(calc: Path, tools) -> None:
    edits = [{"old_text": "a - b", "new_text": "a + b"}, {"old_text": "no such text", "new_text": "x"}]
    with pytest.raises(ToolError, match=r"edits\[1\]\.old_text was not found"):
        await call(tools["edit_file"], {"filepath": "calc.py", "edits": edits})
    assert calc.read_text() == CALC


async def test_overlapping_edits_are_refused(calc: Path, tools) -> None:
    refs = await read_refs(tools, "calc.py")
    edits = [{"old_text": "return a - b", "new_text": "x"}, {"line": 3, "hash": refs[3], "new_text": "y"}]
    with pytest.raises(ToolError, match="Edits 1 and 2 both touch line 3"):
        await call(tools["edit_file"], {"filepath": "calc.py", "edits": edits})
    assert calc.read_text() == CALC


async def test_write_is_atomic_and_keeps_the_mode(calc: Path, tools) -> None:
    os.chmod(calc, 0o754)
    await call(tools["edit_file"], {"filepath": "calc.py", "old_text": "a - b", "new_text": "a + b"})
    assert stat.S_IMODE(os.stat(calc).st_mode) == 0o754
    assert sorted(p.name for p in calc.parent.iterdir()) == ["calc.py"]


async def test_crlf_file_keeps_crlf(ws: Path, tools) -> None:
    path = ws / "win.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await call(tools["edit_file"], {"filepath": "win.txt", "old_text": "one\ntwo", "new_text": "uno\ndos\nextra"})
    assert path.read_bytes() == b"uno\r\ndos\r\nextra\r\nthree\r\n"
    refs = await read_refs(tools, "win.txt")
    await call(tools["edit_file"], {"filepath": "win.txt", "edits": [{"line": 4, "hash": refs[4], "new_text": "tres"}]})
    assert path.read_bytes() == b"uno\r\ndos\r\nextra\r\ntres\r\n"
    await call(tools["edit_file"], {"filepath": "win.txt", "old_text": "extra", "new_text": "x\ny"})
    assert path.read_bytes() == b"uno\r\ndos\r\nx\r\ny\r\ntres\r\n"


async def test_last_line_without_newline_stays_without(ws: Path, tools) -> None:
    path = ws / "nonl.txt"
    path.write_text("a\nb")
    refs = await read_refs(tools, "nonl.txt")
    await call(tools["edit_file"], {"filepath": "nonl.txt", "edits": [{"line": 2, "hash": refs[2], "new_text": "B"}]})
    assert path.read_text() == "a\nB"


async def test_no_op_edit_is_refused(calc: Path, tools) -> None:
    with pytest.raises(ToolError, match="unchanged"):
        await call(tools["edit_file"], {"filepath": "calc.py", "old_text": "a - b", "new_text": "a - b"})


async def test_binary_and_missing_files_are_refused(ws: Path, tools) -> None:
    (ws / "b.bin").write_bytes(b"\x00\x01abc")
    with pytest.raises(ToolError, match="binary"):
        await call(tools["edit_file"], {"filepath": "b.bin", "old_text": "abc", "new_text": "x"})
    with pytest.raises(ToolError, match="not found"):
        await call(tools["edit_file"], {"filepath": "none.py", "old_text": "a", "new_text": "b"})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"edits": [{"old_text": "a", "new_text": "b"}]}, "missing required field 'filepath'"),
        ({"filepath": "calc.py"}, "missing required field 'edits'"),
        ({"filepath": "calc.py", "old_text": "a"}, "missing required field 'new_text'"),
        ({"filepath": "calc.py", "edits": [{"old_text": "a"}]}, "edits\\[0\\].new_text"),
        ({"filepath": "calc.py", "edits": [{"line": "3", "hash": "abcd", "new_text": "x"}]}, "edits\\[0\\].line"),
        ({"filepath": "calc.py", "edits": [{"line": 3, "new_text": "x"}]}, "both line and hash"),
        ({"filepath": "calc.py", "edits": [{"line": 3, "hash": "ab", "end_line": 4, "new_text": "x"}]}, "end_hash go together"),
        ({"filepath": "calc.py", "edits": [{"old_text": "a", "line": 1, "hash": "ab", "new_text": "x"}]}, "not both"),
        ({"filepath": "calc.py", "edits": [{"old_text": "a", "end_line": 2, "new_text": "x"}]}, "not both"),
        ({"filepath": "calc.py", "edits": [{"old_text": "a", "new_text": "b", "flag": 1}]}, "unexpected field 'edits\\[0\\].flag'"),
        ({"filepath": "calc.py", "edits": []}, "edits"),
        ({"filepath": "calc.py", "edits": [], "old_text": "a", "new_text": "b"}, "edits"),
    ],
)
async def test_bad_arguments_are_explained(calc: Path, tools, args: dict, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        await call(tools["edit_file"], args)
    assert calc.read_text() == CALC
