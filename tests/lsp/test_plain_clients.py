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


# ---------------------------------------------------------------- item 7: code-action answers


EXPLAINED = {"steps": [{"text": "It adds two numbers and returns their sum."}]}


async def _explain(raw: RawClient, workspace) -> dict:
    (workspace / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    uri = (workspace / "calc.py").as_uri()
    raw.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                         "text": (workspace / "calc.py").read_text()}})
    actions = await raw.call("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 16}},
        "context": {"diagnostics": []},
    })
    explain = next(a for a in actions["result"] if a["title"] == "TunaCode: Explain")
    answer = await raw.call("workspace/executeCommand", explain["command"], timeout=20)
    assert answer["result"]["stopReason"] == "end_turn", answer
    return answer


async def test_a_plain_client_sees_the_explain_answer_through_show_and_log_message(raw, workspace, model):
    """Bug: eglot threw the Explain code action's answer away (the command's result is not shown)."""

    model.set_script([EXPLAINED])
    await raw.initialize(workspace, scripted_options(model, approval="auto"), {"window": {"showMessage": {}}})
    await _explain(raw, workspace)
    shown = await raw.wait_for(lambda m: m.get("method") == "window/showMessage" and "adds two numbers" in m["params"]["message"])
    assert shown["params"]["type"] == 3  # Info
    await raw.wait_for(lambda m: m.get("method") == "window/logMessage" and "adds two numbers" in m["params"]["message"])


async def test_a_rich_client_keeps_todays_path_without_show_message(raw, workspace, model):
    model.set_script([EXPLAINED])
    caps = {"window": {"showMessage": {}}, "experimental": {"tunacode": {"approve": True}}}
    await raw.initialize(workspace, scripted_options(model, approval="auto"), caps)
    await _explain(raw, workspace)
    await raw.command("tunacode.status")  # anything sent with the answer has arrived before this
    assert not [m for m in raw.messages if m.get("method") in ("window/showMessage", "window/logMessage")
                and "adds two numbers" in m["params"]["message"]]
