"""The chat buffer's features in a real headless Neovim 0.11 with the plugin, the real server
and the scripted model (nvim_chat_driver.lua): thinking folded, :TunaChat's multi-line input
(<CR>, <C-s>), #buffer / #selection / @file sent as context, their completion, the quickfix
list of changed files, ]x / [x between hunks and gr / ga in :TunaChanges (issue 32, build)."""

from __future__ import annotations

import pytest
from tests.clients.test_neovim import nvim, run_nvim  # noqa: F401 (a fixture)
from tests.clients.test_neovim_edits import HERE

from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

pytestmark = pytest.mark.neovim

CALC = "def add(a, b):\n    return a - b\n\n\n\n\n\n\ndef sub(a, b):\n    return a + b\n"
EDITS = [{"old_text": "    return a - b\n\n", "new_text": "    return a + b\n\n"},
         {"old_text": "sub(a, b):\n    return a + b", "new_text": "sub(a, b):\n    return a - b  # fixed"}]


def test_chat_input_context_thinking_quickfix_and_hunks(nvim, tmp_path, workspace, home):  # noqa: F811
    (workspace / "calc.py").write_text(CALC)
    (workspace / "notes.txt").write_text("notes\n")
    script = {"turns": [
        {"steps": [{"thinking": "The user wants a look.", "chunks": 2}, {"text": "Looked."}]},
        {"steps": [{"tool_call": {"name": "edit_file", "arguments": {"filepath": "calc.py", "edits": EDITS}}}]},
        {"text": "Fixed both."},
    ]}
    with ScriptedModelServer(script) as model:
        seen = run_nvim(nvim, HERE / "nvim_chat_driver.lua", tmp_path=tmp_path, workspace=workspace, home=home,
                        model=model)
        requests = model.requests
    assert seen["input"] == {"name": "tunacode://input", "omnifunc": "v:lua.require'tunacode.chat'.omnifunc"}
    complete = seen["complete"]
    assert complete["file"] == ["@calc.py"] and complete["hash"] == ["#selection"], complete
    assert complete["slash"] == ["/release", "/review"] and complete["ask"] == ["@notes.txt"], complete

    # the two lines went as one prompt, with the three context items, and the input emptied
    assert seen["first"]["stopReason"] == "end_turn" and seen["input_after"] == [""]
    sent = str(requests[0]["messages"])
    assert "Look at #buffer and #selection,\\nand @notes.txt." in sent, sent
    assert "notes\\n" in sent or "notes" in sent
    assert "return a - b" in sent  # #buffer: calc.py
    # thinking: a block, closed, followed by the answer
    thinking = seen["thinking"]
    assert seen["lines"][thinking["row"] - 1:thinking["row"] + 3] == ["```thinking", "The user wants a look.", "```",
                                                                       "Looked."], seen["lines"]
    assert thinking["closed"] == thinking["row"], thinking

    assert seen["second"]["stopReason"] == "end_turn", seen  # <C-s> in insert mode sent it
    assert seen["qf"] == [{"file": "calc.py", "lnum": 1, "text": seen["qf"][0]["text"]}], seen["qf"]
    assert seen["qf"][0]["text"].startswith("modified @@ -1,"), seen["qf"]
    changes = seen["changes"]
    hunks = [i + 1 for i, line in enumerate(changes) if line.startswith("@@ ")]
    assert len(hunks) == 2, changes
    assert [seen["first_hunk"], seen["second_hunk"], seen["back"]] == [hunks[0], hunks[1], hunks[0]]
    # gr on the second hunk: sub's line is back in the buffer and the file, saved
    assert seen["rejected_buffer"][-1] == "    return a + b" and seen["rejected_modified"] is False
    assert seen["rejected_buffer"][1] == "    return a + b"  # the first hunk stays
    assert (workspace / "calc.py").read_text().endswith("def sub(a, b):\n    return a + b\n")
    assert seen["after_accept"] == hunks[1]  # ga moved on
    assert seen["reject_notice"] == "TunaCode: calc.py no longer has this hunk's lines; nothing rejected"
