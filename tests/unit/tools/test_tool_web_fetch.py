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
