"""`tunacode.session.fork {sessionId, requestId}` over the real server: a copy of the
conversation before that request; the source session and the workspace files are untouched
(a fork never rewinds), and the fork goes on from there."""

from __future__ import annotations

import pytest

from tests.conftest import scripted_options
from tests.lsp.test_checkpoints import CALC, DONE, EDIT, NOTES, _tree_digest


async def test_fork_before_a_request_of_a_session_with_checkpoints_leaves_the_files(lsp, model, workspace):
    (workspace / "calc.py").write_text(CALC)
    model.set_script([EDIT, DONE, NOTES, DONE, {"text": "Forked answer."}])
    await lsp.start(init_options=scripted_options(model))
    first = await lsp.command("tunacode.request", {"prompt": "fix it"})
    session = first["sessionId"]
    second = await lsp.command("tunacode.request", {"prompt": "write notes", "sessionId": session})
    assert second["changedFiles"] == ["docs/notes.md"]
    source = await lsp.command("tunacode.session.get", {"sessionId": session})
    files = _tree_digest(workspace)

    fork = await lsp.command("tunacode.session.fork", {"sessionId": session, "requestId": second["requestId"]})
    assert fork["sessionId"] != session and fork["messageCount"] == 4  # the first request only
    assert _tree_digest(workspace) == files  # nothing restored: the notes and the edit stay
    assert (workspace / "docs" / "notes.md").exists()
    forked = await lsp.command("tunacode.session.get", {"sessionId": fork["sessionId"]})
    assert forked["messages"] == source["messages"][:4]
    assert await lsp.command("tunacode.session.get", {"sessionId": session}) == source  # the source as it was
    # fork before the first request: empty; the existing messageCount form stays
    empty = await lsp.command("tunacode.session.fork", {"sessionId": session, "requestId": first["requestId"]})
    assert empty["messageCount"] == 0
    counted = await lsp.command("tunacode.session.fork", {"sessionId": session, "messageCount": 4})
    assert (await lsp.command("tunacode.session.get", {"sessionId": counted["sessionId"]}))["messages"] == forked["messages"]

    # the fork goes on from before the second request
    answer = await lsp.command("tunacode.request", {"prompt": "something else", "sessionId": fork["sessionId"]})
    assert answer["text"] == "Forked answer."
    sent = str(model.requests[-1]["messages"])
    assert "fix it" in sent and "write notes" not in sent
    assert _tree_digest(workspace) == files


async def test_bad_forks(lsp, model):
    model.set_script([DONE])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    for args, code, needle in [
        ({"sessionId": result["sessionId"], "requestId": "req_nope"}, -32602, "params.requestId"),
        ({"sessionId": result["sessionId"], "requestId": result["requestId"], "messageCount": 1}, -32602, "not both"),
        ({"sessionId": "nope", "requestId": result["requestId"]}, -32001, "nope"),
        ({"sessionId": result["sessionId"], "requestId": ""}, -32602, "params.requestId"),
    ]:
        with pytest.raises(Exception) as info:
            await lsp.command("tunacode.session.fork", args)
        assert getattr(info.value, "code", None) == code and needle in str(info.value), args
