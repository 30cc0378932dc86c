"""Edits through the editor (issue 14, items 1-3), with a test client that keeps its own text
of each open document, applies workspace/applyEdit to it as an editor does (checking the
version) and reports the change back with didChange."""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from tests.conftest import scripted_options

DONE = {"steps": [{"text": "Done."}]}
CALC = "def add(a, b):\n    return a - b\n"


def call(tool: str, args: dict) -> dict:
    return {"steps": [{"tool_call": {"name": tool, "arguments": args}}]}


def _get(obj: Any, key: str) -> Any:
    return obj[key] if isinstance(obj, dict) else getattr(obj, key, None)


class Editor:
    """An in-test editor: the text and version of each open document."""

    def __init__(self, lsp, workspace, *, refuse: bool = False, user_types_first: bool = False) -> None:
        self.lsp, self.workspace = lsp, workspace
        self.docs: dict[str, list[Any]] = {}  # uri -> [text, version]
        self.edits: list[Any] = []
        self.saves: list[list[str]] = []
        self.refuse, self.user_types_first = refuse, user_types_first

    def open(self, name: str, text: str) -> str:
        uri = (self.workspace / name).as_uri()
        self.docs[uri] = [text, 1]
        self.lsp.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        return uri

    def change(self, uri: str, text: str) -> None:
        self.docs[uri][0] = text
        self.docs[uri][1] += 1
        self.lsp.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.docs[uri][1]),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))

    async def apply_edit(self, params: Any) -> Any:
        self.edits.append(params)
        change = _get(_get(params, "edit"), "document_changes")[0]
        uri = _get(_get(change, "text_document"), "uri")
        version = _get(_get(change, "text_document"), "version")
        if self.refuse:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason="read-only buffer")
        if self.user_types_first and len(self.edits) == 1:
            self.change(uri, self.docs[uri][0] + "# the user typed this\n")
        if version != self.docs[uri][1]:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason="version mismatch")
        lines = self.docs[uri][0].split("\n")
        for edit in _get(change, "edits"):
            rng = _get(edit, "range")
            start, end = _get(rng, "start"), _get(rng, "end")
            before = "\n".join(lines[: _get(start, "line")]) + ("\n" if _get(start, "line") else "") + lines[_get(start, "line")][: _get(start, "character")]
            after = lines[_get(end, "line")][_get(end, "character"):] + ("\n" + "\n".join(lines[_get(end, "line") + 1:]) if _get(end, "line") + 1 < len(lines) else "")
            text = before + _get(edit, "new_text") + after
            lines = text.split("\n")
        self.change(uri, "\n".join(lines))
        return types.ApplyWorkspaceEditResult(applied=True)

    async def save(self, params: Any) -> Any:
        uris = list(_get(params, "uris"))
        self.saves.append(uris)
        for uri in uris:
            (self.workspace / uri.rsplit("/", 1)[-1]).write_text(self.docs[uri][0])
        return {"saved": uris}


def _caps(rich: bool) -> types.ClientCapabilities:
    return types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(apply_edit=True),
        experimental={"tunacode": {"saveDocuments": True}} if rich else None,
    )


async def _start(lsp, model, workspace, script, *, rich: bool, **editor_options) -> Editor:
    editor = Editor(lsp, workspace, **editor_options)
    async def apply_edit(params):  # pygls registers functions, not bound methods
        return await editor.apply_edit(params)

    async def save(params):
        return await editor.save(params)

    lsp.client_handlers[types.WORKSPACE_APPLY_EDIT] = apply_edit
    lsp.client_handlers["tunacode/saveDocuments"] = save
    model.set_script(script)
    await lsp.start(init_options=scripted_options(model), capabilities=_caps(rich))
    return editor


def _tool_results(model, index: int) -> list[str]:
    return [m["content"] for m in model.requests[index]["messages"] if m["role"] == "tool"]


EDIT = call("edit_file", {"filepath": "calc.py", "old_text": "return a - b", "new_text": "return a + b"})


async def test_a_clean_open_document_is_edited_through_the_editor_and_saved(lsp, model, workspace):
    (workspace / "calc.py").write_text(CALC)
    editor = await _start(lsp, model, workspace, [EDIT, DONE], rich=True)
    uri = editor.open("calc.py", CALC)
    result = await lsp.command("tunacode.request", {"prompt": "fix"})
    assert result["stopReason"] == "end_turn"
    [edit] = editor.edits
    assert _get(_get(_get(edit, "edit"), "document_changes")[0], "text_document").version == 1
    assert editor.docs[uri][0] == "def add(a, b):\n    return a + b\n"  # the buffer shows it
    assert editor.saves == [[uri]]
    assert (workspace / "calc.py").read_text() == editor.docs[uri][0]  # disk equals buffer


async def test_reads_see_unsaved_text_and_unsaved_edits_are_neither_lost_nor_saved(lsp, model, workspace):
    (workspace / "calc.py").write_text(CALC)
    editor = await _start(lsp, model, workspace, [call("read_file", {"filepath": "calc.py"}), EDIT, DONE], rich=True)
    unsaved = CALC + "# an unsaved line of the user's\n"
    uri = editor.open("calc.py", unsaved)
    await lsp.command("tunacode.request", {"prompt": "look and fix"})
    assert "an unsaved line of the user's" in _tool_results(model, 1)[-1]  # the model saw the editor's text
    assert editor.docs[uri][0] == "def add(a, b):\n    return a + b\n# an unsaved line of the user's\n"
    assert editor.saves == []  # the user's unsaved change is not saved behind their back
    assert (workspace / "calc.py").read_text() == CALC  # nor is the disk touched
    assert "not updated until the user saves" in _tool_results(model, 2)[-1]


async def test_a_plain_client_gets_the_file_written(lsp, model, workspace):
    (workspace / "calc.py").write_text(CALC)
    editor = await _start(lsp, model, workspace, [EDIT, DONE], rich=False)
    editor.open("calc.py", CALC)
    await lsp.command("tunacode.request", {"prompt": "fix"})
    assert editor.edits == []  # a modified buffer with its file written behind it would be W12
    assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


async def test_a_refused_edit_is_an_error_result(lsp, model, workspace):
    (workspace / "calc.py").write_text(CALC)
    editor = await _start(lsp, model, workspace, [EDIT, DONE], rich=True, refuse=True)
    uri = editor.open("calc.py", CALC + "# unsaved\n")
    await lsp.command("tunacode.request", {"prompt": "fix"})
    assert "refused the edit" in _tool_results(model, 1)[-1] and "read-only buffer" in _tool_results(model, 1)[-1]
    assert editor.docs[uri][0] == CALC + "# unsaved\n" and (workspace / "calc.py").read_text() == CALC


async def test_a_document_the_user_changed_meanwhile_is_planned_again(lsp, model, workspace):
    (workspace / "calc.py").write_text(CALC)
    editor = await _start(lsp, model, workspace, [EDIT, DONE], rich=True, user_types_first=True)
    uri = editor.open("calc.py", CALC + "# unsaved\n")
    await lsp.command("tunacode.request", {"prompt": "fix"})
    assert len(editor.edits) == 2  # the first, against version 1, was refused; the second applied
    assert editor.docs[uri][0] == "def add(a, b):\n    return a + b\n# unsaved\n# the user typed this\n"


async def _rewind_error(lsp, args: dict) -> tuple[int, Any]:
    try:
        await lsp.command("tunacode.session.rewind", args)
    except Exception as exc:  # noqa: BLE001 - the JSON-RPC error the server answered
        return getattr(exc, "code", None), getattr(exc, "data", None)
    raise AssertionError("the rewind succeeded")


async def test_an_edit_left_in_a_buffer_with_unsaved_changes_is_listed_and_rewound(lsp, model, workspace):
    """Bug: an edit that went only into the buffer (it held the user's unsaved change) was
    invisible to checkpoints: changedFiles [], and a rewind left it in the buffer."""

    (workspace / "calc.py").write_text(CALC)
    editor = await _start(lsp, model, workspace, [EDIT, DONE, EDIT, DONE], rich=True)
    mine = CALC + "# an unsaved line of the user's\n"
    uri = editor.open("calc.py", mine)
    result = await lsp.command("tunacode.request", {"prompt": "fix"})
    assert result["changedFiles"] == ["calc.py"]
    agents = "def add(a, b):\n    return a + b\n# an unsaved line of the user's\n"
    assert editor.docs[uri][0] == agents
    changes = await lsp.command("tunacode.changes", {"sessionId": result["sessionId"], "requestId": result["requestId"]})
    [changed] = changes["files"]
    assert changed["path"] == "calc.py" and "-    return a - b" in changed["diff"] and "+    return a + b" in changed["diff"]

    rewound = await lsp.command("tunacode.session.rewind", {"sessionId": result["sessionId"], "requestId": result["requestId"]})
    assert rewound["restored"] == ["calc.py"]
    assert editor.docs[uri][0] == mine  # the agent's edit is gone, the user's unsaved line stays
    assert (workspace / "calc.py").read_text() == CALC and editor.saves == []  # nothing saved behind their back

    # the user types after a second agent edit: a conflict, unless forced
    again = await lsp.command("tunacode.request", {"prompt": "fix", "sessionId": result["sessionId"]})
    editor.change(uri, editor.docs[uri][0] + "# typed later\n")
    code, data = await _rewind_error(lsp, {"sessionId": again["sessionId"], "requestId": again["requestId"]})
    assert code == -32004 and data == {"files": ["calc.py"]}
    assert editor.docs[uri][0] == agents + "# typed later\n"  # nothing taken back
    await lsp.command("tunacode.session.rewind", {"sessionId": again["sessionId"], "requestId": again["requestId"], "force": True})
    assert editor.docs[uri][0] == mine


async def test_a_buffer_only_diff_marks_a_last_line_without_newline(lsp, model, workspace):
    """Bug: the diff of an edit left in a buffer (difflib) lost "\\ No newline at end of file",
    so it did not apply to the buffer it was made from (the VS Code client padded it back)."""

    (workspace / "calc.py").write_text(CALC)
    editor = await _start(lsp, model, workspace, [EDIT, DONE], rich=True)
    editor.open("calc.py", CALC + "# mine")  # unsaved, and no newline at the end
    result = await lsp.command("tunacode.request", {"prompt": "fix"})
    changes = await lsp.command("tunacode.changes", {"sessionId": result["sessionId"], "requestId": result["requestId"]})
    [changed] = changes["files"]
    lines = changed["diff"].split("\n")
    assert lines[-3:] == [" # mine", "\\ No newline at end of file", "(in the editor's buffer, not saved)"], changed["diff"]
