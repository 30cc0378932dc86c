"""Hooks as real subprocesses: the JSON on stdin, the three kinds of exit, and a hook that
hangs, floods or outlives an abort is a notice, never a wedged request."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from tunacode_lsp.agent.hooks import HookRunner
from tunacode_lsp.agent.hooks_config import HookDef, parse_hooks
from tunacode_lsp.tools.settings import ToolSettings


def runner(tmp_path: Path, *hooks: HookDef, signal: asyncio.Event | None = None) -> HookRunner:
    return HookRunner(
        hooks, tmp_path, ToolSettings(), session_id="s1", request_id="r1", abort_signal=signal or asyncio.Event()
    )


async def test_the_hook_gets_the_call_as_json_and_its_context_goes_to_the_model(tmp_path: Path) -> None:
    hook = HookDef("preToolUse", "cat > seen.json; echo '{\"context\": \"remember the style guide\"}'", "bash")
    outcome = await runner(tmp_path, hook).run("preToolUse", tool="bash", args={"command": "ls"})
    assert not outcome.blocked and outcome.context == ["remember the style guide"] and outcome.notices == []
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen == {"event": "preToolUse", "sessionId": "s1", "requestId": "r1", "tool": "bash", "args": {"command": "ls"}}


async def test_exit_2_blocks_with_stderr_as_the_reason(tmp_path: Path) -> None:
    hooks = (HookDef("preToolUse", "echo 'no pushes on Fridays' >&2; exit 2"), HookDef("preToolUse", "touch second"))
    outcome = await runner(tmp_path, *hooks).run("preToolUse", tool="bash", args={})
    assert outcome.blocked and outcome.reason == "no pushes on Fridays"
    assert not (tmp_path / "second").exists()  # the first block ends it


async def test_other_exits_are_a_notice_and_the_request_goes_on(tmp_path: Path) -> None:
    outcome = await runner(tmp_path, HookDef("stop", "echo oops >&2; exit 3")).run("stop")
    assert not outcome.blocked and "exited with code 3: oops" in outcome.notices[0]


async def test_the_matcher_chooses_the_tools(tmp_path: Path) -> None:
    r = runner(tmp_path, HookDef("postToolUse", "exit 2", "mcp__github__*"))
    assert not (await r.run("postToolUse", tool="bash", args={}, result="x")).blocked
    assert (await r.run("postToolUse", tool="mcp__github__merge", args={}, result="x")).blocked


async def test_a_hook_that_hangs_is_killed_at_its_timeout(tmp_path: Path) -> None:
    started = time.monotonic()
    outcome = await runner(tmp_path, HookDef("preToolUse", "sleep 60 & sleep 60", timeout=0.5)).run("preToolUse", tool="x")
    assert time.monotonic() - started < 10
    assert "longer than its timeout of 0.5 s" in outcome.notices[0] and not outcome.blocked


async def test_a_hook_that_prints_megabytes_is_stopped(tmp_path: Path) -> None:
    started = time.monotonic()
    outcome = await runner(tmp_path, HookDef("preToolUse", "yes xxxxxxxxxxxxxxxx", timeout=30)).run("preToolUse", tool="x")
    assert time.monotonic() - started < 10
    assert "printed more than" in outcome.notices[0]


async def test_an_abort_kills_the_hook(tmp_path: Path) -> None:
    signal = asyncio.Event()
    r = runner(tmp_path, HookDef("preToolUse", "touch started; sleep 60", timeout=120), signal=signal)
    task = asyncio.ensure_future(r.run("preToolUse", tool="x"))
    for _ in range(500):
        if (tmp_path / "started").exists():
            break
        await asyncio.sleep(0.01)  # polling a file the hook writes (the condition), bounded
    signal.set()
    outcome = await asyncio.wait_for(task, 10)
    assert "the request was stopped" in outcome.notices[0]


async def test_a_hook_sees_no_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-for-the-model-only")
    outcome = await runner(tmp_path, HookDef("stop", "env > env.txt")).run("stop")
    assert outcome.notices == []
    assert "sk-secret" not in (tmp_path / "env.txt").read_text()


def test_bad_hook_entries_are_reported() -> None:
    hooks, problems = parse_hooks(
        {"preToolUse": [{"command": "ok"}, {"command": ""}, {"command": "x", "timeout": 0}, {"cmd": "x"}], "onSave": []},
        "user",
    )
    assert [h.command for h in hooks] == ["ok"]
    assert len(problems) == 4
