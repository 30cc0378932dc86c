"""VS Code e2e (code-server + Chromium): conversation control and issue 31's follow-ups.

One code-server session (client-vscode/test/e2e/control-scenario.mjs): Enter while the agent
works steers it (the steer shows in the turn from `user_message`, and the model's next call
has it after the tool result); Alt+Enter and Queue queue prompts as removable pending rows,
a removed one never runs, the other runs next; Edit and resend rewinds and puts the prompt
back; an agent edit of a buffer with unsaved changes opens as a read-only diff with no false
toast and is undone in the buffer; a refused key (HTTP 401) shows the auth buttons; approvals
(a long command wrapped at spaces, a diff without headers, cards closed once answered, no
todo_write card); the sessions list (ages, search, one menu, a delete dialog naming the
session); `@` file completion. The panel is 300 px wide; screenshots in both themes.
"""

from __future__ import annotations

import pytest
from tests.clients.test_vscode_e2e import REPO, _run_steps

pytestmark = pytest.mark.vscode


@pytest.mark.timeout(480)
def test_steer_queue_edit_unsaved_buffer_and_errors_in_real_vscode() -> None:
    summary, report = _run_steps("control", REPO / "test-artifacts" / "vscode-control", [
        "open the TunaCode panel at 300 px",
        "typing while the agent works: Enter steers; the steer shows in the turn when the model saw it",
        "Alt+Enter and Queue queue prompts as pending rows; one is removed; the other runs next",
        "Edit and resend: the rewind cuts back to before the prompt and puts it in the box",
        "an agent edit of a buffer with unsaved changes: diff and full output read-only, Undo in the buffer",
        "a refused API key: the error says so, with Open Settings and Set API Key and no Retry",
        "approvals at 300 px: the command wraps at spaces and is not repeated, the diff has no headers, answered cards close, no todo_write card",
        "↓ Latest at 300 px: scrolled up, it sits below the conversation over no row, and jumps to the bottom",
        "sessions at 300 px: two-line titles, ages that do not wrap, a search box, one ⋯ menu per row; delete names the session",
        "@ offers the workspace's files; Tab takes one",
    ])
    assert abs(summary["steps"][0]["sidebarWidth"] - 300) <= 4, report
    assert summary["steps"][2]["modelCalls"] == 2, report
    assert summary["steps"][6]["question"] == "Allow this command?", report
    assert "Delete the session" in summary["steps"][8]["deleteDialog"], report
    assert summary["steps"][9]["prompt"] == "compare @calc.py ", report
    assert len(summary["screenshots"]) == 22, report
