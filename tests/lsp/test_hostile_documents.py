"""Hostile session documents (issue 12, bug 9): checked completely before anything is
written; -32602 naming the field; the store unchanged; later requests unaffected."""

from __future__ import annotations

import pytest

from tests.conftest import scripted_options

DONE = {"steps": [{"text": "Done."}]}


async def _error(awaitable) -> tuple[int | None, str]:
    with pytest.raises(Exception) as info:
        await awaitable
    return getattr(info.value, "code", None), str(info.value)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        pytest.param({"last_modified": "9999-12-31T23:59:59Z"}, "last_modified", id="year-9999"),
        pytest.param({"created_at": "9999-12-31T23:59:59"}, "created_at", id="created-9999"),
        pytest.param({"last_modified": "2026-01-01T00:00:00+25:00"}, "last_modified", id="offset-out-of-range"),
        pytest.param({"created_at": "0001-01-01T00:00:00+01:00"}, "created_at", id="offset-off-the-calendar"),
        pytest.param({"session_total_usage": {"input_tokens": 2**64}}, "session_total_usage.input_tokens", id="input-2**64"),
        pytest.param({"total_tokens": 2**64}, "total_tokens", id="total-2**64"),
    ],
)
async def test_hostile_document_is_refused_naming_the_field(lsp, model, change, field):
    model.set_script([DONE, DONE])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    document = await lsp.command("tunacode.session.export", {"sessionId": result["sessionId"]})
    before = await lsp.command("tunacode.session.list", {})
    code, message = await _error(lsp.command("tunacode.session.import", {"document": dict(document, **change)}))
    assert code == -32602 and field in message, message
    assert await lsp.command("tunacode.session.list", {}) == before
    again = await lsp.command("tunacode.request", {"prompt": "again", "sessionId": result["sessionId"]})
    assert again["stopReason"] == "end_turn"
    listed = await lsp.command("tunacode.session.list", {})
    assert all(s["modifiedAt"].startswith("20") for s in listed["sessions"]), listed


_CALL = {"role": "assistant", "content": [{"type": "tool_call", "id": "c1", "name": "bash", "arguments": {}}],
         "stop_reason": "tool_use"}


def _result(details: dict) -> dict:
    return {"role": "tool_result", "tool_call_id": "c1", "tool_name": "bash",
            "content": [{"type": "text", "text": "x"}], "details": details, "is_error": False}


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param([{"role": "user", "content": [{"type": "text", "text": 5}]}], id="text-not-a-string"),
        pytest.param([_CALL, _result({"outcome": {"status": "completed", "ticks": {"pending": 10**400}}})], id="int-past-64-bits"),
    ],
)
async def test_a_crafted_imported_document_still_loads_its_events(lsp, model, extra):
    """A CI artifact imported on a laptop with odd parts (a block whose text is not a string, an
    integer past 64 bits in a kept outcome): refused with -32602 naming the field and the store
    unchanged, or imported and its events load. The 64-bit case was an internal error (-32603,
    a traceback) from the row encoder."""
    model.set_script([DONE])
    await lsp.start(init_options=scripted_options(model))
    result = await lsp.command("tunacode.request", {"prompt": "hi"})
    document = await lsp.command("tunacode.session.export", {"sessionId": result["sessionId"]})
    key = "messages" if "messages" in document else "history"
    before = await lsp.command("tunacode.session.list", {})
    try:
        imported = await lsp.command("tunacode.session.import", {"document": dict(document, **{key: document[key] + extra})})
    except Exception as exc:  # noqa: BLE001 - refusing it at the door is as good
        assert getattr(exc, "code", None) == -32602 and "messages" in str(exc), exc
        assert await lsp.command("tunacode.session.list", {}) == before
        return
    got = await lsp.command("tunacode.session.get", {"sessionId": imported["sessionId"], "events": True})
    assert any(event.get("type") == "text_delta" for event in got["events"]), got
