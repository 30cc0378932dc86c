"""Killing a harness's server process the hard way (SIGKILL), and leaving the harness clean."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

from tests.lsp.harness import WAIT, LspHarness


async def sigkill(harness: LspHarness, *pending: asyncio.Future[Any]) -> int:
    """SIGKILL the server, reap it, stop the client; requests still pending are dropped.

    Returns the exit status (-9). Afterwards `harness.stop()` does nothing, so a test may
    start a new harness on the same TUNACODE_HOME at once.
    """

    client = harness.client
    assert client is not None and client._server is not None
    process = client._server
    os.kill(process.pid, signal.SIGKILL)
    returncode = await asyncio.wait_for(process.wait(), WAIT)  # reaped: its pid is dead for lease checks
    for future in pending:
        future.cancel()
    await asyncio.wait_for(client.stop(), WAIT)
    harness.client = None
    return returncode
