"""`:TunaRewind` to any request and `:TunaSteer` in a real headless Neovim 0.11
(nvim_rewind_driver.lua, nvim_steer_driver.lua) against the real server and the scripted
model: the picker lists the session's requests, and going back to one undoes it and every
later one, messages and files; a steer reaches the running request, a late one is asked next."""

from __future__ import annotations

import pytest
from tests.clients.test_neovim import nvim, run_nvim  # noqa: F401 (a fixture)
from tests.clients.test_neovim_edits import HERE

from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

pytestmark = pytest.mark.neovim


def write(name: str) -> dict:
    return {"steps": [{"tool_call": {"name": "write_file", "arguments": {"filepath": name, "content": name + "\n"}}}]}


def test_rewind_to_a_picked_or_numbered_request(nvim, tmp_path, workspace, home):  # noqa: F811
    script = {"turns": [write("one.txt"), {"text": "1"}, write("two.txt"), {"text": "2"}, write("three.txt"), {"text": "3"},
                        write("one.txt"), {"text": "1 again"}]}
    with ScriptedModelServer(script) as model:
        seen = run_nvim(nvim, HERE / "nvim_rewind_driver.lua", tmp_path=tmp_path, workspace=workspace, home=home, model=model)
        requests = model.requests
    assert seen["errors"] == [], seen["errors"]
    assert [a["text"] for a in seen["answers"]] == ["1", "2", "3"]
    assert seen["before"] == [True, True, True]
    picker, confirm = seen["prompts"][0], seen["prompts"][1]
    assert picker["items"] == ["1. write one", "2. write two", "3. write three"], picker
    assert confirm["items"] == ["Rewind", "Cancel"] and "request 2 (write two)" in confirm["prompt"]
    assert seen["picked_notice"] == "TunaCode: rewound to before request 2; 2 files restored"
    assert seen["after_pick"] == [True, False, False]
    # :TunaEdit 1: back to before request 1, then its prompt offered to edit and sent again
    [edit_input] = [p for p in seen["prompts"] if "default" in p]
    assert edit_input["default"] == "write one" and seen["edit_notice"].startswith("TunaCode: rewound to before request 1")
    assert seen["edited"]["text"] == "1 again" and seen["after_edit"] == [True, False, False]
    assert "write one again" in str(requests[-2]["messages"][-1])
    assert "write one" not in str(requests[-2]["messages"][:-1])  # the old request is gone from the history
    assert seen["missing_notice"] == "TunaCode: no request 9 in this session (it has 1)"
    assert seen["first_notice"] == "TunaCode: rewound to before request 1; 1 file restored"
    assert seen["after_first"] == [False, False, False]


def test_steer_reaches_the_running_request_and_later_is_asked_next(nvim, tmp_path, workspace, home):  # noqa: F811
    import os

    os.mkfifo(workspace / "gate")
    script = {"turns": [
        {"steps": [{"tool_call": {"name": "bash", "arguments": {"command": "cat gate"}}}]},
        {"text": "Fixed, with the empty-list test."},
        {"text": "Docs too."},
    ]}
    with ScriptedModelServer(script) as model:
        seen = run_nvim(nvim, HERE / "nvim_steer_driver.lua", tmp_path=tmp_path, workspace=workspace, home=home, model=model)
        requests = model.requests
    assert seen["errors"] == [], seen["errors"]
    assert seen["steer_notice"] == "TunaCode: sent; the model sees it at its next turn"
    assert seen["first"]["text"] == "Fixed, with the empty-list test." and seen["user_message"] is True
    assert requests[1]["messages"][-1]["role"] == "user" and "also test the empty list" in str(requests[1]["messages"][-1])
    assert seen["second"]["text"] == "Docs too." and seen["second"]["sessionId"] == seen["first"]["sessionId"]
    assert "and now the docs" in str(requests[2]["messages"][-1])
