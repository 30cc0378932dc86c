"""A long-running server does not collect zombies: bwrap's monitor exits before it reaps the
sandbox's init, which is then reparented to the server (a child subreaper); each confined rg
(grep, list_files) and each sandboxed command used to leave one, for the life of the server."""

from __future__ import annotations

import pytest

from tests.conftest import scripted_options
from tunacode_lsp.tools.sandbox import sandbox_state

ROUNDS = 4


def _sandbox_zombies(pid: int) -> list[int]:
    """The server's children that are zombies of a nested pid namespace (sandbox inits)."""

    found = []
    with open(f"/proc/{pid}/task/{pid}/children") as handle:
        children = [int(child) for child in handle.read().split()]
    for child in children:
        try:
            with open(f"/proc/{child}/status") as handle:
                fields = dict(line.split(":", 1) for line in handle.read().splitlines() if ":" in line)
        except OSError:
            continue
        if fields.get("State", "").strip().startswith("Z") and len(fields.get("NSpid", "").split()) > 1:
            found.append(child)
    return found


@pytest.mark.skipif(not sandbox_state("auto").active, reason="needs a working bubblewrap")
async def test_confined_searches_and_sandboxed_commands_leave_no_zombies(lsp, model, workspace):
    (workspace / "notes.txt").write_text("needle\n")
    turn = [
        {"steps": [{"tool_call": {"name": "grep", "arguments": {"pattern": "needle"}}}]},
        {"steps": [{"tool_call": {"name": "list_files", "arguments": {}}}]},
        {"steps": [{"tool_call": {"name": "bash", "arguments": {"command": "true"}}}]},
    ]
    model.set_script([*turn * ROUNDS, {"text": "done"}])
    await lsp.start(init_options=scripted_options(model, approval="auto", shellNetwork=False))
    result = await lsp.command("tunacode.request", {"prompt": "look"})
    assert result["stopReason"] == "end_turn" and result["turns"] == 3 * ROUNDS + 1
    assert lsp.client is not None and lsp.client._server is not None
    # at most the last tool's sandbox init, if it had not exited when that tool was reaped
    assert len(_sandbox_zombies(lsp.client._server.pid)) <= 1
