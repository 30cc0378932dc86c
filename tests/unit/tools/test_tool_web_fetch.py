"""web_fetch's address rule on every hop: a redirect from an allowed address to a loopback
one is refused before anything is fetched from it."""

from __future__ import annotations

import pytest

from tests.lsp.web_server import web_server
from tests.unit.tools.conftest import call
from tunacode_lsp.tools import ToolError, ToolSettings
from tunacode_lsp.tools import web_fetch as wf


def test_address_rules() -> None:
    for address in ("127.0.0.1", "::1", "169.254.169.254", "fe80::1", "10.1.2.3", "192.168.0.1", "172.16.0.1",
                    "100.64.0.1", "::ffff:127.0.0.1", "0.0.0.0", "224.0.0.1"):
        assert wf.address_problem(address, False), address
    assert wf.address_problem("93.184.215.14", False) is None
    assert wf.address_problem("127.0.0.1", True) is None
    assert wf.address_problem("0.0.0.0", True)  # never: unspecified


@pytest.mark.parametrize(
    "address",
    ["::127.0.0.1", "::169.254.169.254", "64:ff9b::a9fe:a9fe", "64:ff9b::10.0.0.5", "64:ff9b:1::a00:5",
     "2002:7f00:1::1", "2002:a9fe:a9fe::1", "2002:c0a8:1::1"],
)
def test_ipv6_forms_of_a_private_ipv4_address_are_refused(address: str) -> None:
    """IPv4-compatible, NAT64 (a NAT64 gateway connects to the IPv4 address inside, the private
    ones of its network too) and 6to4 forms passed as public addresses before."""
    assert wf.address_problem(address, False), address
    assert wf.address_problem("64:ff9b::5db8:d70e", False) is None  # NAT64 of a public address


async def test_a_redirect_to_loopback_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    real = wf.address_problem
    # the test server's own address stands for a public one; every other address keeps the rule
    monkeypatch.setattr(wf, "address_problem", lambda a, allow: None if a == "127.0.0.1" else real(a, allow))
    tool = wf.create_web_fetch_tool(ToolSettings())
    with web_server() as (base, hits):
        with pytest.raises(ToolError, match=r"127\.0\.0\.2 is a loopback address"):
            await call(tool, {"url": f"{base}/to-other-loopback"})
    assert hits == ["/to-other-loopback"]


async def test_not_http() -> None:
    tool = wf.create_web_fetch_tool(ToolSettings())
    for url in ("file:///etc/passwd", "ftp://example.org/", "gopher://x", "http://"):
        with pytest.raises(ToolError):
            await call(tool, {"url": url})


def _gzip(data: bytes) -> bytes:
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


async def _serve_once(body: bytes, encoding: str):
    import asyncio

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: %s\r\n"
                     b"Content-Length: %d\r\nConnection: close\r\n\r\n" % (encoding.encode(), len(body)) + body)
        await writer.drain()
        writer.close()

    return await asyncio.start_server(answer, "127.0.0.1", 0)


@pytest.mark.parametrize(
    ("encoding", "layers", "size", "expected"),
    [
        pytest.param("gzip, gzip", 2, 256 * 1024 * 1024, "stacked encodings", id="gzip-bomb-stacked"),  # 980 bytes -> 256 MB
        pytest.param("gzip", 1, 64 * 1024 * 1024, None, id="gzip-bomb"),
        pytest.param("gzip", 1, 1000, None, id="plain-gzip"),
        pytest.param("br", 0, 10, "does not read", id="unknown-encoding"),
    ],
)
async def test_a_compressed_body_is_decoded_within_the_bound(encoding, layers, size, expected) -> None:
    """A hostile page's decompression bomb: before, httpx decoded each chunk whole (and each
    layer of `gzip, gzip` in turn), so 980 bytes on the wire took a gigabyte of the server's memory
    in one step; now one layer is undone at most MAX_BODY_BYTES + 1 at a time."""
    import resource

    body = b"a" * size
    for _ in range(layers):
        body = _gzip(body)
    listener = await _serve_once(body, encoding)
    port = listener.sockets[0].getsockname()[1]
    tool = wf.create_web_fetch_tool(ToolSettings(web_private_addresses=True))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        if expected:
            with pytest.raises(ToolError, match=expected):
                await call(tool, {"url": f"http://127.0.0.1:{port}/"})
        else:
            result = await call(tool, {"url": f"http://127.0.0.1:{port}/"})
            assert result.details["bytes"] == min(size, wf.MAX_BODY_BYTES)
            assert "aaaa" in result.content[0].text
    finally:
        listener.close()
        await listener.wait_closed()
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 1024  # KB: well under the bombs
