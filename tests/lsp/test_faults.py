"""Provider and tool faults through the real server and the scripted model.

Each fault comes after a first turn that ran a tool, and each ends the request with a clean
`stopReason` (and a message where it is an error); the next request in the same session
then works, and the model's input has every earlier tool call answered right after it.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import scripted_options
from tests.lsp.fault_checks import check_request_events, paired_call_ids, stored_messages

LIST = {"steps": [{"text": "Looking."}, {"tool_call": {"name": "list_files", "arguments": {}}}]}
DONE = {"steps": [{"text": "Done."}]}
HALF = {"text": "half an answer", "chunks": 2}

# name -> (the faulty turn, extra server options, words the error message must contain)
PROVIDER_FAULTS = {
    "http_500": (
        {"error": {"status": 500, "body": {"error": {"message": "upstream exploded"}}}},
        {"maxRetries": 0},
        ["HTTP 500", "upstream exploded"],
    ),
    "stall": ({"steps": [HALF, {"stall": 30}]}, {"streamReadTimeout": 1}, ["stalled", "1 s"]),
    "malformed_sse_json": ({"steps": [HALF, {"raw": "data: {\"choices\": [{\"delta\": \n\n"}]}, {}, ["malformed"]),
    "error_chunk_mid_stream": (
        {"steps": [HALF, {"raw": "data: {\"error\": {\"message\": \"overloaded mid-stream\"}}\n\n"}]},
        {},
        ["overloaded mid-stream"],
    ),
}


async def _next_request_works(lsp, model, session_id: str, calls_before: int) -> dict:
    result = await lsp.command("tunacode.request", {"prompt": "try again", "sessionId": session_id})
    assert result["stopReason"] == "end_turn" and result["text"] == "Done."
    messages = model.requests[-1]["messages"]
    assert len(paired_call_ids(messages)) == calls_before
    roles = [m["role"] for m in messages]
    assert roles[0] == "system" and roles[-1] == "user" and "try again" in messages[-1]["content"]
    return result


@pytest.mark.parametrize("fault", sorted(PROVIDER_FAULTS))
async def test_provider_fault_ends_cleanly_and_the_session_goes_on(lsp, model, home, fault):
    turn, options, words = PROVIDER_FAULTS[fault]
    model.set_script([LIST, turn, DONE])
    await lsp.start(init_options=scripted_options(model, **options))

    result = await lsp.command("tunacode.request", {"prompt": "look around"})

    assert result["stopReason"] == "error", result
    assert all(word in result["error"]["message"] for word in words), result["error"]
    assert len(model.requests) == 2  # not retried: content had arrived, or retries are off
    assert [c["status"] for c in result["toolCalls"]] == ["completed"]
    events = lsp.events_of(result["requestId"])
    check_request_events(events, result["sessionId"], result["requestId"])
    assert events[-1]["stopReason"] == "error" and events[-1]["error"] == result["error"]
    assert model.wait_for_closed(5.0), "the faulty stream's connection was left open"
    if "steps" in turn:  # text streamed before the fault is the result's text, and is kept
        assert result["text"] == "half an answer"
        stored = stored_messages(home, result["sessionId"])
        assert "half an answer" in json.dumps(stored[-1]) and stored[-1]["role"] == "assistant"

    await _next_request_works(lsp, model, result["sessionId"], calls_before=1)


async def test_a_tool_that_raises_is_a_failed_call_and_the_request_goes_on(lsp, model):
    # A NUL byte in a shell command makes the bash tool raise (it cannot run it).
    raising = {"steps": [{"tool_call": {"name": "bash", "arguments": {"command": "echo a\u0000b"}}}]}
    model.set_script([LIST, raising, {"steps": [{"text": "That failed."}]}, DONE])
    await lsp.start(init_options=scripted_options(model))

    result = await lsp.command("tunacode.request", {"prompt": "run it"})

    assert result["stopReason"] == "end_turn" and result["text"] == "That failed."
    assert [c["status"] for c in result["toolCalls"]] == ["completed", "failed"]
    events = lsp.events_of(result["requestId"])
    check_request_events(events, result["sessionId"], result["requestId"])
    failed = [e for e in events if e["type"] == "tool_call_update" and e["status"] == "failed"][0]
    assert "NUL byte" in failed["result"]
    tool_messages = [m for m in model.requests[2]["messages"] if m["role"] == "tool"]
    assert "NUL byte" in tool_messages[-1]["content"]
    assert len(paired_call_ids(model.requests[2]["messages"])) == 2

    await _next_request_works(lsp, model, result["sessionId"], calls_before=2)


MEGABYTES = 5_000_000
EVENT_BYTES_LIMIT = 16_000  # far above any normal event, far below the tool's output
MODEL_INPUT_LIMIT = 40_000  # the bash tool keeps about 30,000 characters of head and tail


async def test_a_tool_that_prints_megabytes_is_bounded_everywhere(lsp, model, home):
    flood = {"steps": [{"tool_call": {
        "name": "bash", "arguments": {"command": f"head -c {MEGABYTES} /dev/zero | tr '\\0' x; echo; echo the-end"},
    }}]}
    model.set_script([LIST, flood, {"steps": [{"text": "Lots of x."}]}, DONE])
    client = await lsp.start(init_options=scripted_options(model))

    result = await lsp.command("tunacode.request", {"prompt": "flood"})

    assert result["stopReason"] == "end_turn"
    assert [c["status"] for c in result["toolCalls"]] == ["completed", "completed"]
    events = lsp.events_of(result["requestId"])
    check_request_events(events, result["sessionId"], result["requestId"])
    sizes = {e["type"]: max(len(json.dumps(x)) for x in events if x["type"] == e["type"]) for e in events}
    assert max(sizes.values()) < EVENT_BYTES_LIMIT, sizes
    final = [e for e in events if e["type"] == "tool_call_update" and e.get("name") == "bash" and e["status"] == "completed"]
    assert final and len(final[0]["result"]) <= 400
    progress = [r for reports in client.progress_reports.values() for r in reports]
    assert max(len(str(getattr(r, "message", "") or "")) for r in progress) < 1_000

    tool_output = [m for m in model.requests[2]["messages"] if m["role"] == "tool"][-1]["content"]
    assert len(tool_output) < MODEL_INPUT_LIMIT
    assert "cut from the middle" in tool_output and "the-end" in tool_output
    stored = stored_messages(home, result["sessionId"])
    assert max(len(json.dumps(m)) for m in stored) < MODEL_INPUT_LIMIT

    await _next_request_works(lsp, model, result["sessionId"], calls_before=2)
