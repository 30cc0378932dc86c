"""Changes and checkpoints over the real server (issue 14, item 5): every request's effect on
the workspace is recorded before and after (shell commands included) in a shadow repository
under the data folder; `tunacode.changes`, `RequestResult.changedFiles` and
`tunacode.session.rewind` read it."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.conftest import scripted_options
from tests.lsp.harness import LspHarness

DONE = {"steps": [{"text": "Done."}]}
CALC = "def add(a, b):\n    return a - b\n"


def call(tool: str, args: dict) -> dict:
    return {"steps": [{"tool_call": {"name": tool, "arguments": args}}]}


EDIT = call("edit_file", {"filepath": "calc.py", "old_text": "return a - b", "new_text": "return a + b"})
SHELL = call("bash", {"command": "printf 'made by the shell\\n' > shell.txt && rm gone.txt"})
NOTES = call("write_file", {"filepath": "docs/notes.md", "content": "# notes\n"})


async def _start(lsp, model, script, **options) -> None:
    model.set_script({"turns": script})
    await lsp.start(init_options=scripted_options(model, **options))


async def _error(awaitable) -> tuple[int | None, str, Any]:
    with pytest.raises(Exception) as info:
        await awaitable
    return getattr(info.value, "code", None), str(info.value), getattr(info.value, "data", None)


def _tree_digest(folder: Path) -> str:
    """Every file's path, mode and bytes under `folder` (to prove it was not touched)."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.stat().st_mode.to_bytes(4, "little") + path.read_bytes())
    return digest.hexdigest()


async def test_a_request_lists_its_changes_shell_included_and_rewind_restores_them(lsp, model, workspace, home):
    (workspace / "calc.py").write_text(CALC)
    (workspace / "gone.txt").write_text("bye\n")
    await _start(lsp, model, [EDIT, SHELL, DONE])
    result = await lsp.command("tunacode.request", {"prompt": "fix it"})
    assert result["stopReason"] == "end_turn"
    assert result["changedFiles"] == ["calc.py", "gone.txt", "shell.txt"]

    changes = await lsp.command("tunacode.changes", {"sessionId": result["sessionId"], "requestId": result["requestId"]})
    files = {f["path"]: f for f in changes["files"]}
    assert changes["truncated"] is False
    assert [files[p]["status"] for p in sorted(files)] == ["modified", "deleted", "added"]
    assert files["calc.py"]["diff"].splitlines()[:2] == ["--- a/calc.py", "+++ b/calc.py"]
    assert "-    return a - b" in files["calc.py"]["diff"] and "+    return a + b" in files["calc.py"]["diff"]
    assert "+made by the shell" in files["shell.txt"]["diff"]
    assert files["gone.txt"]["diff"].splitlines()[:2] == ["--- a/gone.txt", "+++ /dev/null"]
    # the workspace got nothing of its own: the shadow repository lives in the data folder
    assert not (workspace / ".git").exists()
    assert len(list((home / "checkpoints").iterdir())) == 2  # the repository and its lock

    rewound = await lsp.command("tunacode.session.rewind", {"sessionId": result["sessionId"], "requestId": result["requestId"]})
    assert sorted(rewound["restored"]) == ["calc.py", "gone.txt", "shell.txt"]
    assert (workspace / "calc.py").read_text() == CALC
    assert (workspace / "gone.txt").read_text() == "bye\n"
    assert not (workspace / "shell.txt").exists()
    assert rewound["session"]["messageCount"] == 0  # cut back to before the prompt
    got = await lsp.command("tunacode.session.get", {"sessionId": result["sessionId"]})
    assert got["messages"] == []
    # the request is gone with its messages
    code, message, _ = await _error(lsp.command("tunacode.changes", {"sessionId": result["sessionId"], "requestId": result["requestId"]}))
    assert code == -32602 and result["requestId"] in message


async def test_rewind_to_an_earlier_request_undoes_it_and_every_later_one(lsp, model, workspace):
    (workspace / "calc.py").write_text(CALC)
    await _start(lsp, model, [EDIT, DONE, NOTES, DONE, {"steps": [{"text": "Third."}]}])
    first = await lsp.command("tunacode.request", {"prompt": "fix it"})
    session = first["sessionId"]
    second = await lsp.command("tunacode.request", {"prompt": "write notes", "sessionId": session})
    assert second["changedFiles"] == ["docs/notes.md"]
    third = await lsp.command("tunacode.request", {"prompt": "just talk", "sessionId": session})
    assert third["changedFiles"] == []
    stored = (await lsp.command("tunacode.session.get", {"sessionId": session}))["messages"]
    first_count = 4  # prompt, call, result, answer

    whole = await lsp.command("tunacode.changes", {"sessionId": session})  # the session's changes
    assert [(f["path"], f["status"]) for f in whole["files"]] == [("calc.py", "modified"), ("docs/notes.md", "added")]

    rewound = await lsp.command("tunacode.session.rewind", {"sessionId": session, "requestId": second["requestId"]})
    assert rewound["restored"] == ["docs/notes.md"]
    assert not (workspace / "docs").exists()  # its folder went with it
    assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"  # the first request's edit stays
    assert rewound["session"]["messageCount"] == first_count
    got = await lsp.command("tunacode.session.get", {"sessionId": session})
    assert got["messages"] == stored[:first_count]
    code, _, _ = await _error(lsp.command("tunacode.changes", {"sessionId": session, "requestId": third["requestId"]}))
    assert code == -32602  # the later request is gone too

    rewound = await lsp.command("tunacode.session.rewind", {"sessionId": session, "requestId": first["requestId"], "files": False})
    assert rewound["restored"] == [] and rewound["session"]["messageCount"] == 0
    assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"  # files: false leaves the files


async def test_a_file_changed_since_is_a_conflict_unless_forced(lsp, model, workspace):
    (workspace / "calc.py").write_text(CALC)
    await _start(lsp, model, [EDIT, DONE])
    result = await lsp.command("tunacode.request", {"prompt": "fix it"})
    (workspace / "calc.py").write_text("# the user's own version\n")
    args = {"sessionId": result["sessionId"], "requestId": result["requestId"]}
    code, message, data = await _error(lsp.command("tunacode.session.rewind", args))
    assert code == -32004 and "calc.py changed since the agent edited it" in message
    assert data == {"files": ["calc.py"]}
    assert (workspace / "calc.py").read_text() == "# the user's own version\n"  # nothing restored
    assert (await lsp.command("tunacode.session.get", {"sessionId": result["sessionId"]}))["session"]["messageCount"] == 4

    rewound = await lsp.command("tunacode.session.rewind", {**args, "force": True})
    assert rewound["restored"] == ["calc.py"] and (workspace / "calc.py").read_text() == CALC


async def test_a_file_already_undone_by_hand_is_no_conflict(lsp, model, workspace):
    """Bug: a file the user had put back to its earlier bytes (a per-file Undo) was named in a
    -32004 conflict, though the rewind could lose nothing."""

    (workspace / "calc.py").write_text(CALC)
    (workspace / "gone.txt").write_text("bye\n")
    await _start(lsp, model, [EDIT, SHELL, DONE])
    result = await lsp.command("tunacode.request", {"prompt": "fix it"})
    assert result["changedFiles"] == ["calc.py", "gone.txt", "shell.txt"]
    (workspace / "calc.py").write_text(CALC)  # undone by hand
    rewound = await lsp.command("tunacode.session.rewind", {"sessionId": result["sessionId"], "requestId": result["requestId"]})
    assert rewound["restored"] == ["gone.txt", "shell.txt"]  # calc.py needed nothing
    assert (workspace / "gone.txt").read_text() == "bye\n" and not (workspace / "shell.txt").exists()


async def test_a_change_between_two_requests_is_a_conflict(lsp, model, workspace):
    (workspace / "calc.py").write_text(CALC)
    fix_back = call("edit_file", {"filepath": "calc.py", "old_text": "return a + b", "new_text": "return b + a"})
    await _start(lsp, model, [EDIT, DONE, fix_back, DONE])
    first = await lsp.command("tunacode.request", {"prompt": "fix it"})
    text = (workspace / "calc.py").read_text()
    (workspace / "calc.py").write_text(text + "# the user's line\n")  # between the two requests
    second = await lsp.command("tunacode.request", {"prompt": "again", "sessionId": first["sessionId"]})
    assert second["changedFiles"] == ["calc.py"]
    code, _, data = await _error(lsp.command("tunacode.session.rewind", {"sessionId": first["sessionId"], "requestId": first["requestId"]}))
    assert code == -32004 and data == {"files": ["calc.py"]}  # rewinding would lose the user's line
    # the second request alone restores cleanly: its own state before includes the user's line
    rewound = await lsp.command("tunacode.session.rewind", {"sessionId": first["sessionId"], "requestId": second["requestId"]})
    assert rewound["restored"] == ["calc.py"]
    assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n# the user's line\n"


async def test_a_document_with_unsaved_changes_is_a_conflict(lsp, model, workspace):
    (workspace / "calc.py").write_text(CALC)
    await _start(lsp, model, [EDIT, DONE])
    result = await lsp.command("tunacode.request", {"prompt": "fix it"})
    uri = (workspace / "calc.py").as_uri()
    lsp.client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=(workspace / "calc.py").read_text() + "# typing\n")))
    code, message, data = await _error(lsp.command("tunacode.session.rewind", {"sessionId": result["sessionId"], "requestId": result["requestId"]}))
    assert code == -32004 and data == {"files": ["calc.py"]} and "unsaved in the editor" in message
    assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


async def test_bad_rewinds_unknown_request_unknown_session_running_request(lsp, model, workspace):
    slow = {"steps": [{"text": "word " * 100, "chunks": 100, "delay": 0.05}]}
    await _start(lsp, model, [DONE, slow])
    done = await lsp.command("tunacode.request", {"prompt": "hello"})
    session = done["sessionId"]
    code, message, _ = await _error(lsp.command("tunacode.session.rewind", {"sessionId": session, "requestId": "req_nope"}))
    assert code == -32602 and "req_nope" in message
    code, _, _ = await _error(lsp.command("tunacode.session.rewind", {"sessionId": "no-such-session", "requestId": done["requestId"]}))
    assert code == -32001
    code, _, _ = await _error(lsp.command("tunacode.changes", {"sessionId": "no-such-session"}))
    assert code == -32001
    code, message, _ = await _error(lsp.command("tunacode.session.rewind", {"sessionId": session}))
    assert code == -32602 and "requestId" in message

    running = lsp.send_command("tunacode.request", {"prompt": "slow", "sessionId": session})
    await lsp.wait_for_event(lambda e: e.get("type") == "text_delta" and e.get("requestId") != done["requestId"])
    code, _, _ = await _error(lsp.command("tunacode.session.rewind", {"sessionId": session, "requestId": done["requestId"]}))
    assert code == -32002
    # the running request's changes so far are readable (against the workspace now)
    active = (await lsp.command("tunacode.status", {}))["activeRequests"][0]["requestId"]
    assert (await lsp.command("tunacode.changes", {"sessionId": session, "requestId": active}))["files"] == []
    await lsp.command("tunacode.abort", {"sessionId": session})
    assert (await running)["stopReason"] == "cancelled"
    rewound = await lsp.command("tunacode.session.rewind", {"sessionId": session, "requestId": active})
    assert rewound["session"]["messageCount"] == 2  # the first request's prompt and answer


async def test_a_missing_or_damaged_shadow_repository_is_a_clear_error_and_the_session_goes_on(lsp, model, workspace, home):
    (workspace / "calc.py").write_text(CALC)
    again = call("edit_file", {"filepath": "calc.py", "old_text": "return a + b", "new_text": "return b + a"})
    await _start(lsp, model, [EDIT, DONE, again, DONE, DONE])
    first = await lsp.command("tunacode.request", {"prompt": "fix it"})
    session = first["sessionId"]
    [repo] = [p for p in (home / "checkpoints").iterdir() if p.is_dir()]
    shutil.rmtree(repo)  # someone cleaned the data folder

    code, message, _ = await _error(lsp.command("tunacode.changes", {"sessionId": session, "requestId": first["requestId"]}))
    assert code == -32603 and "no longer in" in message
    code, message, _ = await _error(lsp.command("tunacode.session.rewind", {"sessionId": session, "requestId": first["requestId"]}))
    assert code == -32603 and "cannot be restored" in message
    assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"  # nothing touched

    second = await lsp.command("tunacode.request", {"prompt": "again", "sessionId": session})  # a new repository
    assert second["stopReason"] == "end_turn" and second["changedFiles"] == ["calc.py"]

    (repo / "HEAD").unlink()  # now damage it
    third = await lsp.command("tunacode.request", {"prompt": "talk", "sessionId": session})
    assert third["stopReason"] == "end_turn" and "changedFiles" not in third
    notices = [e["message"] for e in lsp.events_of(third["requestId"]) if e["type"] == "notice"]
    assert any("Checkpoints are off for this request" in n and "damaged" in n for n in notices), notices
    code, message, _ = await _error(lsp.command("tunacode.changes", {"sessionId": session, "requestId": third["requestId"]}))
    assert code == -32603 and "no checkpoint" in message
    # rewinding the history alone still works
    rewound = await lsp.command("tunacode.session.rewind", {"sessionId": session, "requestId": third["requestId"], "files": False})
    assert rewound["session"]["messageCount"] == 8


async def test_ignored_large_and_git_files_are_not_recorded_and_the_own_git_is_untouched(lsp, model, workspace):
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / ".gitignore").write_text("build/\n")
    (workspace / "calc.py").write_text(CALC)
    subprocess.run(["git", "-C", str(workspace), "add", "-A"], check=True)
    own_git = _tree_digest(workspace / ".git")
    script = call("bash", {"command": "mkdir -p build && echo out > build/x.o && head -c 6000000 /dev/zero > big.bin && printf 'x\\0y' > data.bin"})
    await _start(lsp, model, [script, DONE])
    result = await lsp.command("tunacode.request", {"prompt": "build"})
    assert result["changedFiles"] == ["data.bin"]  # build/ is ignored, big.bin is over the size limit
    changes = await lsp.command("tunacode.changes", {"sessionId": result["sessionId"]})
    assert changes["files"] == [{"path": "data.bin", "status": "added", "diff": "Binary files /dev/null and b/data.bin differ"}]
    assert _tree_digest(workspace / ".git") == own_git  # the workspace's own repository is never touched
    await lsp.command("tunacode.session.rewind", {"sessionId": result["sessionId"], "requestId": result["requestId"]})
    assert not (workspace / "data.bin").exists()
    assert (workspace / "big.bin").exists() and (workspace / "build" / "x.o").exists()  # not recorded, not restored
    assert _tree_digest(workspace / ".git") == own_git


async def test_two_servers_on_one_workspace_keep_their_checkpoints_apart(model, workspace, home, tmp_path):
    (workspace / "a.txt").write_text("a\n")
    model.set_script({"turns": [call("bash", {"command": "echo one >> a.txt"}), DONE,
                                call("bash", {"command": "echo two > b.txt"}), DONE]})
    one, two = LspHarness(workspace, home), LspHarness(workspace, home)
    try:
        await one.start(init_options=scripted_options(model, toolConcurrency=1))
        await two.start(init_options=scripted_options(model, toolConcurrency=1))
        first = await one.command("tunacode.request", {"prompt": "one"})
        second = await two.command("tunacode.request", {"prompt": "two"})
        assert first["changedFiles"] == ["a.txt"] and second["changedFiles"] == ["b.txt"]
        by_two = await two.command("tunacode.changes", {"sessionId": first["sessionId"], "requestId": first["requestId"]})
        assert [f["path"] for f in by_two["files"]] == ["a.txt"]  # one store, one shadow repository
        rewound = await two.command("tunacode.session.rewind", {"sessionId": first["sessionId"], "requestId": first["requestId"]})
        assert rewound["restored"] == ["a.txt"] and (workspace / "a.txt").read_text() == "a\n"
        assert (workspace / "b.txt").read_text() == "two\n"
    finally:
        await one.stop()
        await two.stop()


async def test_session_get_says_where_each_request_starts(lsp, model, workspace):
    """A client reloading a session (a window reload) can offer each turn's changes and rewind."""

    (workspace / "calc.py").write_text(CALC)
    await _start(lsp, model, [EDIT, DONE, DONE])
    first = await lsp.command("tunacode.request", {"prompt": "fix it"})
    second = await lsp.command("tunacode.request", {"prompt": "thanks", "sessionId": first["sessionId"]})
    got = await lsp.command("tunacode.session.get", {"sessionId": first["sessionId"]})
    marks = got["requests"]
    assert [m["requestId"] for m in marks] == [first["requestId"], second["requestId"]]
    prompts = [got["messages"][m["firstMessage"]] for m in marks]
    assert [p["role"] for p in prompts] == ["user", "user"]
    assert [p["content"][-1]["text"] for p in prompts] == ["fix it", "thanks"]
    await lsp.command("tunacode.session.rewind", {"sessionId": first["sessionId"], "requestId": second["requestId"]})
    got = await lsp.command("tunacode.session.get", {"sessionId": first["sessionId"]})
    assert [m["requestId"] for m in got["requests"]] == [first["requestId"]]


async def test_a_stopped_request_answers_at_once_and_its_changes_are_still_recorded(lsp, model, workspace, tmp_path):
    """A cancelled request does not wait for its last snapshot (a `git status` of the whole
    workspace) to answer; what its shell command did is still listed and rewound."""

    ready = tmp_path / "ready"
    os.mkfifo(ready)  # the command blocks on it until the test reads: no polling
    command = f"printf 'half done\\n' > made.txt && echo go > {ready} && sleep 30"
    await _start(lsp, model, [call("bash", {"command": command}), DONE], shellSandbox="off")
    pending = lsp.send_command("tunacode.request", {"prompt": "work"})
    assert (await asyncio.wait_for(asyncio.to_thread(ready.read_text), 15)).strip() == "go"
    started = next(e for e in lsp.events if e["type"] == "request_start")
    await lsp.command("tunacode.abort", {"sessionId": started["sessionId"]})
    result = await pending
    assert result["stopReason"] == "cancelled" and "changedFiles" not in result
    args = {"sessionId": result["sessionId"], "requestId": result["requestId"]}
    changes = await lsp.command("tunacode.changes", args)
    assert [(f["path"], f["status"]) for f in changes["files"]] == [("made.txt", "added")]
    rewound = await lsp.command("tunacode.session.rewind", args)
    assert rewound["restored"] == ["made.txt"] and not (workspace / "made.txt").exists()
