"""Red team (v3): an oversized message whose last bytes are built to make the id recovery
backtrack. The tail of an oversized body was searched with a regex that was quadratic in
the kept tail (256 KiB of `,"id":1` took minutes of CPU on the event loop: the server was
deaf to every other message, cancellation included)."""

from __future__ import annotations

import time

import pytest_asyncio

from tests.lsp.raw_wire_client import RawClient


@pytest_asyncio.fixture
async def raw(home, workspace):
    client = await RawClient.start(home, workspace)
    try:
        yield client
    finally:
        await client.close()


async def test_an_oversized_body_with_a_hostile_tail_is_answered_promptly(raw, workspace):
    from tunacode_lsp.lsp.framing import EDGE_KEPT, MAX_BODY

    await raw.initialize(workspace)
    head = b'{"jsonrpc":"2.0","method":"workspace/executeCommand","params":{"x":"'
    tail = b',"id":1' * (EDGE_KEPT // 7)  # no closing brace: every "id" in it is tried to the end
    filler = MAX_BODY + 1024 - len(head) - len(tail)
    raw.write(b"Content-Length: %d\r\n\r\n" % (len(head) + filler + len(tail)) + head)
    chunk = b"a" * (4 * 1024 * 1024)
    while filler > 0:
        raw.write(chunk[:filler])
        filler -= min(filler, len(chunk))
        await raw.process.stdin.drain()
    raw.write(tail)
    await raw.process.stdin.drain()
    started = time.monotonic()
    status = await raw.command("tunacode.status", timeout=20)
    assert "result" in status, status
    assert time.monotonic() - started < 20


async def test_a_flood_of_header_lines_without_a_blank_line_costs_linear_time(raw, workspace):
    """Bug: each header block over MAX_HEADER skipped 14 bytes and searched the whole buffer
    again for its end: 300 KB of `Content-Length: 1\\r\\n` took 34 s of CPU on the event loop
    (and wrote two warnings per 19 bytes into the log)."""

    await raw.initialize(workspace)
    raw.write(b"Content-Length: 1\r\n" * (2 * 1024 * 1024 // 19))  # 2 MB: hours before, linear now
    await raw.process.stdin.drain()
    raw.write(b"\r\n{}")  # a blank line ends the last header block: a 1-byte body, then garbage
    status = await raw.command("tunacode.status", timeout=20)
    assert "result" in status, status
