"""A request that changed nothing never waits for a snapshot (issue 35, item 1): the first
snapshot of a big workspace takes tens of seconds, and a read-only request (`list_files`,
`grep`) in a 60,000-file workspace did not finish in 70 s. Here every snapshot is held up by
the checkpoint lock, taken by the test (as another server on the same workspace would): a
read-only request still answers at once, while a request that writes waits for its 'before'
snapshot; once the lock is free, the read-only request's checkpoint is whole ('after' =
'before') and `tunacode.changes` lists nothing for it. The first snapshot, held up over a
second, shows work-done progress until it ends."""

from __future__ import annotations

import asyncio
import fcntl
import os
import time
from pathlib import Path

from tests.conftest import scripted_options
from tunacode_lsp.store.locations import project_id_for

DONE = {"steps": [{"text": "Done."}]}


def call(tool: str, args: dict) -> dict:
    return {"steps": [{"tool_call": {"name": tool, "arguments": args}}]}


def _hold_lock(home: Path, workspace: Path) -> int:
    folder = home / "checkpoints"
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / f"{project_id_for(os.path.realpath(workspace))}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


async def test_a_read_only_request_never_waits_for_a_snapshot(lsp, model, workspace, home):
    (workspace / "a.py").write_text("print('a')\n")
    held = _hold_lock(home, workspace)  # every snapshot now waits (up to 30 s) for the lock
    try:
        model.set_script({"turns": [
            call("list_files", {"path": "."}), call("grep", {"pattern": "print"}), DONE,
            call("write_file", {"filepath": "b.py", "content": "b\n"}), DONE,
        ]})
        client = await lsp.start(init_options=scripted_options(model))
        started = time.monotonic()
        result = await asyncio.wait_for(lsp.command("tunacode.request", {"prompt": "look"}), 15)
        took = time.monotonic() - started
        assert result["stopReason"] == "end_turn" and result["changedFiles"] == []
        assert took < 10, took  # the lock is held for 30 s: it did not wait for it
        tools = [e for e in lsp.events_of(result["requestId"]) if e["type"] == "tool_call_update" and e["status"] == "completed"]
        assert [e["name"] for e in tools] == ["list_files", "grep"]

        # a request that writes waits for its 'before' snapshot: still waiting while the lock is held
        writing = asyncio.ensure_future(lsp.command("tunacode.request", {"prompt": "write", "sessionId": result["sessionId"]}))
        done, _ = await asyncio.wait({writing}, timeout=1.5)
        assert not done and not (workspace / "b.py").exists()
    finally:
        fcntl.flock(held, fcntl.LOCK_UN)
        os.close(held)
    second = await asyncio.wait_for(writing, 60)
    # the first snapshot (held up > 1 s) was not silent: work-done progress, begun and ended
    reports = client.progress_reports.get("tunacode/checkpoints", [])
    assert reports and reports[0].kind == "begin" and "checkpoints" in reports[0].title
    assert reports[-1].kind == "end" and "recorded in" in reports[-1].message
    assert second["stopReason"] == "end_turn" and second["changedFiles"] == ["b.py"]
    changes = await lsp.command("tunacode.changes", {"sessionId": result["sessionId"], "requestId": result["requestId"]})
    assert changes == {"files": [], "truncated": False}
    # the session's changes: the read-only request's checkpoint is whole (after = before)
    session = await lsp.command("tunacode.changes", {"sessionId": result["sessionId"]})
    assert [f["path"] for f in session["files"]] == ["b.py"]
    rewound = await lsp.command("tunacode.session.rewind", {"sessionId": result["sessionId"], "requestId": result["requestId"]})
    assert rewound["restored"] == ["b.py"] and not (workspace / "b.py").exists()
    assert (workspace / "a.py").read_text() == "print('a')\n"
