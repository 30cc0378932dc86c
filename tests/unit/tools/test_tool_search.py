"""grep and list_files: .gitignore (nested too), skipped folders, binary files, limits, abort."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tunacode_lsp.tools import ToolCancelled, ToolError
from tunacode_lsp.tools.grep import MAX_MATCHES
from tunacode_lsp.tools.list_files import MAX_ENTRIES

from .conftest import call, text_of


@pytest.fixture
def tree(ws: Path) -> Path:
    files = {
        ".gitignore": "*.log\nbuild/\n!keep.log\n",
        "src/app.py": "import os\nTOKEN = 'needle'\n",
        "src/util.py": "def needle():\n    return 1\n",
        "src/.gitignore": "generated.py\n",
        "src/generated.py": "needle = 'generated'\n",
        "src/deep/.gitignore": "!generated.py\n",
        "src/deep/generated.py": "needle = 'kept by negation'\n",
        "debug.log": "needle in a log\n",
        "keep.log": "needle kept\n",
        "build/out.py": "needle = 'built'\n",
        "node_modules/lib/index.js": "needle\n",
        ".venv/lib/site.py": "needle\n",
        "__pycache__/x.py": "needle\n",
        ".git/config": "needle\n",
        "docs/readme.md": "A needle in docs\n",
    }
    for rel, content in files.items():
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    (ws / "image.bin").write_bytes(b"needle\x00\x01\x02")
    return ws


async def test_grep_honours_gitignore_and_skips_tool_folders(tree: Path, tools) -> None:
    result = await call(tools["grep"], {"pattern": "needle"})
    assert text_of(result).splitlines() == [
        "docs/readme.md:1:A needle in docs",
        "keep.log:1:needle kept",
        "src/app.py:2:TOKEN = 'needle'",
        "src/deep/generated.py:1:needle = 'kept by negation'",
        "src/util.py:1:def needle():",
    ]
    assert result.details["matches"] == 5 and result.details["truncated"] is False


async def test_grep_path_glob_and_regex(tree: Path, tools) -> None:
    result = await call(tools["grep"], {"pattern": r"def \w+\(", "path": "src", "glob": "*.py"})
    assert text_of(result) == "src/util.py:1:def needle():"
    result = await call(tools["grep"], {"pattern": "(?i)A NEEDLE", "glob": "docs/*.md"})
    assert text_of(result) == "docs/readme.md:1:A needle in docs"


async def test_grep_single_file_even_if_ignored(tree: Path, tools) -> None:
    result = await call(tools["grep"], {"pattern": "needle", "path": "debug.log"})
    assert text_of(result) == "debug.log:1:needle in a log"


async def test_grep_no_match_and_invalid_regex(tree: Path, tools) -> None:
    result = await call(tools["grep"], {"pattern": "haystack"})
    assert text_of(result).startswith("No matches for 'haystack' in .")
    with pytest.raises(ToolError, match="Rust regular expression"):
        await call(tools["grep"], {"pattern": "(unclosed"})
    with pytest.raises(ToolError, match="does not exist"):
        await call(tools["grep"], {"pattern": "x", "path": "missing"})


async def test_grep_output_is_bounded_with_a_note(ws: Path, tools) -> None:
    (ws / "many.txt").write_text("hit " + "x" * 500 + "\n" + "hit\n" * (MAX_MATCHES + 50))
    result = await call(tools["grep"], {"pattern": "hit"})
    lines = text_of(result).splitlines()
    assert len(lines) == MAX_MATCHES + 1
    assert "omitted" in lines[0] and len(lines[0]) < 400  # ripgrep's preview of a long line
    assert lines[-1].startswith(f"[Stopped after {MAX_MATCHES} matches")
    assert result.details["truncated"] is True


async def test_grep_abort_stops_ripgrep_at_once(ws: Path, tools) -> None:
    for index in range(300):
        (ws / f"f{index:03}.txt").write_text(("needle " * 1000 + "\n") * 200)
    signal = asyncio.Event()
    task = asyncio.ensure_future(call(tools["grep"], {"pattern": "(needle )+x"}, signal))
    await _until_running("(needle )+x")  # ripgrep is searching
    started = time.monotonic()
    signal.set()
    with pytest.raises(ToolCancelled):
        await asyncio.wait_for(task, 5)
    assert time.monotonic() - started < 1.0


async def test_a_catastrophic_pattern_is_linear(ws: Path, tools) -> None:
    """Bug: `^(a+)+$` on Python re held the GIL and froze the whole server."""

    (ws / "a.txt").write_text("a" * 40 + "!\n")
    started = time.monotonic()
    result = await call(tools["grep"], {"pattern": "^(a+)+$"})
    assert time.monotonic() - started < 2.0 and text_of(result).startswith("No matches")
    started = time.monotonic()
    await call(tools["list_files"], {"glob": "*a*a*a*a*a*a*b"})
    assert time.monotonic() - started < 2.0


async def test_a_deep_tree_lists_its_files(ws: Path, tools) -> None:
    """Bug: a 1,000-level tree failed with "maximum recursion depth exceeded"."""

    (ws / "top.txt").write_text("needle\n")
    deep = ws
    for _ in range(300):  # path length limits stop real trees far below 1,000 levels of 'd/'
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "bottom.txt").write_text("needle\n")
    listed = text_of(await call(tools["list_files"], {})).splitlines()
    assert "top.txt" in listed and any(line.endswith("/bottom.txt") for line in listed)


async def test_grep_abort_before_start(tree: Path, tools) -> None:
    signal = asyncio.Event()
    signal.set()
    with pytest.raises(ToolCancelled):
        await call(tools["grep"], {"pattern": "needle"}, signal)


async def test_list_files_honours_gitignore(tree: Path, tools) -> None:
    result = await call(tools["list_files"], {})
    assert text_of(result).splitlines() == [
        ".gitignore",
        "docs/readme.md",
        "image.bin",
        "keep.log",
        "src/.gitignore",
        "src/app.py",
        "src/deep/.gitignore",
        "src/deep/generated.py",
        "src/util.py",
    ]
    assert result.details["truncated"] is False


async def test_list_files_path_and_glob(tree: Path, tools) -> None:
    result = await call(tools["list_files"], {"path": "src", "glob": "*.py"})
    assert text_of(result).splitlines() == ["src/app.py", "src/deep/generated.py", "src/util.py"]
    result = await call(tools["list_files"], {"glob": "*.rs"})
    assert text_of(result) == "No files under . matching '*.rs'."


async def test_list_files_gitignore_of_parent_applies_below(tree: Path, tools) -> None:
    (tree / "src" / "deep" / "trace.log").write_text("x")
    result = await call(tools["list_files"], {"path": "src/deep"})
    assert text_of(result).splitlines() == ["src/deep/.gitignore", "src/deep/generated.py"]


async def test_list_files_refusals(tree: Path, tools) -> None:
    with pytest.raises(ToolError, match="use read_file"):
        await call(tools["list_files"], {"path": "src/app.py"})
    with pytest.raises(ToolError, match="does not exist"):
        await call(tools["list_files"], {"path": "nowhere"})


async def test_list_files_is_bounded_with_a_note(ws: Path, tools) -> None:
    for index in range(MAX_ENTRIES + 20):
        (ws / f"f{index:05}.txt").touch()
    result = await call(tools["list_files"], {})
    lines = text_of(result).splitlines()
    assert len(lines) == MAX_ENTRIES + 1
    assert lines[-1] == f"[Listed {MAX_ENTRIES} of {MAX_ENTRIES + 20:,} files. Narrow with path or glob.]"
    assert result.details["truncated"] is True


async def test_symlinks_are_not_followed(ws: Path, tools, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("needle\n")
    (ws / "real.txt").write_text("needle\n")
    (ws / "alias.txt").symlink_to(ws / "real.txt")
    (ws / "out").symlink_to(outside)
    assert text_of(await call(tools["list_files"], {})).splitlines() == ["real.txt"]
    assert text_of(await call(tools["grep"], {"pattern": "needle"})).splitlines() == ["real.txt:1:needle"]


async def _until_running(argument: str, timeout: float = 10.0) -> None:
    """Wait (bounded) until a process with `argument` on its command line exists."""

    wanted = argument.encode()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit() and wanted in (proc / "cmdline").read_bytes().split(b"\0"):
                    return
            except OSError:
                continue
        await asyncio.sleep(0.005)  # polling /proc: a process start sends no event
    raise AssertionError(f"no process with {argument!r} started within {timeout:g} s")
