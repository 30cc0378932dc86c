"""Prompt commands over ACP: offered in available_commands_update after /changes and /rewind,
and `/name args` runs the expanded body. The SDK's own client, a real subprocess."""

from __future__ import annotations

from pathlib import Path

from acp import text_block

from tests.acp.harness import acp_agent, scripted_settings
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer


async def test_project_and_user_commands_are_offered_and_run(workspace: Path, home: Path, model: ScriptedModelServer) -> None:
    (workspace / ".tunacode" / "commands").mkdir(parents=True)
    (workspace / ".tunacode" / "commands" / "review.md").write_text(
        "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1 carefully. All: $ARGUMENTS"
    )
    (workspace / ".tunacode" / "commands" / "rewind.md").write_text("a project cannot replace a built-in")
    (home / "config" / "tunacode" / "commands").mkdir(parents=True)
    (home / "config" / "tunacode" / "commands" / "hello.md").write_text("Say hello")
    model.set_script([{"text": "Reviewed."}])
    async with acp_agent(workspace, home, scripted_settings(model)) as agent:
        session_id = await agent.start_session(workspace)
        client = agent.client
        await client.wait_for(lambda: bool(client.of_kind("available_commands_update", session_id)))
        [offer] = client.of_kind("available_commands_update", session_id)
        assert [c.name for c in offer.available_commands] == ["changes", "rewind", "hello", "review"]
        review = offer.available_commands[3]
        assert review.description == "Review a file" and review.input.root.hint == "<file>"

        response = await agent.conn.prompt(session_id=session_id, prompt=[text_block("/review calc.py twice")])
        assert response.stop_reason == "end_turn"
        sent = [m for m in model.requests[-1]["messages"] if m["role"] == "user"][-1]["content"]
        text = sent if isinstance(sent, str) else sent[-1]["text"]
        assert text == "Review calc.py carefully. All: calc.py twice"
