"""Attacks on checkpoints and rewind over the real server: a hostile model running shell
commands (unsandboxed) tries to make a rewind lose the user's work, write outside the
workspace, or stop half way without saying so."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import scripted_options

DONE = {"steps": [{"text": "Done."}]}


def shell(command: str) -> dict:
    return {"steps": [{"tool_call": {"name": "bash", "arguments": {"command": command}}}]}


async def _start(lsp, model, script, **options) -> None:
    model.set_script({"turns": script})
    await lsp.start(init_options=scripted_options(model, shellSandbox="off", **options))


async def _error(awaitable) -> tuple[int | None, str, Any]:
    with pytest.raises(Exception) as info:
        await awaitable
    return getattr(info.value, "code", None), str(info.value), getattr(info.value, "data", None)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


async def test_a_folder_replaced_by_a_link_out_of_the_workspace_is_recorded_and_rewound(lsp, model, workspace, tmp_path):
    """Bug: a folder the model replaced by a symbolic link made every later snapshot fail
    (`git add`: "pathspec 'src/f' is beyond a symbolic link"): the request had no changes, and
    no rewind of any request in that workspace was possible any more."""

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.py").write_text("outside\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "f.py").write_text("the user's code\n")
    await _start(lsp, model, [shell(f"rm -r src && ln -s {outside} src && echo hi > note.txt"), DONE])
    result = await lsp.command("tunacode.request", {"prompt": "go"})
    assert result["stopReason"] == "end_turn"
    assert result["changedFiles"] == ["note.txt", "src", "src/f.py"]
    before_outside = _files(outside)

    rewound = await lsp.command("tunacode.session.rewind", {"sessionId": result["sessionId"], "requestId": result["requestId"]})
    assert "src/f.py" in rewound["restored"] and "note.txt" in rewound["restored"]
    assert not (workspace / "src").is_symlink() and (workspace / "src" / "f.py").read_text() == "the user's code\n"
    assert not (workspace / "note.txt").exists()
    assert _files(outside) == before_outside  # nothing written through the link


@pytest.mark.skipif(shutil.which("chattr") is None, reason="needs chattr (an immutable file stops even root)")
async def test_a_rewind_that_stops_half_way_says_which_files_and_keeps_the_history(lsp, model, workspace):
    """Bug: a file that could not be written stopped the restore after git had written others:
    the error said "git checkout failed: Updated 2 paths from ..." and named no file."""

    for name in ("a.txt", "b.txt", "c.txt"):
        (workspace / name).write_text(f"{name} by the user\n")
    await _start(lsp, model, [shell("for f in a b c; do echo agent > $f.txt; done; echo new > new.txt"), DONE])
    result = await lsp.command("tunacode.request", {"prompt": "go"})
    assert result["changedFiles"] == ["a.txt", "b.txt", "c.txt", "new.txt"]
    args = {"sessionId": result["sessionId"], "requestId": result["requestId"]}
    locked = workspace / "b.txt"
    if subprocess.run(["chattr", "+i", str(locked)], capture_output=True).returncode != 0:
        pytest.skip("this file system has no immutable files")
    try:
        code, message, data = await _error(lsp.command("tunacode.session.rewind", args))
    finally:
        subprocess.run(["chattr", "-i", str(locked)], check=True)
    assert code == -32603 and "half way" in message and "b.txt" in message
    assert data == {"restored": ["a.txt", "c.txt", "new.txt"], "failed": ["b.txt"]}
    assert (workspace / "a.txt").read_text() == "a.txt by the user\n" and locked.read_text() == "agent\n"
    got = await lsp.command("tunacode.session.get", {"sessionId": result["sessionId"]})
    assert got["session"]["messageCount"] > 0  # the history was not cut

    rewound = await lsp.command("tunacode.session.rewind", args)  # the cause fixed: the rest follows
    assert rewound["restored"] == ["b.txt"] and rewound["session"]["messageCount"] == 0
    assert _files(workspace) == {n: f"{n} by the user\n".encode() for n in ("a.txt", "b.txt", "c.txt")}


async def test_a_full_checkpoint_folder_still_runs_the_request_with_a_notice(lsp, model, workspace, home, tmp_path):
    """The data folder's checkpoints on a tiny file system that fills up: the request runs,
    its file is written, and the user is told that checkpoints are off for it."""

    folder = home / "checkpoints"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(folder)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        for i in range(4):
            (workspace / f"data{i}.bin").write_bytes(os.urandom(100_000))  # incompressible: fills 200 KB
        await _start(lsp, model, [shell("echo made > made.txt"), DONE])
        result = await lsp.command("tunacode.request", {"prompt": "go"})
        assert result["stopReason"] == "end_turn" and (workspace / "made.txt").read_text() == "made\n"
        assert "changedFiles" not in result
        notices = [e["message"] for e in lsp.events_of(result["requestId"]) if e["type"] == "notice"]
        assert any("Checkpoints are off for this request" in n and "No space left" in n for n in notices), notices
        code, message, _ = await _error(lsp.command("tunacode.session.rewind", {"sessionId": result["sessionId"], "requestId": result["requestId"]}))
        assert code == -32603 and "files: false" in message
        assert (workspace / "made.txt").exists()  # nothing touched
    finally:
        await lsp.stop()
        subprocess.run(["umount", "-l", str(folder)], check=False)


async def test_links_are_restored_as_links_and_a_rewind_never_writes_through_one(lsp, model, workspace, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("not the workspace's\n")
    (workspace / "target.txt").write_text("target\n")
    os.symlink("target.txt", workspace / "link")
    (workspace / "plain.txt").write_text("the user's plain file\n")
    command = (f"rm link && echo replaced > link && ln -s {outside} out && echo through >> out "
               f"&& rm plain.txt && ln -s {outside} plain.txt "
               f"&& ln -s {tmp_path} dir && echo new > dir/made-outside.txt")
    await _start(lsp, model, [shell(command), DONE])
    result = await lsp.command("tunacode.request", {"prompt": "go"})
    assert result["changedFiles"] == ["dir", "link", "out", "plain.txt"]  # the links, not what they point at
    rewound = await lsp.command("tunacode.session.rewind", {"sessionId": result["sessionId"], "requestId": result["requestId"]})
    assert rewound["restored"] == ["dir", "link", "out", "plain.txt"]
    assert not (workspace / "plain.txt").is_symlink() and (workspace / "plain.txt").read_text() == "the user's plain file\n"
    assert os.readlink(workspace / "link") == "target.txt" and (workspace / "target.txt").read_text() == "target\n"
    assert not os.path.lexists(workspace / "out") and not os.path.lexists(workspace / "dir")
    # what the model wrote outside through its links is outside the workspace: not undone, not removed
    assert outside.read_text() == "not the workspace's\nthrough\n"
    assert (tmp_path / "made-outside.txt").read_text() == "new\n"


async def test_an_ignore_file_written_by_the_model_hides_its_new_files_but_not_the_users(lsp, model, workspace):
    """What a `.gitignore` with `*` written by the model does (documented): the files recorded
    before the request are still restored; the new files it hid (and itself) are left."""

    (workspace / "a.txt").write_text("the user's\n")
    await _start(lsp, model, [shell("printf '*\\n' > .gitignore && echo agent > a.txt && echo hidden > hidden.txt && rm -f b.txt"), DONE])
    (workspace / "b.txt").write_text("also the user's\n")
    result = await lsp.command("tunacode.request", {"prompt": "go"})
    assert result["changedFiles"] == ["a.txt", "b.txt"]
    rewound = await lsp.command("tunacode.session.rewind", {"sessionId": result["sessionId"], "requestId": result["requestId"]})
    assert rewound["restored"] == ["a.txt", "b.txt"]
    assert (workspace / "a.txt").read_text() == "the user's\n" and (workspace / "b.txt").read_text() == "also the user's\n"
    assert (workspace / "hidden.txt").exists() and (workspace / ".gitignore").exists()


async def test_a_file_grown_over_the_size_limit_is_not_overwritten_without_force(lsp, model, workspace):
    """Bug: a file the request grew over 5 MB is no longer recorded; the user then edited it and
    a rewind overwrote it with its small old version without a word (no conflict could be seen)."""

    (workspace / "data.csv").write_text("id\n1\n")
    await _start(lsp, model, [shell("seq 1 1000000 > data.csv"), DONE])  # 6.9 MB
    result = await lsp.command("tunacode.request", {"prompt": "go"})
    assert result["changedFiles"] == ["data.csv"]
    with (workspace / "data.csv").open("a") as f:
        f.write("the user's row\n")
    args = {"sessionId": result["sessionId"], "requestId": result["requestId"]}
    code, message, data = await _error(lsp.command("tunacode.session.rewind", args))
    assert code == -32004 and data == {"files": ["data.csv"]} and "size limit" in message
    assert (workspace / "data.csv").read_text().endswith("the user's row\n")  # nothing restored
    rewound = await lsp.command("tunacode.session.rewind", {**args, "force": True})
    assert rewound["restored"] == ["data.csv"] and (workspace / "data.csv").read_text() == "id\n1\n"


async def test_a_file_replaced_by_a_fifo_does_not_break_checkpoints(lsp, model, workspace):
    """Bug: a recorded file replaced by a FIFO (or socket) made every later snapshot fail
    (`git add`: "can only add regular files"): no changes, no rewind in that workspace."""

    (workspace / "notes.txt").write_text("the user's notes\n")
    await _start(lsp, model, [shell("rm notes.txt && mkfifo notes.txt"), DONE])
    result = await lsp.command("tunacode.request", {"prompt": "go"})
    assert result["changedFiles"] == ["notes.txt"]
    rewound = await lsp.command("tunacode.session.rewind", {"sessionId": result["sessionId"], "requestId": result["requestId"]})
    assert rewound["restored"] == ["notes.txt"] and (workspace / "notes.txt").read_text() == "the user's notes\n"


async def test_restoring_a_file_where_a_folder_now_is_does_not_sweep_the_users_files(lsp, model, workspace):
    """Bug: the request replaced file `out` by a folder; the user then saved work in that
    folder; a rewind restored the file `out`, and git removed the folder with the user's
    file in it, without a conflict."""

    (workspace / "out").write_text("a file\n")
    await _start(lsp, model, [shell("rm out && mkdir out && echo agent > out/a.txt"), DONE])
    result = await lsp.command("tunacode.request", {"prompt": "go"})
    assert result["changedFiles"] == ["out", "out/a.txt"]
    (workspace / "out" / "mine.txt").write_text("the user's work\n")
    args = {"sessionId": result["sessionId"], "requestId": result["requestId"]}
    code, message, data = await _error(lsp.command("tunacode.session.rewind", args))
    assert code == -32004 and data == {"files": ["out/mine.txt"]} and "would be removed" in message
    assert (workspace / "out" / "mine.txt").read_text() == "the user's work\n"
    rewound = await lsp.command("tunacode.session.rewind", {**args, "force": True})
    assert rewound["restored"] == ["out"]
    assert (workspace / "out").read_text() == "a file\n"


async def test_two_servers_rewinding_at_once_lose_nothing(model, workspace, home):
    """Two servers on one workspace: session 1's request then session 2's changed the same
    file; both are rewound at the same moment. Whatever order the lock gives, a rewind that
    succeeded did what it said, and one that would have lost the other's change refused."""

    from tests.lsp.harness import LspHarness

    (workspace / "f.txt").write_text("a\n")
    model.set_script({"turns": [shell("echo b > f.txt"), DONE, shell("echo c > f.txt"), DONE]})
    one, two = LspHarness(workspace, home), LspHarness(workspace, home)
    try:
        await one.start(init_options=scripted_options(model, shellSandbox="off", toolConcurrency=1))
        await two.start(init_options=scripted_options(model, shellSandbox="off", toolConcurrency=1))
        first = await one.command("tunacode.request", {"prompt": "one"})
        second = await two.command("tunacode.request", {"prompt": "two"})
        assert first["changedFiles"] == second["changedFiles"] == ["f.txt"]
        assert first["sessionId"] != second["sessionId"]
        results = await asyncio.gather(
            one.command("tunacode.session.rewind", {"sessionId": first["sessionId"], "requestId": first["requestId"]}),
            two.command("tunacode.session.rewind", {"sessionId": second["sessionId"], "requestId": second["requestId"]}),
            return_exceptions=True,
        )
        text = (workspace / "f.txt").read_text()
        codes = [getattr(r, "code", None) if isinstance(r, Exception) else "ok" for r in results]
        if codes == ["ok", "ok"]:  # the second server's first: c -> b, then b -> a
            assert text == "a\n"
        else:  # the first server's first: it would lose session 2's "c" and refuses; session 2's goes on
            assert codes == [-32004, "ok"] and text == "b\n", (codes, text)
    finally:
        await one.stop()
        await two.stop()


async def test_one_request_rewound_by_two_servers_at_once_is_rewound_once(model, workspace, home):
    from tests.lsp.harness import LspHarness

    (workspace / "f.txt").write_text("a\n")
    model.set_script({"turns": [shell("echo b > f.txt && echo n > new.txt"), DONE]})
    one, two = LspHarness(workspace, home), LspHarness(workspace, home)
    try:
        await one.start(init_options=scripted_options(model, shellSandbox="off"))
        await two.start(init_options=scripted_options(model, shellSandbox="off"))
        done = await one.command("tunacode.request", {"prompt": "one"})
        args = {"sessionId": done["sessionId"], "requestId": done["requestId"]}
        results = await asyncio.gather(one.command("tunacode.session.rewind", args),
                                       two.command("tunacode.session.rewind", args), return_exceptions=True)
        ok = [r for r in results if not isinstance(r, Exception)]
        failed = [getattr(r, "code", r) for r in results if isinstance(r, Exception)]
        assert len(ok) == 1 and ok[0]["restored"] == ["f.txt", "new.txt"], results
        assert failed[0] in (-32002, -32602), results  # busy, or the request is already gone
        assert (workspace / "f.txt").read_text() == "a\n" and not (workspace / "new.txt").exists()
    finally:
        await one.stop()
        await two.stop()


async def test_hostile_file_names_are_recorded_and_rewound(lsp, model, workspace):
    names = ["-rf", "a:b*c?", "new\nline", ":(glob)**", "--", "sp ace ", "x" * 200 + "/" + "y" * 200]
    for name in names:
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text("the user's\n")
    os.makedirs(workspace / "d", exist_ok=True)
    raw = os.fsencode(workspace / "d") + b"/bad-\xff.txt"
    with open(raw, "wb") as f:
        f.write(b"the user's\n")
    command = ("for f in ./-rf './a:b*c?' \"./new\nline\" './:(glob)**' ./-- './sp ace ' d/* x*/y*; do echo agent > \"$f\"; done; "
               "echo made > ./-made")
    await _start(lsp, model, [shell(command), DONE])
    result = await lsp.command("tunacode.request", {"prompt": "go"})
    assert len(result["changedFiles"]) == len(names) + 2  # and d/bad-\xff.txt, -made
    assert "d/bad-\ufffd.txt" in result["changedFiles"] and "-made" in result["changedFiles"]
    rewound = await lsp.command("tunacode.session.rewind", {"sessionId": result["sessionId"], "requestId": result["requestId"]})
    assert len(rewound["restored"]) == len(result["changedFiles"])
    assert all((workspace / n).read_text() == "the user's\n" for n in names)
    assert open(raw, "rb").read() == b"the user's\n" and not (workspace / "-made").exists()


async def test_restoring_a_file_where_the_user_put_a_file_in_place_of_its_folder_is_a_conflict(lsp, model, workspace):
    """Bug: the request removed folder `d` (with `d/f`); the user then saved a file named `d`;
    a rewind restored `d/f`, and git removed the user's file `d` to make the folder, silently."""

    (workspace / "d").mkdir()
    (workspace / "d" / "f").write_text("f\n")
    await _start(lsp, model, [shell("rm -r d"), DONE])
    result = await lsp.command("tunacode.request", {"prompt": "go"})
    assert result["changedFiles"] == ["d/f"]
    (workspace / "d").write_text("the user's work\n")
    args = {"sessionId": result["sessionId"], "requestId": result["requestId"]}
    code, message, data = await _error(lsp.command("tunacode.session.rewind", args))
    assert code == -32004 and data == {"files": ["d"]} and "would be removed" in message
    assert (workspace / "d").read_text() == "the user's work\n"
    rewound = await lsp.command("tunacode.session.rewind", {**args, "force": True})
    assert rewound["restored"] == ["d/f"] and (workspace / "d" / "f").read_text() == "f\n"


async def test_a_hostile_workspace_index_and_git_objects_never_stop_checkpoints(lsp, model, workspace, tmp_path):
    """Bug: the first snapshot of a git workspace starts from the workspace's own index; one
    naming a path outside the tree (`../x`, which git itself never writes, but a checkout can
    ship) made every snapshot fail (`git add`: "is outside repository"), and a FIFO among the
    workspace's objects (git reads them through the alternates) turned checkpoints off: the
    request had no changes and nothing could be rewound. Now such an index or objects folder
    is not used (the first snapshot reads every file)."""

    from tests.unit.test_shadow_repo_hostile_git import blob, write_index
    from tests.unit.test_shadow_repo_seed import GIT_ENV

    outside = tmp_path / "outside.txt"
    outside.write_text("beside the workspace\n")
    (workspace / "a.txt").write_text("the user's a\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "c"]):
        subprocess.run(["git", *args], cwd=workspace, env=GIT_ENV, check=True, capture_output=True)
    write_index(workspace, [(b"a.txt", workspace / "a.txt", blob(workspace, b"the user's a\n")),
                            (b"../outside.txt", outside, blob(workspace, b"planted\n"))])
    os.mkfifo(workspace / ".git" / "objects" / "info" / "commit-graph")
    await _start(lsp, model, [shell("echo agent > a.txt && echo new > new.txt"), DONE])
    result = await lsp.command("tunacode.request", {"prompt": "go"})
    assert result["stopReason"] == "end_turn"
    assert result["changedFiles"] == ["a.txt", "new.txt"]
    rewound = await lsp.command("tunacode.session.rewind", {"sessionId": result["sessionId"], "requestId": result["requestId"]})
    assert sorted(rewound["restored"]) == ["a.txt", "new.txt"]
    assert (workspace / "a.txt").read_text() == "the user's a\n" and not (workspace / "new.txt").exists()
    assert outside.read_text() == "beside the workspace\n"
