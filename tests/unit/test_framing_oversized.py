"""lsp/framing.py: a body over MAX_BODY is read through (bounded memory) and comes out as an
OversizedMessage naming its top-level id; a length that lied resynchronises on the next header."""

from __future__ import annotations

import json

import pytest

from tunacode_lsp.lsp import framing
from tunacode_lsp.lsp.framing import FrameReader, OversizedMessage


def _reader(data: bytes) -> FrameReader:
    view = memoryview(data)
    position = 0

    async def read(n: int) -> bytes:
        nonlocal position
        chunk = bytes(view[position:position + n])
        position += len(chunk)
        return chunk

    return FrameReader(read)


def _frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


@pytest.fixture(autouse=True)
def small_limits(monkeypatch):
    monkeypatch.setattr(framing, "MAX_BODY", 1_000)
    monkeypatch.setattr(framing, "EDGE_KEPT", 200)
    monkeypatch.setattr(framing, "READ_CHUNK", 64)


@pytest.mark.parametrize(("body", "found", "msg_id"), [
    pytest.param(b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"x":"' + b"a" * 5_000 + b'"}}', True, 7, id="id-first"),
    pytest.param(b'{"params":{"id":"inner","x":"' + b"a" * 5_000 + b'"},"id":"outer","method":"m"}', True, "outer", id="id-last"),
    pytest.param(b'{"params":{"x":"' + b"a" * 5_000 + b'","id":"inner"},"method":"m"}', False, None, id="only-a-nested-id"),
    pytest.param(b'{"params":{"x":"\\"id\\":3 ' + b"a" * 5_000 + b'"}}', False, None, id="id-inside-a-string"),
])
async def test_an_oversized_body_names_its_top_level_id_only(body, found, msg_id):
    reader = _reader(_frame(body) + _frame(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "next"}).encode()))
    oversized = await reader.next_body()
    assert isinstance(oversized, OversizedMessage)
    assert (oversized.id_found, oversized.msg_id) == (found, msg_id)
    error = oversized.error()
    assert error["id"] == msg_id and error["error"]["code"] == -32600 and "1000" in error["error"]["message"]
    assert json.loads(await reader.next_body())["method"] == "next"  # the stream goes on


async def test_a_length_that_lied_resynchronises_on_the_next_header():
    following = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "after"}).encode()
    reader = _reader(b'Content-Length: 999999999999\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"short"}' + _frame(following))
    oversized = await reader.next_body()
    assert isinstance(oversized, OversizedMessage) and oversized.msg_id == 1
    assert json.loads(await reader.next_body())["method"] == "after"


@pytest.mark.parametrize("cut", range(1, 40, 3))
async def test_a_header_split_across_reads_is_still_found(monkeypatch, cut):
    following = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "after"}).encode()
    lied = b'Content-Length: 999999999999\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"short","x":"' + b"b" * (100 - cut) + b'"}'
    monkeypatch.setattr(framing, "READ_CHUNK", 61)
    reader = _reader(lied + _frame(following))
    assert isinstance(await reader.next_body(), OversizedMessage)
    assert json.loads(await reader.next_body())["method"] == "after"
