"""read_file on real files: the LINE:HASH|content format, limits, refusals."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tunacode_lsp.tools import ToolCancelled, ToolError, ToolSettings
from tunacode_lsp.tools.read_file import MAX_LINE_CHARS, MAX_OUTPUT_CHARS
from tunacode_lsp.tools.textfile import MAX_FILE_BYTES, line_hash

from .conftest import call, refs_of, text_of, tools_for


async def test_lines_are_numbered_with_content_hashes(ws: Path, tools) -> None:
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    result = await call(tools["read_file"], {"filepath": "calc.py"})
    lines = text_of(result).splitlines()
    assert lines[0] == "calc.py: lines 1-2 of 2"
    assert lines[1] == f"1:{line_hash('def add(a, b):')}|def add(a, b):"
    assert lines[2] == f"2:{line_hash('    return a - b')}|    return a - b"
    assert result.details == {
        "path": "calc.py", "start_line": 1, "end_line": 2, "total_lines": 2, "truncated": False
    }


def test_hash_depends_on_content_only() -> None:
    assert line_hash("x = 1") == line_hash("x = 1")
    assert line_hash("x = 1") != line_hash("x = 2")
    assert len(line_hash("")) == 4


async def test_crlf_endings_are_not_part_of_the_hash(ws: Path, tools) -> None:
    (ws / "w.txt").write_bytes(b"alpha\r\nbeta\r\n")
    refs = refs_of(text_of(await call(tools["read_file"], {"filepath": "w.txt"})))
    assert refs == {1: line_hash("alpha"), 2: line_hash("beta")}


async def test_offset_and_limit_window_with_footer(ws: Path, tools) -> None:
    (ws / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = await call(tools["read_file"], {"filepath": "n.txt", "offset": 3, "limit": 4})
    text = text_of(result)
    assert text.splitlines()[0] == "n.txt: lines 4-7 of 10"
    assert "4:" in text.splitlines()[1] and text.splitlines()[1].endswith("|line 4")
    assert text.splitlines()[4].endswith("|line 7")
    assert "Read on with offset=7" in text
    assert result.details["truncated"] is True


async def test_default_limit_comes_from_settings(ws: Path) -> None:
    (ws / "n.txt").write_text("x\n" * 20)
    tools = tools_for(ws, ToolSettings(read_default_limit=5))
    result = await call(tools["read_file"], {"filepath": "n.txt"})
    assert result.details["end_line"] == 5
    assert "15 more lines" in text_of(result)


async def test_output_size_limit_stops_with_a_message(ws: Path, tools) -> None:
    (ws / "big.txt").write_text(("y" * 199 + "\n") * 1500)
    result = await call(tools["read_file"], {"filepath": "big.txt"})
    text = text_of(result)
    assert len(text) < MAX_OUTPUT_CHARS + 500
    assert "size limit" in text
    assert f"offset={result.details['end_line']}" in text
    assert result.details["end_line"] < 1500


async def test_long_lines_are_cut_for_display_but_hashed_whole(ws: Path, tools) -> None:
    long_line = "z" * (MAX_LINE_CHARS + 500)
    (ws / "long.txt").write_text(long_line + "\n")
    text = text_of(await call(tools["read_file"], {"filepath": "long.txt"}))
    assert f"line cut, {len(long_line):,} characters" in text
    assert "z" * (MAX_LINE_CHARS + 1) not in text
    assert refs_of(text)[1] == line_hash(long_line)


async def test_binary_file_is_refused(ws: Path, tools) -> None:
    (ws / "img.bin").write_bytes(b"\x89PNG\x00\x01\x02")
    with pytest.raises(ToolError, match="binary"):
        await call(tools["read_file"], {"filepath": "img.bin"})


async def test_file_over_the_size_limit_is_refused(ws: Path, tools) -> None:
    with open(ws / "huge.txt", "wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(ToolError, match="too large"):
        await call(tools["read_file"], {"filepath": "huge.txt"})


async def test_missing_file_directory_and_offset_past_end(ws: Path, tools) -> None:
    (ws / "d").mkdir()
    (ws / "one.txt").write_text("1\n")
    with pytest.raises(ToolError, match="not found"):
        await call(tools["read_file"], {"filepath": "nope.txt"})
    with pytest.raises(ToolError, match="directory"):
        await call(tools["read_file"], {"filepath": "d"})
    with pytest.raises(ToolError, match="past the end"):
        await call(tools["read_file"], {"filepath": "one.txt", "offset": 5})


async def test_empty_file(ws: Path, tools) -> None:
    (ws / "e.txt").write_text("")
    assert "empty" in text_of(await call(tools["read_file"], {"filepath": "e.txt"}))


async def test_non_utf8_bytes_are_shown_replaced(ws: Path, tools) -> None:
    (ws / "l1.txt").write_bytes(b"caf\xe9\n")
    assert "caf\ufffd" in text_of(await call(tools["read_file"], {"filepath": "l1.txt"}))


@pytest.mark.parametrize(
    ("args", "field"),
    [({}, "filepath"), ({"filepath": 3}, "filepath"), ({"filepath": "a", "offset": -1}, "offset"),
     ({"filepath": "a", "limit": "10"}, "limit"), ({"filepath": "a", "lines": 3}, "lines")],
)  # fmt: skip
async def test_bad_arguments_name_the_field(tools, args: dict, field: str) -> None:
    with pytest.raises(ToolError, match=field):
        await call(tools["read_file"], args)


async def test_abort_before_start_is_cancelled(ws: Path, tools) -> None:
    (ws / "a.txt").write_text("a\n")
    signal = asyncio.Event()
    signal.set()
    with pytest.raises(ToolCancelled, match="cancelled by the user"):
        await call(tools["read_file"], {"filepath": "a.txt"}, signal)
