"""Confinement without races (issue 13 section 4): a thread swaps a folder of the workspace
for a symlink to an outside folder (atomic rename) again and again while the tools read and
write through it. Nothing outside is ever read or written."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from tunacode_lsp.tools import ToolError

from .conftest import call, text_of, tools_for

ROUNDS = 300


class Swapper(threading.Thread):
    """Keeps turning ws/d into a link to `outside` and back, each step an atomic rename."""

    def __init__(self, ws: Path, outside: Path) -> None:
        super().__init__(daemon=True)
        self.ws, self.outside = ws, outside
        self.stop = threading.Event()

    def run(self) -> None:
        real, link, target = self.ws / "d.real", self.ws / "d.link", self.ws / "d"
        while not self.stop.is_set():
            try:
                os.rename(link, target)  # d -> outside
                os.rename(target, link)
                os.rename(real, target)  # d is the real folder
                os.rename(target, real)
            except OSError:  # a tool created a folder `d` meanwhile: clear it and go on
                if target.is_dir() and not target.is_symlink() and target.exists() and not real.exists():
                    os.rename(target, real)
                elif target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target, ignore_errors=True)


@pytest.fixture
def raced(ws: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET outside the workspace\n")
    (ws / "d.real").mkdir()
    (ws / "d.real" / "secret.txt").write_text("fine, inside\n")
    (ws / "d.link").symlink_to(outside)
    (ws / "d").symlink_to(ws / "d.real")  # resolvable when the tool checks it
    os.rename(ws / "d", ws / "d.tmp")
    os.unlink(ws / "d.tmp")
    swapper = Swapper(ws, outside)
    swapper.start()
    yield outside
    swapper.stop.set()
    swapper.join(5)


async def test_reads_never_return_outside_content(ws: Path, raced: Path) -> None:
    tools = tools_for(ws)
    inside = 0
    for _ in range(ROUNDS):
        try:
            text = text_of(await call(tools["read_file"], {"filepath": "d/secret.txt"}))
        except ToolError:
            continue
        assert "SECRET" not in text
        inside += "fine, inside" in text
    assert inside > 0, "the race never let a read through at all"


async def test_writes_never_land_outside(ws: Path, raced: Path) -> None:
    tools = tools_for(ws)
    for index in range(ROUNDS):
        try:
            await call(tools["write_file"], {"filepath": f"d/new{index}.txt", "content": "x\n"})
        except ToolError:
            pass
    assert sorted(p.name for p in raced.iterdir()) == ["secret.txt"]


@pytest.mark.skipif(not __import__("tunacode_lsp.tools.sandbox", fromlist=["x"]).sandbox_state("auto").active,
                    reason="search is confined by bubblewrap (installed by the test set-up)")
async def test_search_never_reaches_outside(ws: Path, raced: Path) -> None:
    tools = tools_for(ws)
    found_inside = 0
    for _ in range(60):
        grep = text_of(await call(tools["grep"], {"pattern": "S.CRET|fine"}))
        assert "SECRET outside" not in grep
        found_inside += "fine, inside" in grep
        await call(tools["list_files"], {})
    assert found_inside > 0, "the race never let a search through at all"
