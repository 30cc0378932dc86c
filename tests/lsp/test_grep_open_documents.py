"""grep over the real server with documents open in the editor: an open document with unsaved
changes is searched in its editor text (never its stale disk lines), everything else on disk."""

from __future__ import annotations

from lsprotocol import types

from tests.conftest import scripted_options

DONE = {"steps": [{"text": "Done."}]}
DISK = "def add(a, b):\n    return a - b\n"
UNSAVED = "def add(a, b):\n    return a + b  # unsaved\n"


def _grep(**arguments) -> dict:
    return {"steps": [{"tool_call": {"name": "grep", "arguments": arguments}}]}


def _open(client, path, text: str, version: int = 1) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=path.as_uri(), language_id="python", version=version, text=text)))


def _tool_results(model) -> list[str]:
    return [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]


async def test_grep_searches_open_documents_in_their_editor_text(lsp, model, workspace):
    (workspace / "calc.py").write_text(DISK)
    (workspace / "other.py").write_text(DISK)
    (workspace / "clean.py").write_text(DISK)
    (workspace / "notes.md").write_text("a - b\n")
    model.set_script([
        _grep(pattern="unsaved|a - b"),
        _grep(pattern="unsaved|a - b", glob="*.py"),
        _grep(pattern="unsaved", path="src"),
        DONE,
    ])
    client = await lsp.start(init_options=scripted_options(model))
    (workspace / "src").mkdir()
    _open(client, workspace / "calc.py", UNSAVED)
    _open(client, workspace / "clean.py", DISK)  # open, no unsaved changes: searched once
    _open(client, workspace / "src" / "new.py", "x = 1  # unsaved, never saved\n")  # not on disk at all
    result = await lsp.command("tunacode.request", {"prompt": "search"})
    assert result["stopReason"] == "end_turn"
    everything, only_py, in_src = _tool_results(model)
    lines = everything.splitlines()
    assert "calc.py:2:    return a + b  # unsaved" in lines  # the open document: its editor text
    assert "calc.py:2:    return a - b" not in lines  # never its stale disk line
    assert lines.count("clean.py:2:    return a - b") == 1
    assert "other.py:2:    return a - b" in lines and "notes.md:1:a - b" in lines  # the rest: the disk
    assert "src/new.py:1:x = 1  # unsaved, never saved" in lines
    assert "notes.md" not in only_py and "calc.py:2:    return a + b  # unsaved" in only_py  # glob applies to both
    assert in_src.splitlines() == ["src/new.py:1:x = 1  # unsaved, never saved"]  # path scopes both
