"""Plain LSP clients, over raw bytes (issue 32, items 8 and 9): a client slow to answer
`window/workDoneProgress/create` still sees every progress it was shown end; a client that
cannot show a question (ALE: no `window` capabilities) gets a clear error for `approval: ask`."""

from __future__ import annotations

import asyncio

import pytest_asyncio

from tests.conftest import scripted_options
from tests.lsp.raw_wire_client import NO_ANSWER, RawClient

PROGRESS_CAPS = {"window": {"workDoneProgress": True}}
DONE = {"steps": [{"text": "Done."}]}
READ = {"steps": [{"tool_call": {"name": "read_file", "arguments": {"filepath": "a.txt"}}}]}


@pytest_asyncio.fixture
async def raw(home, workspace):
    client = await RawClient.start(home, workspace)
    try:
        yield client
    finally:
        await client.close()


def _progress(raw: RawClient) -> dict[str, list[str]]:
    kinds: dict[str, list[str]] = {}
    for m in raw.messages:
        if m.get("method") == "$/progress":
            kinds.setdefault(str(m["params"]["token"]), []).append(m["params"]["value"]["kind"])
    return kinds


def _all_ended(raw: RawClient) -> bool:
    return all(kinds[-1] == "end" for kinds in _progress(raw).values())


async def test_a_progress_created_late_is_ended_when_its_request_has_ended(raw, workspace, model):
    """Bug: a create answered 0.7 s late gave `begin` after the request ended, and no `end`."""

    (workspace / "a.txt").write_text("hello\n")
    model.set_script([READ, DONE])
    loop = asyncio.get_running_loop()

    def late(params):
        msg = next(m for m in reversed(raw.messages) if m.get("method") == "window/workDoneProgress/create"
                   and m["params"] == params)
        loop.call_later(0.7, raw.send, {"jsonrpc": "2.0", "id": msg["id"], "result": None})
        return NO_ANSWER

    raw.answers["window/workDoneProgress/create"] = late
    await raw.initialize(workspace, scripted_options(model), PROGRESS_CAPS)
    answer = await raw.command("tunacode.request", {"prompt": "read it"}, timeout=20)
    assert answer["result"]["stopReason"] == "end_turn"
    # every progress begun (however late) ends; the wait is bounded
    try:
        await raw.wait_for(lambda _m: _all_ended(raw) and bool(_progress(raw)), timeout=5)
    except TimeoutError:
        raise AssertionError(f"progress left open: {_progress(raw)}") from None


ALE_CAPS = {"textDocument": {"synchronization": {"didSave": True}}, "workspace": {"applyEdit": True}}  # no `window`


async def test_ask_without_a_way_to_ask_is_a_clear_error_at_request_start(raw, workspace, model):
    """Bug: ALE declares no window capabilities and never answers window/showMessageRequest:
    `approval: ask` waited silently until the request timed out."""

    model.set_script([{"steps": [{"tool_call": {"name": "bash", "arguments": {"command": "touch ran"}}}]}, DONE])
    await raw.initialize(workspace, scripted_options(model, approval="ask"), ALE_CAPS)
    answer = await raw.command("tunacode.request", {"prompt": "run it"}, timeout=10)
    assert "approval setting is 'ask'" in answer["error"]["message"], answer
    assert "tunacode.approval" in answer["error"]["message"]
    assert model.requests == [] and not (workspace / "ran").exists()  # nothing ran, the model was not called
    assert not any(m.get("method") == "window/showMessageRequest" for m in raw.messages)


async def test_ask_with_a_client_that_declares_window_still_asks(raw, workspace, model):
    model.set_script([DONE])
    await raw.initialize(workspace, scripted_options(model, approval="ask"), {"window": {"showDocument": {"support": True}}})
    answer = await raw.command("tunacode.request", {"prompt": "hi"}, timeout=20)
    assert answer["result"]["stopReason"] == "end_turn", answer
