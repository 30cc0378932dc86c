"""Start a harness's server with its stderr going to a file (to read every byte it logged).

pytest-lsp forwards the server's stderr line by line and stops forwarding at shutdown (and
at the first line over 64 KiB), so a test that must see all of it redirects it instead.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any
from unittest import mock

from pytest_lsp import ClientServerConfig

from tests.lsp import harness as harness_module
from tests.lsp.harness import LspHarness


async def start_with_stderr_file(harness: LspHarness, stderr_path: Path, **start_options: Any) -> Any:
    """`harness.start(**start_options)` with the server run as `python -m tunacode_lsp 2>>stderr_path`."""

    def config(**fields: Any) -> ClientServerConfig:
        command = ["/bin/sh", "-c", 'exec "$0" -m tunacode_lsp 2>>"$1"', sys.executable, str(stderr_path)]
        return ClientServerConfig(**{**fields, "server_command": command})

    with mock.patch.object(harness_module, "ClientServerConfig", config):
        return await harness.start(**start_options)
