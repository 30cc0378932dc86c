"""web_fetch through the real server (issue 34): HTML as Markdown, approval like bash, the
network policy, loopback refused by default (by address, by a name, through a redirect),
bounds on size, redirects and time."""

from __future__ import annotations

import pytest

from tests.conftest import scripted_options
from tests.lsp.web_server import web_server

DONE = {"steps": [{"text": "Done."}]}


def fetch(url: str) -> dict:
    return {"steps": [{"tool_call": {"name": "web_fetch", "arguments": {"url": url}}}]}


def _tool_messages(model, index=-1):
    return [m["content"] for m in model.requests[index]["messages"] if m["role"] == "tool"]


async def test_a_page_as_markdown_with_the_setting_on(lsp, model):
    with web_server() as (base, hits):
        model.set_script([fetch(f"{base}/page"), DONE])
        await lsp.start(init_options=scripted_options(model, webFetchPrivateAddresses=True))
        result = await lsp.command("tunacode.request", {"prompt": "read the notes"})
    assert result["toolCalls"][0]["status"] == "completed"
    text = _tool_messages(model)[-1]
    assert "(200 OK, text/html" in text and "# Release notes" in text
    assert "[the docs](https://example.org/x)" in text and "* one" in text
    assert "alert(1)" not in text and "body{}" not in text
    assert hits == ["/page"]


@pytest.mark.parametrize("where", ["127.0.0.1", "localhost", "[::1]"])
async def test_loopback_is_refused_by_default(lsp, model, where):
    with web_server() as (base, hits):
        port = base.rsplit(":", 1)[1]
        model.set_script([fetch(f"http://{where}:{port}/page"), DONE])
        await lsp.start(init_options=scripted_options(model))
        result = await lsp.command("tunacode.request", {"prompt": "fetch"})
    assert result["toolCalls"][0]["status"] == "failed"
    assert "a loopback address" in _tool_messages(model)[-1] and "webFetchPrivateAddresses" in _tool_messages(model)[-1]
    assert hits == []


async def test_link_local_and_private_addresses_are_refused_by_default(lsp, model):
    model.set_script([fetch("http://169.254.169.254/latest/meta-data/"), fetch("http://10.0.0.1/"), DONE])
    await lsp.start(init_options=scripted_options(model))
    await lsp.command("tunacode.request", {"prompt": "fetch"})
    assert "a link-local address" in _tool_messages(model, -2)[-1]
    assert "a private network address" in _tool_messages(model)[-1]


async def test_network_off_refuses_and_approval_is_asked(lsp, model):
    with web_server() as (base, hits):
        model.set_script([fetch(f"{base}/page"), DONE, fetch(f"{base}/page"), DONE])
        await lsp.start(init_options=scripted_options(model, approval="auto", shellNetwork=False, webFetchPrivateAddresses=True))
        await lsp.command("tunacode.request", {"prompt": "fetch"})
        assert "shellNetwork is false" in _tool_messages(model)[-1]
        await lsp.stop()
        await lsp.start(init_options=scripted_options(model, approval="ask", webFetchPrivateAddresses=True))
        lsp.approvals.answer = "Deny"
        result = await lsp.command("tunacode.request", {"prompt": "fetch"})
        assert result["toolCalls"][0]["status"] == "failed" and f"{base}/page" in lsp.approvals.prompts[0].message
        assert hits == []


async def test_bounds_size_redirects_type_and_time(lsp, model):
    with web_server() as (base, hits):
        model.set_script([fetch(f"{base}/big"), fetch(f"{base}/loop"), fetch(f"{base}/binary"), fetch(f"{base}/silent"), DONE])
        await lsp.start(init_options=scripted_options(model, webFetchPrivateAddresses=True, toolTimeouts={"web_fetch": 2}))
        result = await lsp.command("tunacode.request", {"prompt": "fetch"})
    big, loop, binary, silent = (_tool_messages(model, i)[-1] for i in (1, 2, 3, 4))
    assert "5,242,880 bytes" in big and "characters cut from the middle" in big and "is kept in" in big
    assert "More than 5 redirects" in loop and len([h for h in hits if h.startswith("/loop")]) == 6
    assert "image/png" in binary and "not a page" in binary
    assert "web_fetch did not finish within 2 s" in silent
    assert [c["status"] for c in result["toolCalls"]] == ["completed", "failed", "failed", "failed"]


async def test_a_fetch_waiting_on_a_silent_server_is_aborted_at_once(lsp, model):
    import asyncio

    with web_server() as (base, hits):
        model.set_script([fetch(f"{base}/silent"), DONE])
        await lsp.start(init_options=scripted_options(model, webFetchPrivateAddresses=True))
        pending = lsp.send_command("tunacode.request", {"prompt": "fetch"})
        event = await lsp.wait_for_event(lambda e: e.get("name") == "web_fetch" and e.get("status") == "in_progress")
        assert await asyncio.to_thread(hits.silent_reached.wait, 10)  # the server holds the request
        started = asyncio.get_running_loop().time()
        await lsp.command("tunacode.abort", {"requestId": event["requestId"]})
        result = await asyncio.wait_for(pending, 10)
    assert result["stopReason"] == "cancelled"
    assert asyncio.get_running_loop().time() - started < 3
