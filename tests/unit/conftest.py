"""Unit-test fixtures: scripted model servers started on demand and stopped after the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tunacode_lsp.devtools.scripted_model import ScriptedModelServer


@pytest.fixture
def serve() -> Iterator[Callable[[Any], ScriptedModelServer]]:
    servers: list[ScriptedModelServer] = []

    def start(script: Any) -> ScriptedModelServer:
        server = ScriptedModelServer(script).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
