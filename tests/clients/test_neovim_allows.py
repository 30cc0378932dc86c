"""Session-wide allows in a real headless Neovim 0.11 with the plugin, the real server and the
scripted model (nvim_allows_driver.lua): an allow shows in the answer buffer and the statusline,
:TunaAllows lists it and :TunaAllows revoke ends it (the next bash call is asked again); the
approval float's footer fits a narrow screen whole (issue 32, items 1 and 4)."""

from __future__ import annotations

import pytest
from tests.clients.test_neovim import nvim, run_nvim  # noqa: F401 (a fixture)
from tests.clients.test_neovim_edits import HERE

from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

pytestmark = pytest.mark.neovim


def bash(command: str, answer: str) -> list[dict]:
    return [{"steps": [{"tool_call": {"name": "bash", "arguments": {"command": command}}}]}, {"text": answer}]


def test_session_allow_is_shown_listed_and_revoked(nvim, tmp_path, workspace, home):  # noqa: F811
    script = {"turns": [*bash("echo one", "1"), *bash("echo two", "2"), *bash("echo three", "3")]}
    with ScriptedModelServer(script) as model:
        seen = run_nvim(nvim, HERE / "nvim_allows_driver.lua", tmp_path=tmp_path, workspace=workspace, home=home,
                        model=model)
        requests = model.requests
    first = seen["after_first"]
    assert first["asked"] == ["bash"]
    assert first["statusline"].endswith("| allowed: bash"), first
    assert "[note] bash is allowed for the rest of this session: not asked again (:TunaAllows revoke ends it)" \
        in first["lines"], first["lines"]
    assert seen["after_second"]["asked"] == ["bash"]  # request 2: not asked
    assert "two\\n[exit code 0]" in str(requests[3]["messages"][-1])  # it ran
    assert seen["listed"] == "TunaCode: allowed for this session: bash (:TunaAllows revoke)"
    revoked = seen["revoked"]
    assert revoked["notice"] == "TunaCode: revoked: bash; asked again from its next call", revoked
    assert "allowed" not in revoked["statusline"] and revoked["running"] is True, revoked  # the server stays
    assert "[note] revoked: bash; asked again from its next call" in revoked["lines"]
    third = seen["after_third"]
    assert third["asked"] == ["bash", "bash"], third  # asked again, and g3 denied it
    assert "declined" in str(requests[5]["messages"][-1]), requests[5]["messages"][-1]
    assert seen["third"]["sessionId"] == seen["first"]["sessionId"]  # the same session went on
    narrow = seen["narrow"]
    assert narrow["width"] <= 26 and len(narrow["footer"]) <= narrow["width"], narrow
    assert all(key in narrow["footer"] for key in ("g1", "g2", "g3")), narrow
