"""Context items name workspace files the server reads itself: with the confined reader, a
FIFO (or a link to one) is refused at once with -32602 naming it, instead of a request that
never starts; the server stays responsive."""

from __future__ import annotations

import asyncio
import os

import pytest

from tests.conftest import scripted_options
from tests.lsp.test_context import _error

BOUND = 30.0


@pytest.mark.parametrize("kind", ["fifo", "link-to-fifo"])
@pytest.mark.parametrize("item_type", ["file", "selection"])
async def test_a_special_file_as_context_is_refused_at_once(lsp, model, workspace, kind, item_type):
    os.mkfifo(workspace / "pipe")
    name = "pipe" if kind == "fifo" else "notes.md"
    if kind == "link-to-fifo":
        (workspace / "notes.md").symlink_to("pipe")
    item = {"type": item_type, "uri": (workspace / name).as_uri()}
    if item_type == "selection":
        item["range"] = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
    model.set_script([{"steps": [{"text": "Done."}]}])
    await lsp.start(init_options=scripted_options(model))
    code, message = await asyncio.wait_for(_error(lsp.command("tunacode.request", {"prompt": "hi", "context": [item]})), BOUND)
    assert code == -32602 and "pipe" in message and "FIFO" in message, message
    assert model.requests == []
    assert (await asyncio.wait_for(lsp.command("tunacode.status"), BOUND))["version"]
