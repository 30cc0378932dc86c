"""Diagnostics after an edit of an open document (issue 34), rich clients: the editor's
diagnostics for it, asked within a short bounded wait, end the edit's result."""

from __future__ import annotations

import asyncio
import time

from lsprotocol import types

from tests.conftest import scripted_options
from tests.lsp.test_editor_edits import CALC, DONE, EDIT, Editor, _get, _tool_results


async def _start(lsp, model, workspace, answer_diagnostics) -> Editor:
    editor = Editor(lsp, workspace)

    async def apply_edit(params):
        return await editor.apply_edit(params)

    async def save(params):
        return await editor.save(params)

    lsp.client_handlers[types.WORKSPACE_APPLY_EDIT] = apply_edit
    lsp.client_handlers["tunacode/saveDocuments"] = save
    lsp.client_handlers["tunacode/diagnostics"] = answer_diagnostics
    model.set_script([EDIT, DONE])
    caps = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(apply_edit=True),
        experimental={"tunacode": {"saveDocuments": True, "diagnostics": True}},
    )
    await lsp.start(init_options=scripted_options(model), capabilities=caps)
    return editor


async def test_an_edit_of_an_open_document_ends_with_its_diagnostics(lsp, model, workspace):
    (workspace / "calc.py").write_text(CALC)
    asked = []

    async def answer(params):
        uri = _get(params, "uris")[0]
        asked.append(uri)
        text = editor.docs[uri][0]  # what the editor holds after the edit
        problems = [] if "a + b" in text else [{"range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 5}},
                                                "message": "still wrong", "severity": 1}]
        return {"items": [{"uri": uri, "diagnostics": problems + [
            {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 3}},
             "message": "missing docstring", "severity": 2, "source": "lint"}]}]}

    editor = await _start(lsp, model, workspace, answer)
    uri = editor.open("calc.py", CALC)
    result = await lsp.command("tunacode.request", {"prompt": "fix"})
    assert result["stopReason"] == "end_turn"
    text = _tool_results(model, 1)[-1]
    assert "Diagnostics the editor reports now" in text
    assert "calc.py: 1 problem" in text and "line 1: warning [lint]: missing docstring" in text
    assert asked == [uri]


async def test_a_silent_editor_delays_the_edit_result_only_briefly(lsp, model, workspace):
    (workspace / "calc.py").write_text(CALC)
    never = asyncio.Event()

    async def hang(params):
        await never.wait()

    editor = await _start(lsp, model, workspace, hang)
    uri = editor.open("calc.py", CALC)
    started = time.monotonic()
    result = await lsp.command("tunacode.request", {"prompt": "fix"})
    assert time.monotonic() - started < 10
    assert result["toolCalls"][0]["status"] == "completed"
    assert editor.docs[uri][0] == "def add(a, b):\n    return a + b\n"
    assert "reported no diagnostics for calc.py within 3 s" in _tool_results(model, 1)[-1]
