"""Red team (v3): a steer that arrives while the model writes its last answer makes the loop
call the model once more; that call was never checked against `maxCost` (nor `maxTurns`):
both checks ran only after a turn with tool results. And after a turn without tools the loop
asks before the event handler has counted that call's cost, so the spent amount lagged one
call behind."""

from __future__ import annotations

from tests.conftest import scripted_options

STEER = "one more thing"


def _is(type_: str, **fields):
    return lambda e: e["type"] == type_ and all(e.get(k) == v for k, v in fields.items())


async def _steer_during_last_answer(lsp, model, limits: dict) -> dict:
    model.set_script([
        {"steps": [{"tool_call": {"name": "list_files", "arguments": {}}}, {"usage": {"cost": 0.6}}]},
        {"steps": [{"text": "Done."}, {"stall": 3}, {"usage": {"cost": 0.6}}]},
        {"steps": [{"text": "Also done."}, {"usage": {"cost": 0.6}}]},
    ])
    await lsp.start(init_options=scripted_options(model))
    session = await lsp.command("tunacode.session.new")
    pending = lsp.send_command("tunacode.request", {"prompt": "explore", "sessionId": session["sessionId"], **limits})
    await lsp.wait_for_event(_is("text_delta", text="Done."))
    assert await lsp.command("tunacode.steer", {"sessionId": session["sessionId"], "text": STEER}) == {"accepted": True}
    return await pending


async def test_a_steer_after_the_last_answer_does_not_pass_max_cost(lsp, model):
    result = await _steer_during_last_answer(lsp, model, {"maxCost": 1.5})
    # 1.2 spent, and the steer's call (predicted 0.6) would pass 1.5
    assert result["stopReason"] == "max_cost", (result["usage"]["cost"], len(model.requests))  # was end_turn at 1.8
    assert len(model.requests) == 2 and result["usage"]["cost"] <= 1.5


async def test_a_steer_after_the_last_answer_does_not_pass_max_turns(lsp, model):
    result = await _steer_during_last_answer(lsp, model, {"maxTurns": 2})
    assert result["stopReason"] == "max_turns", result
    assert len(model.requests) == 2
