"""Shared fixtures: a scripted model on loopback, a temp workspace and TUNACODE_HOME, the real server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tunacode_lsp.devtools.scripted_model import ScriptedModelServer


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer({"turns": []}).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def scripted_options(model: ScriptedModelServer, **extra: Any) -> dict[str, Any]:
    """Initialization options that point the server at the scripted model."""

    options: dict[str, Any] = {
        "model": "openai-compatible:scripted",
        "baseUrl": model.chat_url,
        "approval": "auto",
    }
    options.update(extra)
    return options


@pytest_asyncio.fixture
async def lsp(workspace: Path, home: Path) -> AsyncIterator[Any]:
    from tests.lsp.harness import LspHarness

    harness = LspHarness(workspace, home)
    try:
        yield harness
    finally:
        await harness.stop()
