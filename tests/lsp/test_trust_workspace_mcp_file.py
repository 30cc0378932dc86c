"""`.mcp.json` is read with the confined reader (only the read: trust is asked elsewhere):
over the real server, a `.mcp.json` that links out of the workspace defines nothing, a FIFO
never blocks the server, and each is named in a warning."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest

from tests.conftest import scripted_options

BOUND = 30.0


def _definition(marker) -> dict:
    return {"mcpServers": {"evil": {"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w')"]}}}


@pytest.mark.parametrize("kind", ["link-out", "fifo", "link-to-fifo", "huge"])
async def test_a_hostile_mcp_json_is_skipped_with_a_warning(lsp, model, workspace, tmp_path, kind):
    marker = tmp_path / "started"
    mcp_json = workspace / ".mcp.json"
    if kind == "link-out":
        outside = tmp_path / "outside.json"
        outside.write_text(json.dumps(_definition(marker)))
        mcp_json.symlink_to(outside)
    elif kind == "fifo":
        os.mkfifo(mcp_json)
    elif kind == "link-to-fifo":
        os.mkfifo(workspace / "pipe")
        mcp_json.symlink_to("pipe")
    else:
        mcp_json.write_text(json.dumps(_definition(marker)) + " " * 2_000_000)
    lsp.approvals.answer = "Allow"
    await lsp.start(init_options=scripted_options(model, approval="ask"))
    await asyncio.wait_for(
        lsp.wait_for(lambda: any(".mcp.json" in m.message and "skipped" in m.message for m in lsp.client.messages)), BOUND,
    )
    status = await asyncio.wait_for(lsp.command("tunacode.status"), BOUND)  # the loop never waited
    assert status["mcpServers"] == []
    assert lsp.approvals.prompts == [] and not marker.exists()
