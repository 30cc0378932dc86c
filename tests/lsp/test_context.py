"""Context from the editor through the real server: what the model receives for each item,
bad items refused before anything starts, code actions, and the diagnostics tool."""

from __future__ import annotations

import asyncio
import base64

import pytest
from lsprotocol import types

from tests.conftest import scripted_options

DONE = {"steps": [{"text": "Done."}]}
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 32).decode()
CALC = "def add(a, b):\n    return a - b\n\n\ndef twice(x):\n    return add(x, x)\n"


def _range(l1, c1, l2, c2):
    return {"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}}


def _user_text(model) -> str:
    content = [m for m in model.requests[-1]["messages"] if m["role"] == "user"][-1]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content if p["type"] == "text")


async def _error(awaitable) -> tuple[int | None, str]:
    with pytest.raises(Exception) as info:
        await awaitable
    return getattr(info.value, "code", None), str(info.value)


async def test_each_context_item_reaches_the_model(lsp, model, workspace):
    (workspace / "calc.py").write_text(CALC)
    uri = (workspace / "calc.py").as_uri()
    model.set_script([DONE, DONE, DONE, DONE])
    await lsp.start(init_options=scripted_options(model))

    # whole lines selected (Shift+Down): the range ends at the start of the next line, not in it
    await lsp.command("tunacode.request", {"prompt": "Lines", "context": [{"type": "selection", "uri": uri, "range": _range(0, 0, 2, 0)}]})
    assert "Selection in calc.py, lines 1-2:" in _user_text(model)  # bug: said lines 1-3

    await lsp.command("tunacode.request", {"prompt": "Look at this", "context": [{"type": "file", "uri": uri}]})
    text = _user_text(model)
    assert "File calc.py (6 lines)" in text and "return a - b" in text and text.endswith("Look at this")

    await lsp.command("tunacode.request", {
        "prompt": "Why?",
        "context": [
            {"type": "selection", "uri": uri, "range": _range(1, 4, 1, 16)},  # text from the file
            {"type": "diagnostic", "uri": uri, "range": _range(1, 11, 1, 16), "message": "suspicious minus",
             "severity": 2, "source": "lint", "code": "W1"},
        ],
    })
    text = _user_text(model)
    assert "Selection in calc.py, line 2:" in text and "return a - b" in text
    assert "Diagnostic in calc.py line 2: warning [lint W1]: suspicious minus" in text

    await lsp.command("tunacode.request", {
        "prompt": "And this?",
        "context": [{"type": "selection", "uri": uri, "range": _range(0, 0, 0, 3), "text": "the client's own text"}],
    })
    assert "the client's own text" in _user_text(model)


async def test_a_long_file_is_cut_and_says_so(lsp, model, workspace):
    (workspace / "big.txt").write_text("x" * 120_000)
    model.set_script([DONE])
    await lsp.start(init_options=scripted_options(model))
    await lsp.command("tunacode.request", {"prompt": "p", "context": [{"type": "file", "uri": (workspace / "big.txt").as_uri()}]})
    text = _user_text(model)
    assert "[cut: showing the first 50,000 of 120,000 characters]" in text
    assert len(text) < 60_000


async def test_an_image_goes_to_the_model_as_image_content(lsp, model):
    model.set_script([DONE])
    await lsp.start(init_options=scripted_options(model, imageInput="on"))
    await lsp.command("tunacode.request", {"prompt": "What is this?", "context": [{"type": "image", "mimeType": "image/png", "data": PNG}]})
    content = [m for m in model.requests[-1]["messages"] if m["role"] == "user"][-1]["content"]
    assert isinstance(content, list)
    images = [p for p in content if p["type"] == "image_url"]
    assert images and images[0]["image_url"]["url"] == f"data:image/png;base64,{PNG}"


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"type": "video", "uri": "file:///x"}, "params.context[0].type"),
        ({"type": "file", "uri": "file:///etc/passwd"}, "params.context[0].uri"),
        ({"type": "file", "uri": "https://example.com/x"}, "params.context[0].uri"),
        ({"type": "selection", "uri": "CALC", "range": _range(40, 0, 41, 0)}, "params.context[0].range"),
        ({"type": "selection", "uri": "CALC", "range": _range(0, 0, 0, 10), "text": "y" * 50_000_000}, "params.context[0].text"),
        ({"type": "image", "mimeType": "image/svg+xml", "data": PNG}, "params.context[0].mimeType"),
        ({"type": "image", "mimeType": "image/png", "data": base64.b64encode(b"GIF89a...").decode()}, "params.context[0].data"),
        ({"type": "image", "mimeType": "image/png", "data": PNG}, "params.context[0]"),  # the model takes no images
    ],
)
async def test_bad_context_is_refused_before_anything_starts(lsp, model, workspace, item, field):
    (workspace / "calc.py").write_text(CALC)
    if item.get("uri") == "CALC":
        item = {**item, "uri": (workspace / "calc.py").as_uri()}
    model.set_script([DONE])
    await lsp.start(init_options=scripted_options(model))
    code, message = await _error(lsp.command("tunacode.request", {"prompt": "p", "context": [item]}))
    assert code == -32602 and field in message, message
    assert len(message) < 400
    assert (await lsp.command("tunacode.session.list", {}))["sessions"] == [], "a session was created"
    assert model.requests == []


async def test_code_actions_with_and_without_diagnostics(lsp, model, workspace):
    (workspace / "calc.py").write_text(CALC)
    uri = (workspace / "calc.py").as_uri()
    model.set_script([DONE])
    client = await lsp.start(init_options=scripted_options(model))
    caps = lsp.initialize_result.capabilities
    assert caps.code_action_provider
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=CALC.replace("a - b", "a - b  # unsaved"))
    ))
    doc = types.TextDocumentIdentifier(uri=uri)

    none = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=doc, range=types.Range(types.Position(1, 0), types.Position(1, 0)), context=types.CodeActionContext(diagnostics=[])))
    assert not none

    selection = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=doc, range=types.Range(types.Position(1, 4), types.Position(1, 27)), context=types.CodeActionContext(diagnostics=[])))
    assert [a.title for a in selection] == ["TunaCode: Explain"]
    explain_args = selection[0].command.arguments[0]
    assert explain_args["context"][0]["text"] == "return a - b  # unsaved"  # the editor's unsaved text

    diagnostic = types.Diagnostic(range=types.Range(types.Position(1, 11), types.Position(1, 16)), message="wrong operator",
                                  severity=types.DiagnosticSeverity.Error, source="check")
    with_diag = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=doc, range=types.Range(types.Position(1, 11), types.Position(1, 11)),
        context=types.CodeActionContext(diagnostics=[diagnostic])))
    assert [a.title for a in with_diag] == ["TunaCode: Fix", "TunaCode: Explain"]
    fix = with_diag[0]
    assert fix.kind == types.CodeActionKind.QuickFix and fix.command.command == "tunacode.request"

    # running the action's command runs a request carrying the diagnostic
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=fix.command.command, arguments=fix.command.arguments))
    assert result["stopReason"] == "end_turn"
    text = _user_text(model)
    assert "Diagnostic in calc.py line 2: error [check]: wrong operator" in text and text.startswith("Context from the editor")

    only_fix = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=doc, range=types.Range(types.Position(1, 11), types.Position(1, 11)),
        context=types.CodeActionContext(diagnostics=[diagnostic], only=[types.CodeActionKind.QuickFix])))
    assert [a.title for a in only_fix] == ["TunaCode: Fix"]


DIAG_TURN = {"steps": [{"tool_call": {"name": "diagnostics", "arguments": {"filepaths": ["calc.py"]}}}]}
DIAG_CAPS = types.ClientCapabilities(experimental={"tunacode": {"diagnostics": True}})


async def _diagnostics_result(lsp, model, workspace, handler) -> str:
    (workspace / "calc.py").write_text(CALC)
    model.set_script([DIAG_TURN, DONE])
    lsp.client_handlers["tunacode/diagnostics"] = handler
    await lsp.start(init_options=scripted_options(model), capabilities=DIAG_CAPS)
    result = await lsp.command("tunacode.request", {"prompt": "check it"})
    assert result["stopReason"] == "end_turn"
    tool_msgs = [m for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    return tool_msgs[-1]["content"]


async def test_diagnostics_tool_answered(lsp, model, workspace):
    asked: list = []

    async def answer(params):
        asked.append(params)
        uri = params.uris[0] if hasattr(params, "uris") else params["uris"][0]
        return {"items": [{"uri": uri, "diagnostics": [
            {"range": _range(1, 11, 1, 16), "message": "wrong operator", "severity": 1, "source": "pyright"}]}]}

    content = await _diagnostics_result(lsp, model, workspace, answer)
    assert "calc.py: 1 problem" in content and "line 2: error [pyright]: wrong operator" in content
    assert len(asked) == 1


async def test_diagnostics_tool_refused(lsp, model, workspace):
    async def refuse(params):
        raise RuntimeError("no diagnostics here")

    content = await _diagnostics_result(lsp, model, workspace, refuse)
    assert "could not report diagnostics" in content


async def test_diagnostics_tool_unanswered_is_bounded(lsp, model, workspace):
    never = asyncio.Event()

    async def hang(params):
        await never.wait()

    loop = asyncio.get_running_loop()
    started = loop.time()
    content = await _diagnostics_result(lsp, model, workspace, hang)
    never.set()  # the late answer is taken quietly
    assert "did not report diagnostics within 5 s" in content
    assert loop.time() - started < 12
    assert (await lsp.command("tunacode.status"))["activeRequests"] == []


async def test_no_diagnostics_tool_for_a_plain_client(lsp, model):
    model.set_script([DONE])
    await lsp.start(init_options=scripted_options(model))
    await lsp.command("tunacode.request", {"prompt": "hi"})
    names = [t["function"]["name"] for t in model.requests[-1]["tools"]]
    assert "diagnostics" not in names and "read_file" in names
