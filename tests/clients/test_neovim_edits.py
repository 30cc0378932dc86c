"""Edits through the editor, checkpoints and code actions in a real headless Neovim 0.11
against the real server and the scripted model: with the plugin (applyEdit +
tunacode/saveDocuments, :TunaChanges, :TunaRewind with its conflict), and with only the
built-in client (the file written for a clean buffer, applyEdit on top of the user's unsaved
edit, read_file sees the unsaved text, a code action's request carries the selection).
The Lua drivers (nvim_checkpoint_driver.lua, nvim_builtin_edit_driver.lua) write JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.clients.test_neovim import doc_snippet, nvim, run_nvim  # noqa: F401 (a fixture)

from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

pytestmark = pytest.mark.neovim

HERE = Path(__file__).parent
CHECKPOINT_DRIVER = HERE / "nvim_checkpoint_driver.lua"

# a tab, trailing spaces, non-ASCII text: what comes back must be these bytes exactly
ORIGINAL = "def add(a, b):\n\treturn a - b  \n# ünïcode ✓\n"
EDITED = "def add(a, b):\n\treturn a + b  \n# ünïcode ✓\n"
OTHER = "def add(a, b):\n\treturn a * b  # someone else\n# ünïcode ✓\n"


def edit(old: str, new: str) -> dict:
    return {"steps": [{"tool_call": {"name": "edit_file",
                                     "arguments": {"filepath": "calc.py", "old_text": old, "new_text": new}}}]}


def tool_results(request: dict) -> list[str]:
    return [m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
            for m in request["messages"] if m["role"] == "tool"]


def test_plugin_edit_changes_rewind_and_conflict(nvim, tmp_path, workspace, home):  # noqa: F811
    calc = workspace / "calc.py"
    calc.write_bytes(ORIGINAL.encode())
    (workspace / "notes.txt").write_text("old\n")
    script = {"turns": [edit("return a - b", "return a + b"), {"text": "Fixed."},
                        edit("return a - b", "return a + b"), {"text": "Fixed again."},
                        edit("return a - b", "return a + b"), {"text": "Fixed a third time."},
                        {"steps": [{"tool_call": {"name": "bash", "arguments": {"command": "printf 'new\\n' > notes.txt"}}}]},
                        {"text": "Rewritten."}, {"text": "Explained."}]}
    with ScriptedModelServer(script) as model:
        seen = run_nvim(nvim, CHECKPOINT_DRIVER, tmp_path=tmp_path, workspace=workspace, home=home, model=model,
                        TUNA_OTHER_TEXT=OTHER)
        requests = model.requests
    assert len(requests) == 9
    assert seen["original"]["buffer"] == seen["original"]["disk"] == ORIGINAL

    # 1. the agent's edit: in the buffer, saved by the plugin, no FileChangedShell / W12
    first = seen["first"]
    assert first["stopReason"] == "end_turn" and first["text"] == "Fixed.", first
    assert first["changedFiles"] == ["calc.py"]
    edited = seen["edited"]
    assert edited["before_checktime"] == edited["disk"] == edited["buffer"] == EDITED, edited
    assert edited["modified"] is False and edited["warning"] == "" and edited["shell_events"] == 0
    assert seen["attached"] is True  # the plugin attached the open file to the server it started
    assert seen["shell_events"] == []  # not even for someone else's change: autoread reloads a clean buffer
    assert "+\treturn a + b" in tool_results(requests[1])[-1]  # the edit's diff went back to the model

    # 2. :TunaChanges: the real diff of that request
    assert seen["changes"] == ["diff --tunacode calc.py (modified)", "--- a/calc.py", "+++ b/calc.py",
                               "@@ -1,3 +1,3 @@", " def add(a, b):", "-\treturn a - b  ", "+\treturn a + b  ",
                               " # ünïcode ✓"], seen["changes"]

    # 3. :TunaRewind, confirmed: exact bytes on disk and in the buffer
    assert seen["prompts"][0]["items"] == ["Rewind", "Cancel"]
    assert seen["rewind_notice"] == "TunaCode: rewound the last request; 1 file restored"
    rewound = seen["rewound"]
    assert rewound["disk"] == rewound["buffer"] == rewound["before_checktime"] == ORIGINAL, rewound
    assert rewound["modified"] is False and rewound["warning"] == ""
    assert calc.read_bytes() != b"" and seen["rewound"]["lines"] == ORIGINAL.splitlines()

    # 4. the second edit, then someone else's change on disk
    assert seen["second"]["stopReason"] == "end_turn" and seen["second"]["changedFiles"] == ["calc.py"]
    second = seen["second_edited"]
    assert second["before_checktime"] == second["disk"] == second["buffer"] == EDITED
    assert seen["someone_else"]["buffer"] == seen["someone_else"]["disk"] == OTHER  # autoread reloaded it
    # the rewind meets -32004: asked, "Keep everything" changes nothing
    conflict = seen["prompts"][2]
    assert conflict["items"] == ["Rewind anyway (overwrite them)", "Keep everything"], conflict
    assert "calc.py" in conflict["prompt"], conflict
    assert seen["kept"]["disk"] == seen["kept"]["buffer"] == OTHER
    assert seen["kept_notices"] == []  # no error, no "rewound"
    # asked again and overwritten: the forced retry restores the file before the second request
    assert [p["items"][0] for p in seen["prompts"][3:5]] == ["Rewind", "Rewind anyway (overwrite them)"]
    assert seen["forced_notice"] == "TunaCode: rewound the last request; 1 file restored"
    forced = seen["forced"]
    assert forced["before_checktime"] == forced["disk"] == forced["buffer"] == ORIGINAL, forced
    assert forced["modified"] is False and forced["warning"] == "" and forced["shell_events"] == 0
    assert calc.read_bytes() == ORIGINAL.encode()
    assert seen["last_request_id"] is None

    # 5. the user's unsaved edit on top of the third: -32004 (unsaved in the editor), overwrite:
    # the buffer is reloaded (no W12), and u gives the user's text back
    assert seen["third"]["changedFiles"] == ["calc.py"]
    assert [p["items"][0] for p in seen["prompts"][5:]] == ["Rewind", "Rewind anyway (overwrite them)"]
    assert "calc.py" in seen["prompts"][6]["prompt"]
    whole = "rewound the last request; 1 file restored; your unsaved edits in calc.py were replaced " \
        "(u in the buffer brings them back)"
    # longer than the command line: one line, and whole in the answer buffer
    notice = seen["unsaved_forced_notice"]
    assert notice.endswith("… (see tunacode://answer)") and whole.startswith(notice[len("TunaCode: "):-25]), notice
    assert "[note] " + whole in seen["unsaved_forced_answer"], seen["unsaved_forced_answer"]
    unsaved = seen["unsaved_forced"]
    assert unsaved["before_checktime"] == unsaved["disk"] == unsaved["buffer"] == ORIGINAL, unsaved
    assert unsaved["modified"] is False and unsaved["warning"] == "" and unsaved["shell_events"] == 0
    assert seen["undone"] == {"lines": EDITED.splitlines() + ["# mine, unsaved"], "modified": True}
    assert seen["shell_events"] == []

    # 6. a shell command rewrote the open notes.txt: the buffer showed it when the request ended
    assert seen["shell"]["changedFiles"] == ["notes.txt"]
    notes = seen["notes"]
    assert notes["before_checktime"] == notes["buffer"] == notes["disk"] == "new\n", notes
    assert notes["shell_events"] == 0 and notes["warning"] == ""

    # 7. the code-action menu through the plugin: Explain, sent with the selection, answered in
    # the answer buffer, in the same session
    assert [t for t in seen["offered"] if "TunaCode" in t] == ["TunaCode: Explain"], seen["offered"]
    assert seen["explained"]["text"] == "Explained." and seen["explained"]["sessionId"] == first["sessionId"]
    prompt = json.dumps(requests[8]["messages"][-1])
    assert "Selection in calc.py, lines 1-2:" in prompt and "def add(a, b):" in prompt, prompt
    assert "Explained." in seen["answer_lines"]


BUILTIN_DRIVER = HERE / "nvim_builtin_edit_driver.lua"
CALC = "def add(a, b):\n    return a - b\n"


def read(path: str) -> dict:
    return {"steps": [{"tool_call": {"name": "read_file", "arguments": {"filepath": path}}}]}


def test_builtin_client_edits_unsaved_text_and_code_action(nvim, tmp_path, workspace, home):  # noqa: F811
    """Only the built-in client: no plugin, no saveDocuments."""
    calc, other = workspace / "calc.py", workspace / "other.py"
    calc.write_text(CALC)
    other.write_text("X = 1\n")
    script = {"turns": [
        {"steps": [{"tool_call": {"name": "read_file", "arguments": {"filepath": "other.py"}}},
                   {"tool_call": {"name": "edit_file", "arguments": {"filepath": "calc.py", "old_text": "return a - b",
                                                                     "new_text": "return a + b"}}}]},
        {"text": "Done."},
        read("calc.py"),
        edit("return a + b", "return a + b + 0"),
        {"text": "Done again."},
        {"text": "Explained."},
    ]}
    with ScriptedModelServer(script) as model:
        reload = tmp_path / "plain-reload.lua"
        reload.write_text(doc_snippet("plain-reload"))
        seen = run_nvim(nvim, BUILTIN_DRIVER, tmp_path=tmp_path, workspace=workspace, home=home, model=model,
                        files=("calc.py",), TUNA_RELOAD_LUA=str(reload))
        requests = model.requests
    assert len(requests) == 6
    assert seen["capabilities"] is None  # a plain client: nothing advertised under experimental

    # 1. the model saw other.py's unsaved line; calc.py (clean) was written on disk
    assert seen["first"]["stopReason"] == "end_turn" and seen["first"]["changedFiles"] == ["calc.py"]
    read_other, edited = tool_results(requests[1])
    assert "# unsaved in other.py" in read_other, read_other
    first = seen["calc_after_first"]
    assert first["disk"] == "def add(a, b):\n    return a + b\n"
    # the buffer took the file at the snippet's :checktime when the tool call ended, silently
    assert first["before_checktime"] == first["lines"] == ["def add(a, b):", "    return a + b"], first
    assert first["modified"] is False and first["warning"] == "" and first["shell_events"] == 0
    other_buf = seen["other_after_first"]
    assert other_buf["lines"] == ["X = 1", "# unsaved in other.py"] and other_buf["modified"] is True
    assert other_buf["disk"] == "X = 1\n"  # the user's unsaved change is neither lost nor saved

    # 2. the user's unsaved line in calc.py: seen by read_file, kept by the agent's edit
    read_calc = tool_results(requests[3])[-1]
    assert "# mine, unsaved" in read_calc, read_calc
    assert "not updated until the user saves" in tool_results(requests[4])[-1]
    second = seen["calc_after_second"]
    assert second["before_checktime"] == second["lines"] == ["def add(a, b):", "    return a + b + 0",
                                                             "# mine, unsaved"], second
    assert second["modified"] is True and second["disk"] == "def add(a, b):\n    return a + b\n"
    assert second["warning"] == "" and second["shell_events"] == 0
    saved = seen["calc_saved"]  # the user's :write: no W12, both edits on disk
    assert saved["disk"] == "def add(a, b):\n    return a + b + 0\n# mine, unsaved\n" and saved["warning"] == ""
    assert seen["shell_events"] == []

    # 3. the code-action menu lists Explain (no diagnostics: no Fix); picking it starts a request
    offered = [title for title in seen["offered"] if "TunaCode" in title]
    assert offered == ["TunaCode: Explain"], seen["offered"]
    assert seen["code_action_end"]["stopReason"] == "end_turn"
    prompt = json.dumps(requests[5]["messages"][-1])
    assert "Context from the editor:" in prompt and "Selection in calc.py, lines 1-2:" in prompt, prompt
    assert "return a + b + 0" in prompt  # the selection's text, as the buffer has it


UNSAVED_SCRIPT = {"turns": [
    {"steps": [{"tool_call": {"name": "read_file", "arguments": {"filepath": "other.py"}}},
               edit("return a - b", "return a + b")["steps"][0]]},
    {"text": "Fixed, your edits kept."},
]}
MINE = ORIGINAL + "# mine, unsaved\n"


def run_unsaved(nvim, tmp_path, workspace, home) -> tuple[dict, list[dict]]:  # noqa: F811
    (workspace / "calc.py").write_bytes(ORIGINAL.encode())
    (workspace / "other.py").write_text("X = 1\n")
    with ScriptedModelServer(UNSAVED_SCRIPT) as model:
        seen = run_nvim(nvim, CHECKPOINT_DRIVER, tmp_path=tmp_path, workspace=workspace, home=home, model=model,
                        TUNA_SCENARIO="unsaved")
        return seen, model.requests


def test_plugin_edit_of_a_buffer_with_unsaved_edits_approved_in_the_float(nvim, tmp_path, workspace, home):  # noqa: F811
    seen, requests = run_unsaved(nvim, tmp_path, workspace, home)
    assert len(requests) == 2 and seen["result"]["stopReason"] == "end_turn", seen["result"]
    # the real server's tunacode/approve: the diff against the buffer's text, in the float
    float_ = seen["float"]
    assert float_["filetype"] == "diff" and float_["focused"] is False  # never takes focus
    assert float_["title"].startswith(" TunaCode approval: ") and "calc.py" in float_["title"], float_
    assert "-\treturn a - b  " in float_["lines"] and "+\treturn a + b  " in float_["lines"], float_
    # other.py, opened after the server started, was attached: the model saw its unsaved line
    assert seen["other_attached"] is True
    read_other, edited = tool_results(requests[1])
    assert "# unsaved in other.py" in read_other, read_other
    assert "not updated until the user saves" in edited, edited
    # the agent's edit on top of the user's: in the buffer, nothing saved behind their back
    after = seen["edited"]
    assert after["before_checktime"] == after["buffer"] == EDITED + "# mine, unsaved\n", after
    assert after["modified"] is True and after["disk"] == ORIGINAL
    assert after["warning"] == "" and after["shell_events"] == 0
    other = seen["other"]
    assert other["buffer"] == "X = 1\n# unsaved in other.py\n" and other["disk"] == "X = 1\n" and other["modified"]
    assert seen["shell_events"] == []


def test_plugin_rewind_takes_back_an_edit_left_unsaved_in_the_buffer(nvim, tmp_path, workspace, home):  # noqa: F811
    seen, _ = run_unsaved(nvim, tmp_path, workspace, home)
    assert seen["result"]["changedFiles"] == ["calc.py"]
    rewound = seen["rewound"]
    assert rewound["buffer"] == MINE and rewound["disk"] == ORIGINAL, rewound  # the user's edit stays, the agent's goes


def test_plugin_hostile_edits_outside_the_workspace_or_of_a_locked_buffer(nvim, tmp_path, workspace, home):  # noqa: F811
    """A hostile model: an edit of a file outside the workspace (open in Neovim with the user's
    unsaved text), an edit of calc.py whose buffer is not modifiable (Neovim refuses the
    applyEdit). Both are error results; no buffer or file changes, nothing is saved."""
    calc = workspace / "calc.py"
    calc.write_bytes(ORIGINAL.encode())
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    script = {"turns": [
        {"steps": [{"tool_call": {"name": "edit_file", "arguments": {"filepath": str(outside), "old_text": "secret",
                                                                      "new_text": "stolen"}}},
                   {"tool_call": {"name": "edit_file", "arguments": {"filepath": "../outside.txt", "old_text": "secret",
                                                                      "new_text": "stolen"}}}]},
        edit("return a - b", "return a + b"),
        {"text": "I tried."},
    ]}
    with ScriptedModelServer(script) as model:
        seen = run_nvim(nvim, CHECKPOINT_DRIVER, tmp_path=tmp_path, workspace=workspace, home=home, model=model,
                        TUNA_SCENARIO="hostile", TUNA_OUTSIDE=str(outside))
        requests = model.requests
    assert len(requests) == 3 and seen["result"]["stopReason"] == "end_turn"
    absolute, relative = tool_results(requests[1])
    for refused in (absolute, relative):
        assert "outside" in refused.lower() and "stolen" not in refused, refused
    assert seen["outside_attached"] is False  # a file outside the root is not shown to the server
    assert seen["outside"]["buffer"] == "secret\nunsaved secret\n" and seen["outside"]["modified"] is True
    assert outside.read_text() == "secret\n"
    refused = tool_results(requests[2])[-1]
    assert "The editor refused the edit of 'calc.py'" in refused and "Nothing was written." in refused, refused
    assert seen["calc"]["buffer"] == seen["calc"]["disk"] == ORIGINAL and seen["calc"]["modified"] is False
    assert calc.read_bytes() == ORIGINAL.encode() and seen["result"]["changedFiles"] == []


TWO_EDITS_DRIVER = HERE / "nvim_two_edits_driver.lua"


def test_two_edits_in_a_row_on_an_unsaved_buffer_both_land_or_say_so(nvim, tmp_path, workspace, home):  # noqa: F811
    """Issue 32, item 0: Neovim answers applyEdit before its (debounced) didChange. The second
    edit matches a line the server's stale copy also has (Neovim dropped it, versioned older
    than the buffer, yet answered `applied`); the third matches only what the first wrote.
    Each edit reported done is in the buffer."""
    (workspace / "calc.py").write_text(CALC)
    script = {"turns": [
        edit("return a - b", "return a + b"),
        edit("def add(a, b):", "def add(a, b, c=0):"),
        edit("return a + b", "return a + b + c"),
        {"text": "Done."},
    ]}
    with ScriptedModelServer(script) as model:
        seen = run_nvim(nvim, TWO_EDITS_DRIVER, tmp_path=tmp_path, workspace=workspace, home=home, model=model)
        requests = model.requests
    assert len(requests) == 4 and seen["result"]["stopReason"] == "end_turn", seen
    answers = [tool_results(requests[n])[-1] for n in (1, 2, 3)]
    assert all(a.startswith("Edited calc.py") for a in answers), (answers, seen["buffer"])
    assert seen["buffer"] == ["def add(a, b, c=0):", "    return a + b + c", "# mine, unsaved"], seen
    assert seen["modified"] is True and (workspace / "calc.py").read_text() == CALC


def test_an_edit_the_client_says_it_applied_but_dropped_is_an_error(nvim, tmp_path, workspace, home):  # noqa: F811
    (workspace / "calc.py").write_text(CALC)
    script = {"turns": [edit("return a - b", "return a + b"), {"text": "Tried."}]}
    with ScriptedModelServer(script) as model:
        seen = run_nvim(nvim, TWO_EDITS_DRIVER, tmp_path=tmp_path, workspace=workspace, home=home, model=model,
                        TUNA_DROP_EDITS="1")
        requests = model.requests
    answer = tool_results(requests[1])[-1]
    assert "answered that it applied the edit of 'calc.py', but its text does not show the result" in answer, answer
    assert seen["buffer"] == ["def add(a, b):", "    return a - b", "# mine, unsaved"]
    assert seen["result"]["stopReason"] == "end_turn" and (workspace / "calc.py").read_text() == CALC
