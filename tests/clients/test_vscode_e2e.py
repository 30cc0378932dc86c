"""End-to-end test of the VS Code extension in a real VS Code (code-server + Chromium).

Packages the extension from this checkout, then runs client-vscode/test/e2e/run-e2e.mjs
under Node 24: it installs the .vsix into a fresh code-server, drives the TunaCode panel
with playwright-core against the scripted model, and writes a JSON summary, screenshots
and logs to test-artifacts/vscode/. The tools come from client-vscode/scripts/setup-e2e.sh;
without them this test skips, except in CI (CI=true), where it fails.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "client-vscode"
TOOLS_ENV = REPO / ".tools" / "vscode-e2e.env"
ARTIFACTS = REPO / "test-artifacts" / "vscode"
SETUP = "bash client-vscode/scripts/setup-e2e.sh"

pytestmark = pytest.mark.vscode


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _missing_setup(reason: str) -> None:
    message = f"VS Code e2e setup missing: {reason}; run `{SETUP}`"
    if _in_ci():
        pytest.fail(message)
    pytest.skip(message)


def _tools() -> dict[str, str]:
    if not TOOLS_ENV.exists():
        _missing_setup(f"{TOOLS_ENV.relative_to(REPO)} not found")
    tools = dict(
        line.split("=", 1) for line in TOOLS_ENV.read_text().splitlines() if "=" in line
    )
    for key in ("NODE24", "CODE_SERVER", "CHROMIUM"):
        if not Path(tools.get(key, "")).exists():
            _missing_setup(f"{key} ({tools.get(key)}) does not exist")
    if not (CLIENT / "node_modules" / "playwright-core").is_dir():
        _missing_setup("client-vscode/node_modules is not installed")
    return tools


def _run(cmd: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess[str]:
    """Runs cmd in its own process group and kills the whole group on a timeout."""
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True, **kwargs,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{cmd[0]} timed out after {timeout} s:\n{out[-4000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, None)


def _run_scenario(scenario: str, artifacts: Path) -> tuple[dict, str]:
    """Packages the extension, runs one scenario of run-e2e.mjs; returns its summary."""
    tools = _tools()

    packaged = _run(["npm", "run", "--silent", "package"], timeout=180, cwd=CLIENT)
    assert packaged.returncode == 0, f"vsce package failed:\n{packaged.stdout[-4000:]}"
    assert (CLIENT / "tunacode-vscode.vsix").is_file()

    summary_file = artifacts / "summary.json"
    run = _run(
        [
            tools["NODE24"],
            str(CLIENT / "test" / "e2e" / "run-e2e.mjs"),
            "--python", sys.executable,
            "--artifacts", str(artifacts),
            "--summary", str(summary_file),
            "--scenario", scenario,
        ],
        timeout=420,
        cwd=CLIENT,
    )
    assert summary_file.is_file(), f"the e2e run wrote no summary:\n{run.stdout[-6000:]}"
    summary = json.loads(summary_file.read_text())
    report = f"{run.stdout[-6000:]}\nsummary: {json.dumps(summary, indent=2)}"
    assert run.returncode == 0, report
    assert summary["ok"] is True, report
    assert summary["scenario"] == scenario, report
    assert summary["cleanup"] == {"codeServerGone": True, "modelGone": True, "browserClosed": True}, report
    for shot in summary["screenshots"]:
        assert Path(shot).is_file() and Path(shot).stat().st_size > 0, shot
    return summary, report


def _run_steps(scenario: str, artifacts: Path, names: list[str]) -> tuple[dict, str]:
    """Runs one scenario (see _run_scenario): its steps are `names`, in order, each passed."""
    summary, report = _run_scenario(scenario, artifacts)
    assert [step["name"] for step in summary["steps"]] == names, report
    assert all(step["ok"] for step in summary["steps"]), report
    return summary, report


@pytest.mark.timeout(480)
def test_panel_asks_stops_and_resumes_in_real_vscode() -> None:
    summary, report = _run_steps("main", ARTIFACTS, [
        "open the TunaCode panel",
        "ask: streamed answer and a completed tool card",
        "the model menu: real models with the one in use first, written to user settings only",
        "a file link in the answer opens the file at the line",
        "show a tool's full output in an editor tab",
        "Up in the prompt recalls the last prompt",
        "a setting changed mid-request applies live; stop with the keybinding from the editor",
        "an approval waits in the card; the status bar shows it; deny shows denied",
        "after a window reload the panel restores the last session",
        "stop a slow answer: cancelled within a second",
        "resume the earlier session and see its history",
        "restart the server from the command palette",
        "a broken server command: one clear message with Retry, the prompt kept",
    ])
    assert 0 <= summary["stopToCancelledMs"] < 1000, report


@pytest.mark.timeout(480)
def test_changes_diff_undo_and_rewind_in_real_vscode() -> None:
    """An agent edit of two files; the Changes list, a diff, Undo of one file (its bytes
    back), Rewind with a conflict (someone else's edit) and Overwrite: every byte back."""
    summary, report = _run_steps("changes", REPO / "test-artifacts" / "vscode-changes", [
        "open the TunaCode panel",
        "an agent edit of two files: the turn says 2 files changed",
        "the Changes list shows a file's diff in VS Code's diff editor",
        "Undo of one file puts its exact bytes back; the other keeps the edit",
        "Rewind to before this prompt: a conflict names the file, Overwrite restores every byte",
        "Ask about Selection from the editor's context menu sends the selection and an @file mention",
        "the lightbulb's TunaCode: Explain puts the prompt and the selection in the panel to edit",
        "Tab from the panel's top reaches the prompt before any link of the conversation; a pasted image and a dropped file become chips",
        "an edit of a buffer with unsaved changes: Changes says unsaved, Rewind gives the buffer its text back",
        "the footer shows the MCP servers' state from tunacode.status, why one failed, and lists them when clicked",
        "Undo of one hunk: its old lines back, the file's other change kept; a hunk edited since is refused",
    ])
    assert "b.py" in summary["steps"][4]["conflictText"], report
    assert summary["steps"][6]["prompt"].startswith("Explain"), report
    assert summary["steps"][7]["tabOrder"][-1] == "prompt", report
    assert summary["steps"][9]["mcp"] == "MCP: 1 ready · 1 failed", report
    assert summary["steps"][9]["mcpReason"].startswith("broken: "), report
    assert summary["steps"][10]["hunkLabels"] == ["line 2: −1 +1", "line 18: −1 +2"], report
    assert len(summary["screenshots"]) == 12, report
