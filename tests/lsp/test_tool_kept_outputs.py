"""Whole outputs kept (issue 34) through the real server: a cut bash or grep result names the
file holding all of it, in the session's outputs folder under TUNACODE_HOME; read_file reads
that file and nothing else of the data folder; the folder goes with the session."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import scripted_options

DONE = {"steps": [{"text": "Done."}]}
KEPT = re.compile(r"is kept in (\S+): read it with read_file")


def call(tool: str, args: dict) -> dict:
    return {"steps": [{"tool_call": {"name": tool, "arguments": args}}]}


def _last_tool_message(model) -> str:
    return [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"][-1]


async def test_cut_outputs_are_kept_read_back_and_deleted_with_the_session(lsp, model, workspace, home):
    (workspace / "many.txt").write_text("".join(f"hit {n}\n" for n in range(5000)))
    model.set_script([call("bash", {"command": "seq 1 100000"}), call("grep", {"pattern": "hit", "path": "many.txt"}), DONE])
    await lsp.start(init_options=scripted_options(model))
    first = await lsp.command("tunacode.request", {"prompt": "count"})
    session = first["sessionId"]
    bash_text = [m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"][-1]
    grep_text = _last_tool_message(model)
    bash_kept, grep_kept = Path(KEPT.search(bash_text)[1]), Path(KEPT.search(grep_text)[1])
    folder = home / "outputs" / session
    assert bash_kept.parent == folder and grep_kept.parent == folder
    assert bash_kept.read_text() == "".join(f"{n}\n" for n in range(1, 100001))
    assert grep_kept.read_text().count("\n") == 5000

    model.set_script([call("read_file", {"filepath": str(bash_kept), "offset": 50000, "limit": 2}), DONE])
    await lsp.command("tunacode.request", {"prompt": "the middle", "sessionId": session})
    shown = _last_tool_message(model)
    assert "lines 50001-50002 of 100000" in shown and "|50001" in shown and "|50002" in shown

    assert (await lsp.command("tunacode.session.delete", {"sessionId": session}))["deleted"] is True
    assert not folder.exists()


async def test_read_file_reaches_no_other_part_of_the_data_folder(lsp, model, workspace, home):
    """Attacks of a model on the data folder: the store, another session's outputs, a way out
    of its own outputs folder, a link planted in it."""

    model.set_script([call("bash", {"command": "seq 1 100000"}), DONE])
    await lsp.start(init_options=scripted_options(model))
    first = await lsp.command("tunacode.request", {"prompt": "count"})
    folder = home / "outputs" / first["sessionId"]
    other = home / "outputs" / "another-session"
    other.mkdir(parents=True)
    (other / "bash-0123.txt").write_text("OTHER SESSION\n")
    (folder / "link.txt").symlink_to(home / "sessions.sqlite3")
    (folder / "other.txt").symlink_to(other / "bash-0123.txt")
    attempts = [
        str(home / "sessions.sqlite3"),
        str(other / "bash-0123.txt"),
        f"{folder}/../another-session/bash-0123.txt",
        f"{folder}/../../sessions.sqlite3",
        str(folder / "link.txt"),
        str(folder / "other.txt"),
        str(folder),
    ]
    model.set_script([*(call("read_file", {"filepath": path}) for path in attempts), DONE])
    result = await lsp.command("tunacode.request", {"prompt": "look around", "sessionId": first["sessionId"]})
    assert [c["status"] for c in result["toolCalls"]] == ["failed"] * len(attempts)
    for request in model.requests[-len(attempts):]:
        text = [m["content"] for m in request["messages"] if m["role"] == "tool"][-1]
        assert "outside the workspace" in text or "could not be opened" in text, text
        assert "OTHER SESSION" not in text and "SQLite" not in text
