"""bash: real subprocesses in the workspace; abort, timeout, truncation, secrets."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path

import pytest

from tunacode_lsp.tools import ToolCancelled, ToolError, ToolSettings
from tunacode_lsp.tools import bash as bash_module

from .conftest import call, text_of, tools_for


def live_members(pgid: int) -> list[int]:
    """Processes of a process group that are not zombies, from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state not in ("Z", "X"):
            members.append(int(entry))
    return members


async def wait_group_gone(pgid: int, timeout: float = 5.0) -> bool:
    # A bounded poll of /proc: nothing notifies a process group's end (its members are not
    # our children, and a pidfd watches one pid, not a group).
    deadline = time.monotonic() + timeout
    while live_members(pgid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def is_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


async def wait_gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout  # a bounded poll of /proc, as above
    while is_alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


class StartWatcher:
    """on_update callback that notes the shell's pid (first output word after 'started')."""

    def __init__(self, signal: asyncio.Event | None = None) -> None:
        self.signal = signal
        self.pid: int | None = None
        self.started = asyncio.Event()
        self.updates: list[str] = []

    def __call__(self, partial) -> None:
        text = text_of(partial)
        self.updates.append(text)
        if self.pid is None and "started" in text:
            self.pid = int(text.split("started", 1)[1].split()[0])
            self.started.set()
            if self.signal is not None:
                self.signal.set()


async def test_output_and_exit_code_are_reported_not_raised(tools) -> None:
    result = await call(tools["bash"], {"command": "echo out; echo err >&2; exit 3"})
    assert text_of(result) == "out\nerr\n[exit code 3]"
    assert result.details["exit_code"] == 3
    assert result.details["truncated"] is False


async def test_runs_in_the_workspace_or_the_given_cwd(ws: Path, tools) -> None:
    (ws / "sub").mkdir()
    assert text_of(await call(tools["bash"], {"command": "pwd"})) == f"{ws}\n[exit code 0]"
    result = await call(tools["bash"], {"command": "pwd", "cwd": "sub"})
    assert text_of(result) == f"{ws / 'sub'}\n[exit code 0]"
    assert result.details["cwd"] == "sub"


async def test_cwd_must_be_an_existing_folder(ws: Path, tools) -> None:
    (ws / "f.txt").write_text("")
    with pytest.raises(ToolError, match="not a folder"):
        await call(tools["bash"], {"command": "true", "cwd": "f.txt"})


async def test_stdin_is_empty(tools) -> None:
    result = await call(tools["bash"], {"command": "cat; echo done"})
    assert text_of(result) == "done\n[exit code 0]"


async def test_no_output(tools) -> None:
    assert text_of(await call(tools["bash"], {"command": "true"})) == "(no output)\n[exit code 0]"


UNSANDBOXED = ToolSettings(shell_sandbox="off")


async def test_own_process_group(ws: Path) -> None:
    tools = tools_for(ws, UNSANDBOXED)
    result = await call(tools["bash"], {"command": "ps -o pgid= -p $$; echo $$"})
    pgid, pid = text_of(result).split()[:2]
    assert pgid == pid and int(pgid) != os.getpgid(0)


async def test_output_is_cut_in_the_middle_with_a_marker(ws: Path) -> None:
    tools = tools_for(ws, ToolSettings(max_output_chars=1000))
    result = await call(tools["bash"], {"command": "seq 1 20000"})
    text = text_of(result)
    total = len("".join(f"{i}\n" for i in range(1, 20001)))
    assert text.startswith("1\n2\n3\n")
    assert text.endswith("19999\n20000\n[exit code 0]")
    assert f"[... {total - 1000:,} bytes of output cut from the middle ...]" in text
    assert result.details["truncated"] is True and result.details["cut_bytes"] == total - 1000
    assert len(text) < 1200


async def test_timeout_kills_the_process_group(tools) -> None:
    watcher = StartWatcher()
    with pytest.raises(ToolError, match=r"timed out after 0.5 s.*Output so far:\nstarted"):
        await call(tools["bash"], {"command": "echo started $$; sleep 30", "timeout": 0.5}, None, watcher)
    assert watcher.pid is not None
    assert await wait_group_gone(watcher.pid)


async def test_timeout_above_the_maximum_is_refused(tools) -> None:
    with pytest.raises(ToolError, match="timeout"):
        await call(tools["bash"], {"command": "true", "timeout": 601})
    with pytest.raises(ToolError, match="timeout"):
        await call(tools["bash"], {"command": "true", "timeout": 0})


async def test_abort_kills_the_group_and_late_is_never_created(ws: Path, tools) -> None:
    signal = asyncio.Event()
    watcher = StartWatcher(signal)
    command = "echo started $$; sleep 30; touch late"
    with pytest.raises(ToolCancelled, match="cancelled by the user"):
        await asyncio.wait_for(call(tools["bash"], {"command": command}, signal, watcher), timeout=10)
    assert watcher.pid is not None
    assert await wait_group_gone(watcher.pid)
    assert not (ws / "late").exists()


async def test_cancelling_the_coroutine_kills_the_group(ws: Path, tools) -> None:
    watcher = StartWatcher()
    task = asyncio.ensure_future(call(tools["bash"], {"command": "echo started $$; sleep 30; touch late"}, None, watcher))
    await asyncio.wait_for(watcher.started.wait(), timeout=10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert watcher.pid is not None
    assert await wait_group_gone(watcher.pid)
    assert not (ws / "late").exists()


async def test_partial_output_is_streamed(tools) -> None:
    watcher = StartWatcher()
    await call(tools["bash"], {"command": "echo started $$"}, None, watcher)
    assert watcher.updates and "started" in watcher.updates[0]


async def test_background_child_holding_the_output_does_not_block(ws: Path, monkeypatch) -> None:
    monkeypatch.setattr(bash_module, "DRAIN_SECONDS", 0.2)
    tools = tools_for(ws, UNSANDBOXED)
    result = await asyncio.wait_for(call(tools["bash"], {"command": "sleep 30 & echo $!"}), timeout=10)
    child = int(text_of(result).split()[0])
    try:
        assert "Background processes are still running" in text_of(result)
        assert result.details["exit_code"] == 0
        assert await wait_gone(child), "the background child outlived its call"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, 9)


async def test_provider_keys_are_not_passed_on(tools, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-open")
    monkeypatch.setenv("TUNACODE_API_KEY", "tc-key")
    monkeypatch.setenv("PLAIN_SETTING", "plain")
    command = 'echo "[${OPENAI_API_KEY-unset}][${TUNACODE_API_KEY-unset}][${PLAIN_SETTING-unset}]"'
    result = await call(tools["bash"], {"command": command})
    assert text_of(result).splitlines()[0] == "[unset][unset][unset]"  # an allowlist: plain names too


async def test_provider_keys_are_passed_when_opted_in(ws: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-open")
    monkeypatch.setenv("TUNACODE_API_KEY", "tc-key")
    tools = tools_for(ws, ToolSettings(shell_inherit_secrets=True))
    result = await call(tools["bash"], {"command": 'echo "[$OPENAI_API_KEY][$TUNACODE_API_KEY]"'})
    assert text_of(result).splitlines()[0] == "[sk-open][tc-key]"


@pytest.mark.parametrize(("args", "field"), [({}, "command"), ({"command": ""}, "command"), ({"command": 1}, "command"),
                                             ({"command": "true", "env": {}}, "env")])  # fmt: skip
async def test_bad_arguments_name_the_field(tools, args: dict, field: str) -> None:
    with pytest.raises(ToolError, match=field):
        await call(tools["bash"], args)


async def test_a_nul_byte_in_the_command_is_a_tool_error(tools) -> None:
    with pytest.raises(ToolError, match="NUL byte"):
        await call(tools["bash"], {"command": "echo a\x00b"})
