"""The checkpoint repository is bounded (`checkpointMaxMegabytes`, issue 35, item 1), over the
real server and real git: a repository over the bound shrinks when a request starts, deleted
sessions' checkpoints go first, then the least recently changed session's (never a running
one's), and a rewind of a pruned checkpoint is a clear error saying why."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import scripted_options

MEGABYTE = 1024 * 1024


def _shell(command: str) -> list[dict]:
    """One request's model turns: the shell command, then the answer."""
    return [{"steps": [{"tool_call": {"name": "bash", "arguments": {"command": command}}}]}, {"steps": [{"text": "Done."}]}]


def _objects_bytes(home: Path) -> int:
    total = 0
    for repo in (home / "checkpoints").iterdir():
        if repo.is_dir():
            total += sum(p.lstat().st_size for p in (repo / "objects").rglob("*") if p.is_file())
    return total


async def _error(awaitable) -> tuple[int | None, str]:
    try:
        await awaitable
    except Exception as exc:  # noqa: BLE001 - the server's error answer
        return getattr(exc, "code", None), str(exc)
    raise AssertionError("expected an error")


async def test_an_oversized_checkpoint_repository_is_pruned_deleted_sessions_first(lsp, model, workspace, home):
    (workspace / "notes.md").write_text("# notes\n")
    script = [
        _shell("head -c 700000 /dev/urandom > d.bin"), _shell("rm d.bin"),  # session D, deleted then
        _shell("head -c 450000 /dev/urandom > a.bin"), _shell("rm a.bin"),  # session A
        _shell("head -c 700000 /dev/urandom > b.bin"), _shell("rm b.bin"),  # session B
    ]
    model.set_script({"turns": [turn for request in script for turn in request]})
    await lsp.start(init_options=scripted_options(model, checkpointMaxMegabytes=1))

    d1 = await lsp.command("tunacode.request", {"prompt": "make d"})
    await lsp.command("tunacode.request", {"prompt": "drop d", "sessionId": d1["sessionId"]})
    assert _objects_bytes(home) > 700_000  # random bytes do not compress
    assert await lsp.command("tunacode.session.delete", {"sessionId": d1["sessionId"]})

    a1 = await lsp.command("tunacode.request", {"prompt": "make a"})
    assert a1["changedFiles"] == ["a.bin"]
    assert _objects_bytes(home) > MEGABYTE  # over the bound: d.bin's bytes are still kept
    # the next request's start prunes (its shell command's snapshot is queued after that):
    # the deleted session's checkpoints go, the running session A keeps its own
    a2 = await lsp.command("tunacode.request", {"prompt": "drop a", "sessionId": a1["sessionId"]})
    assert a2["changedFiles"] == ["a.bin"]
    assert 450_000 < _objects_bytes(home) < MEGABYTE
    changes = await lsp.command("tunacode.changes", {"sessionId": a1["sessionId"], "requestId": a1["requestId"]})
    assert [(f["path"], f["status"]) for f in changes["files"]] == [("a.bin", "added")]

    b1 = await lsp.command("tunacode.request", {"prompt": "make b"})
    assert _objects_bytes(home) > MEGABYTE
    await lsp.command("tunacode.request", {"prompt": "drop b", "sessionId": b1["sessionId"]})
    # still over with A's and B's: the least recently changed session (A) is pruned, B kept
    assert 700_000 < _objects_bytes(home) < MEGABYTE
    changes = await lsp.command("tunacode.changes", {"sessionId": b1["sessionId"], "requestId": b1["requestId"]})
    assert [(f["path"], f["status"]) for f in changes["files"]] == [("b.bin", "added")]

    for command, args in (
        ("tunacode.changes", {"sessionId": a1["sessionId"], "requestId": a1["requestId"]}),
        ("tunacode.session.rewind", {"sessionId": a1["sessionId"], "requestId": a1["requestId"]}),
    ):
        code, message = await _error(lsp.command(command, args))
        assert code == -32603, message
        assert "were pruned" in message and "checkpointMaxMegabytes (1 MB" in message, message
    assert not (workspace / "a.bin").exists()  # nothing restored
    # the history alone can still be cut
    rewound = await lsp.command("tunacode.session.rewind", {"sessionId": a1["sessionId"], "requestId": a1["requestId"], "files": False})
    assert rewound["session"]["messageCount"] == 0
