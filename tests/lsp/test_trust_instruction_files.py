"""AGENTS.md is the checkout's file, read with the confined reader: over the real server, a
link out (to a secrets file, to /proc/self/environ) never reaches the model, a FIFO never
blocks the server, each is skipped with a notice naming it; a plain one is used."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.conftest import scripted_options

HELLO = {"turns": [{"steps": [{"text": "Hello.", "chunks": 1}]}]}
SECRET = "AKIAIOSFODNN7EXAMPLE-secret-value"
BOUND = 30.0  # seconds: a blocked event loop never answers


def _notices(lsp, request_id: str) -> list[str]:
    return [e["message"] for e in lsp.events_of(request_id) if e["type"] == "notice"]


def _make(kind: str, workspace: Path, tmp_path: Path) -> None:
    agents = workspace / "AGENTS.md"
    if kind == "link-to-secrets":
        secrets = tmp_path / "credentials"
        secrets.write_text(f"[default]\naws_secret_access_key = {SECRET}\n")
        agents.symlink_to(secrets)
    elif kind == "relative-link-out":
        (tmp_path / "credentials").write_text(f"key = {SECRET}\n")
        agents.symlink_to("../credentials")
    elif kind == "proc-environ":
        agents.symlink_to("/proc/self/environ")
    elif kind == "fifo":
        os.mkfifo(agents)
    elif kind == "link-to-fifo":
        os.mkfifo(workspace / "pipe")
        agents.symlink_to("pipe")
    elif kind == "folder-link-out":
        (tmp_path / "elsewhere").mkdir()
        (tmp_path / "elsewhere" / "AGENTS.md").write_text(SECRET)
        (workspace / "docs").symlink_to(tmp_path / "elsewhere")
        agents.symlink_to("docs/AGENTS.md")


@pytest.mark.parametrize("kind", ["link-to-secrets", "relative-link-out", "proc-environ", "fifo", "link-to-fifo", "folder-link-out"])
async def test_a_hostile_agents_md_is_skipped_with_a_notice(lsp, model, workspace, tmp_path, kind):
    _make(kind, workspace, tmp_path)
    model.set_script(HELLO)
    await lsp.start(init_options=scripted_options(model), env={"TUNA_TEST_SECRET": SECRET})
    result = await asyncio.wait_for(lsp.command("tunacode.request", {"prompt": "hi"}), BOUND)
    assert result["stopReason"] == "end_turn"
    system = model.requests[0]["messages"][0]["content"]
    assert SECRET not in system and "Project instructions" not in system
    notices = _notices(lsp, result["requestId"])
    assert any("AGENTS.md" in n and "skipped" in n for n in notices), notices
    assert all(SECRET not in n for n in notices)
    # the server still answers at once (the loop never waited on the file)
    status = await asyncio.wait_for(lsp.command("tunacode.status", {}), BOUND)
    assert status["version"]


async def test_a_link_inside_the_workspace_is_followed(lsp, model, workspace):
    (workspace / "docs").mkdir()
    (workspace / "docs" / "rules.md").write_text("Always answer in French.\n")
    (workspace / "AGENTS.md").symlink_to("docs/rules.md")
    model.set_script(HELLO)
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    assert "Always answer in French." in model.requests[0]["messages"][0]["content"]
    assert _notices(lsp, result["requestId"]) == []


async def test_a_huge_agents_md_is_cut_not_read_whole(lsp, model, workspace):
    with open(workspace / "AGENTS.md", "wb") as f:
        f.write(b"rule\n" * 20_000)
        f.truncate(256 * 1024**2)  # 256 MB, sparse
    model.set_script(HELLO)
    await lsp.start(init_options=scripted_options(model))
    result = await asyncio.wait_for(lsp.command("tunacode.request", {"prompt": "hi"}), BOUND)
    system = model.requests[0]["messages"][0]["content"]
    assert result["stopReason"] == "end_turn" and "[AGENTS.md truncated]" in system and len(system) < 40_000
