"""The confined reader (tools/confined_read.py): links out, special files, size bounds, off the loop."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from pathlib import Path

import pytest

from tunacode_lsp.tools import beneath, confined_read
from tunacode_lsp.tools.confined_read import ConfinedFile, read_confined, read_confined_async


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways tools/beneath.py opens a path: the kernel's openat2 and the O_NOFOLLOW walk."""
    if request.param == "walk":
        monkeypatch.setattr(beneath, "_have_openat2", False)
    return str(request.param)


def test_a_regular_file_is_read(tmp_path: Path, resolver: str) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "AGENTS.md").write_text("be kind")
    found = read_confined(tmp_path, "sub/AGENTS.md")
    assert (found.data, found.notice, found.shown) == (b"be kind", None, "sub/AGENTS.md")
    assert read_confined(tmp_path, tmp_path / "sub" / "AGENTS.md").data == b"be kind"


def test_a_missing_file_is_nothing_without_a_notice(tmp_path: Path, resolver: str) -> None:
    found = read_confined(tmp_path, "AGENTS.md")
    assert (found.data, found.notice) == (None, None)
    assert read_confined(tmp_path, "no/such/AGENTS.md").notice is None


@pytest.mark.parametrize("target", ["/proc/self/environ", "secret"])
def test_a_link_out_is_skipped_with_a_notice(tmp_path: Path, resolver: str, target: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "secret").write_text("AWS_SECRET_ACCESS_KEY=abc")
    os.symlink(target if target.startswith("/") else tmp_path / target, root / "AGENTS.md")
    found = read_confined(root, "AGENTS.md")
    assert found.data is None
    assert found.notice is not None and "AGENTS.md" in found.notice and "abc" not in found.notice


def test_a_relative_link_out_and_a_folder_link_out_are_skipped(tmp_path: Path, resolver: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / ".mcp.json").write_text("{}")
    os.symlink("../outside/.mcp.json", root / ".mcp.json")
    os.symlink("../outside", root / ".tunacode")
    for rel in (".mcp.json", ".tunacode/.mcp.json", "../outside/.mcp.json", str(tmp_path / "outside" / ".mcp.json")):
        found = read_confined(root, rel)
        assert found.data is None and found.notice, rel


def test_a_link_inside_is_followed_with_openat2(tmp_path: Path) -> None:
    if not beneath._have_openat2:
        pytest.skip("no openat2 here")
    (tmp_path / "AGENTS.md").write_text("rules")
    os.symlink("AGENTS.md", tmp_path / "CLAUDE.md")
    assert read_confined(tmp_path, "CLAUDE.md").data == b"rules"


def test_special_files_are_skipped_without_waiting(tmp_path: Path, resolver: str) -> None:
    os.mkfifo(tmp_path / "AGENTS.md")
    os.symlink("AGENTS.md", tmp_path / "CLAUDE.md")
    (tmp_path / "folder").mkdir()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock"))
    try:
        done: list[ConfinedFile] = []
        worker = threading.Thread(
            target=lambda: done.extend(read_confined(tmp_path, name) for name in ("AGENTS.md", "CLAUDE.md", "folder", "sock")),
            daemon=True,
        )
        worker.start()
        worker.join(10)
        assert not worker.is_alive(), "the reader waited on a special file"
    finally:
        server.close()
    for found in done:
        assert found.data is None
        assert found.notice and found.shown in found.notice
    assert "FIFO" in str(done[0].notice) and "folder" in str(done[2].notice)


def test_a_link_to_an_endless_device_is_never_read(tmp_path: Path, resolver: str) -> None:
    os.symlink("/dev/zero", tmp_path / "AGENTS.md")  # endless, and outside
    found = read_confined(tmp_path, "AGENTS.md")
    assert found.data is None and found.notice


def test_the_size_bound(tmp_path: Path, resolver: str) -> None:
    (tmp_path / "big.md").write_bytes(b"x" * 5000)
    skipped = read_confined(tmp_path, "big.md", limit=1000)
    assert skipped.data is None and skipped.notice and "1,000" in skipped.notice
    cut = read_confined(tmp_path, "big.md", limit=1000, truncate=True)
    assert cut.data == b"x" * 1000 and cut.truncated and cut.notice is None


def test_the_async_form_reads_in_a_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "AGENTS.md").write_text("hi")
    seen: list[int] = []
    original = confined_read.open_beneath

    def spying(real_root: Path, path: Path, flags: int, shown: str, mode: int = 0o644) -> int:
        seen.append(threading.get_ident())
        return original(real_root, path, flags, shown, mode)

    monkeypatch.setattr(confined_read, "open_beneath", spying)

    async def main() -> tuple[int, bytes | None]:
        found = await read_confined_async(tmp_path, "AGENTS.md")
        return threading.get_ident(), found.data

    loop_thread, data = asyncio.run(main())
    assert data == b"hi"
    assert seen and loop_thread not in seen
