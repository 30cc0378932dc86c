"""The shell sandbox (bubblewrap) and escapes: every attack of issue 13 section 1, with the real
bwrap and real processes. Nothing a command starts outlives its call, sandboxed or not."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tunacode_lsp.tools import ToolCancelled, ToolError, ToolSettings
from tunacode_lsp.tools.sandbox import sandbox_state

from .conftest import call, text_of, tools_for
from .test_tool_bash import wait_gone

HAVE_SANDBOX = sandbox_state("auto").active
needs_bwrap = pytest.mark.skipif(not HAVE_SANDBOX, reason="bwrap cannot run here (the test set-up installs it)")


def test_the_test_machine_has_a_working_sandbox():
    """CI installs bubblewrap; the sandbox tests below must not silently skip there."""
    if os.environ.get("CI"):
        assert HAVE_SANDBOX, sandbox_state("auto").reason


@needs_bwrap
async def test_sandboxed_by_default_and_the_rest_is_read_only(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    tools = tools_for(ws)
    result = await call(tools["bash"], {"command": f"echo ok > inside.txt; echo bad > {outside} ; echo bad > /etc/tunacode-test; echo done"})
    assert result.details["sandboxed"] is True
    assert (ws / "inside.txt").read_text() == "ok\n"
    assert not outside.exists() and not Path("/etc/tunacode-test").exists()
    assert "Read-only file system" in text_of(result)


@needs_bwrap
async def test_private_tmp_and_pid_namespace(ws: Path) -> None:
    marker = Path("/tmp") / f"tunacode-marker-{os.getpid()}"
    marker.write_text("server's /tmp")
    try:
        tools = tools_for(ws)
        result = await call(tools["bash"], {"command": f"cat {marker} 2>&1; ls /proc | grep -c '^[0-9]'"})
        text = text_of(result)
        assert "server's /tmp" not in text and "No such file" in text
        assert int(text.split()[-4]) <= 5  # only the sandbox's own processes
    finally:
        marker.unlink()


@needs_bwrap
async def test_keys_are_not_readable_through_proc(ws: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proc-secret-123456")
    tools = tools_for(ws)
    result = await call(tools["bash"], {"command": "cat /proc/$PPID/environ /proc/1/environ 2>&1 | tr '\\0' '\\n'; echo end"})
    assert "sk-proc-secret" not in text_of(result)


@needs_bwrap
async def test_network_off(ws: Path) -> None:
    with open("/proc/net/dev") as handle:
        host = [line.split(":")[0].strip() for line in handle.readlines()[2:]]
    assert any(name != "lo" for name in host), "this machine has a network interface"
    on = await call(tools_for(ws)["bash"], {"command": "cat /proc/net/dev"})
    off = await call(tools_for(ws, ToolSettings(shell_network=False))["bash"], {"command": "cat /proc/net/dev"})
    assert any(name in text_of(on) for name in host if name != "lo")  # on by default
    assert not any(name in text_of(off) for name in host if name != "lo") and "lo:" in text_of(off)


@pytest.mark.parametrize("sandbox", ["auto", "off"])
@pytest.mark.parametrize(
    "escape",
    [
        "sleep 300 &",
        "nohup sleep 300 > /dev/null 2>&1 &",
        "setsid sleep 300 > /dev/null 2>&1 < /dev/null &",
        "(setsid bash -c 'sleep 300 & echo $! > /dev/null' &) ; sleep 0.2",
    ],
)
async def test_nothing_outlives_the_call(ws: Path, sandbox: str, escape: str) -> None:
    if sandbox == "auto" and not HAVE_SANDBOX:
        pytest.skip("no sandbox")
    tools = tools_for(ws, ToolSettings(shell_sandbox=sandbox))
    tag = f"tunacode-escape-{os.getpid()}-{abs(hash((sandbox, escape)))}"
    # the escapee notes that it started, then becomes a sleep we can find by its name
    named = 'bash -c "echo up >> started; exec -a ' + tag + ' sleep 300"'
    wait_started = "for i in $(seq 250); do [ -s started ] && break; sleep 0.02; done"
    await call(tools["bash"], {"command": f"{escape.replace('sleep 300', named)}\n{wait_started}"})
    assert (ws / "started").exists(), "the escapee never ran"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 3
    while _pids_named(tag) and loop.time() < deadline:
        await asyncio.sleep(0.02)
    assert _pids_named(tag) == [], f"{escape!r} survived its call ({sandbox})"


@pytest.mark.parametrize("sandbox", ["auto", "off"])
async def test_nothing_outlives_an_abort(ws: Path, sandbox: str) -> None:
    if sandbox == "auto" and not HAVE_SANDBOX:
        pytest.skip("no sandbox")
    tools = tools_for(ws, ToolSettings(shell_sandbox=sandbox))
    tag = f"tunacode-abort-{os.getpid()}-{sandbox}"
    signal = asyncio.Event()
    command = f"setsid bash -c 'exec -a {tag} sleep 300' < /dev/null > /dev/null 2>&1 & echo started; sleep 300"
    task = asyncio.ensure_future(call(tools["bash"], {"command": command}, signal))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while not _pids_named(tag) and loop.time() < deadline:
        await asyncio.sleep(0.02)
    assert _pids_named(tag)
    signal.set()
    with pytest.raises(ToolCancelled):
        await asyncio.wait_for(task, 5)
    for pid in _pids_named(tag):
        assert await wait_gone(pid, 3.0)


async def test_required_without_a_sandbox_refuses(ws: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no bwrap to be found
    tools = tools_for(ws, ToolSettings(shell_sandbox="required"))
    with pytest.raises(ToolError, match="sandbox is required"):
        await call(tools["bash"], {"command": "touch ran"})
    assert not (ws / "ran").exists()


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("echo hi" + " " * 400 + "; touch HIDDEN", None),  # shown whole: allowed
        ("echo " + "x" * 5000, "characters long"),
        ("echo hi\r; touch HIDDEN", "U+000D"),
        ("echo hi\u202e; touch HIDDEN", "U+202E"),
    ],
)
async def test_commands_the_user_could_not_see_whole_are_refused(ws: Path, command: str, why: str | None) -> None:
    tools = tools_for(ws)
    if why is None:
        await call(tools["bash"], {"command": command})
        assert (ws / "HIDDEN").exists()
        return
    with pytest.raises(ToolError, match=re.escape(why)):
        await call(tools["bash"], {"command": command})
    assert not (ws / "HIDDEN").exists()


def _pids_named(tag: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if handle.read().split(b"\0")[0] == tag.encode():
                        with open(f"/proc/{entry}/stat") as stat:
                            if stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                                found.append(int(entry))
            except OSError:
                continue
    return found


SCRUB_CHECK = """
import ctypes, os, subprocess, sys
from tunacode_lsp.tools.sandbox import harden_process
harden_process()
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
child = subprocess.run([sys.executable, "-c", "import os; print(os.environ['OPENAI_API_KEY'])"], capture_output=True, text=True)
print(os.environ["OPENAI_API_KEY"], libc.getenv(b"OPENAI_API_KEY").decode(), child.stdout.strip())
sys.stdout.flush()
with open(f"/proc/{os.getpid()}/environ", "rb") as handle:
    sys.stdout.buffer.write(handle.read())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_the_keys_leave_the_environment_block_but_not_the_process() -> None:
    """/proc/<server>/environ shows no key (to root too); the server itself still has them."""

    key = "sk-scrub-secret-0123456789"
    env = {**os.environ, "OPENAI_API_KEY": key, "PYTHONPATH": str(Path(__file__).parents[3] / "server")}
    done = subprocess.run([sys.executable, "-c", SCRUB_CHECK], capture_output=True, env=env, check=True)
    first, _, environ = done.stdout.partition(b"\n")
    assert first.decode().split() == [key, key, key]  # os.environ, C getenv, a child's inherited environment
    assert b"OPENAI_API_KEY=" in environ and key.encode() not in environ and b"PATH=" in environ
