"""VS Code e2e (code-server + Chromium): the first run without a usable model (issue 31 item 8).

One code-server session (client-vscode/test/e2e/firstrun-scenario.mjs) whose model is a real
provider's with no key in the server's environment: the empty panel says "Set up a model to
start", names the model and the missing variable, offers Set API Key and Choose model, and
Send is disabled (Enter sends nothing); Set API Key (the model's variable offered first, a
password box) keeps the key in SecretStorage and restarts the server, and Send is enabled.
Nothing is sent to the model. The panel is 300 px wide; screenshots in both themes.
"""

from __future__ import annotations

import pytest
from tests.clients.test_vscode_e2e import REPO, _run_steps

pytestmark = pytest.mark.vscode


@pytest.mark.timeout(480)
def test_first_run_without_a_key_then_set_api_key_in_real_vscode() -> None:
    summary, report = _run_steps("firstrun", REPO / "test-artifacts" / "vscode-firstrun", [
        "open the TunaCode panel at 300 px",
        "no key for the model: the first-run view names the model and the variable, Send is disabled",
        "Set API Key: the key goes to SecretStorage, the server restarts, Send is enabled",
    ])
    assert abs(summary["steps"][0]["sidebarWidth"] - 300) <= 4, report
    said = summary["steps"][1]["text"]
    assert "openai:gpt-4.1" in said and "OPENAI_API_KEY" in said, report
    assert len(summary["screenshots"]) == 4, report
