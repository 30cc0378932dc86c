"""The bounds of kept outputs (tools/kept_outputs.py): one output, one session's folder, names."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.tools.conftest import call, tools_for
from tunacode_lsp.tools import ToolSettings
from tunacode_lsp.tools import kept_outputs as kept


def test_one_output_and_the_session_folder_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kept, "MAX_KEPT_BYTES", 1000)
    monkeypatch.setattr(kept, "MAX_SESSION_BYTES", 2500)
    folder = tmp_path / "outputs" / "s1"
    paths = [kept.keep_output(folder, "bash", bytes([65 + n]) * 5000) for n in range(4)]
    assert all(p is not None and p.stat().st_size == 1000 for p in paths[-2:])
    assert sum(p.stat().st_size for p in folder.iterdir()) <= 2500
    assert paths[0] is not None and not paths[0].exists()  # the oldest went first
    assert paths[3] is not None and paths[3].read_bytes() == b"D" * 1000


def test_session_ids_that_are_not_plain_names_get_no_folder(tmp_path: Path) -> None:
    for bad in ("../x", "..", "a/b", "", ".hidden", "a\x00b"):
        assert kept.session_outputs_dir(tmp_path, bad) is None
    assert kept.session_outputs_dir(tmp_path, "0b7c-42") == tmp_path / "outputs" / "0b7c-42"


async def test_bash_keeps_a_cut_output_only(ws: Path, tmp_path: Path) -> None:
    folder = tmp_path / "outputs" / "s1"
    tools = tools_for(ws, ToolSettings(outputs_dir=folder, max_output_chars=1000))
    short = await call(tools["bash"], {"command": "echo hi"})
    assert "kept in" not in short.content[0].text and not folder.exists()
    long = await call(tools["bash"], {"command": "seq 1 5000"})
    assert f"is kept in {folder}/bash-" in long.content[0].text
    (only,) = folder.iterdir()
    assert only.read_text() == "".join(f"{n}\n" for n in range(1, 5001))
    again = await call(tools["read_file"], {"filepath": str(only), "offset": 4998})
    assert "4999:" in again.content[0].text and "|5000" in again.content[0].text


def test_the_servers_keys_are_not_written_to_a_kept_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tunacode_lsp.core.redact import process_redactor

    monkeypatch.setenv("OPENAI_API_KEY", "sk-kept-0123456789abcdef")
    process_redactor.cache_clear()
    try:
        path = kept.keep_output(tmp_path / "s", "bash", b"x" * 100 + b" sk-kept-0123456789abcdef\n")
    finally:
        monkeypatch.delenv("OPENAI_API_KEY")
        process_redactor.cache_clear()
    assert path is not None and b"sk-kept" not in path.read_bytes() and b"[redacted]" in path.read_bytes()
