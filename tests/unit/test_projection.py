"""agent/projection.py on stored histories the live path did not write: sessions stored before
the projection (best effort, docs/protocol.md) and hostile imported documents."""

from __future__ import annotations

from tunacode_lsp.agent.projection import project_session
from tunacode_lsp.core.history import mark_interrupted


def _project(messages, **kw):
    return project_session(messages, session_id="s", model="openai:gpt-4.1", **kw)


def _shape(events):
    return [(e["requestId"], e["type"], e.get("toolCallId"), e.get("status"), e.get("reason")) for e in events]


OLD = [
    {"role": "user", "content": [{"type": "text", "text": "look"}]},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "Looking."},
        {"type": "tool_call", "id": "a", "name": "read_file", "arguments": {"filepath": "x.py"}},
        {"type": "tool_call", "id": "b", "name": "bash", "arguments": {"command": "ls"}},
    ]},
    {"role": "tool_result", "tool_call_id": "a", "tool_name": "read_file", "content": [{"type": "text", "text": "1:ab|x"}]},
    {"role": "tool_result", "tool_call_id": "b", "tool_name": "bash", "is_error": True,
     "content": [{"type": "text", "text": "the user declined: bash ls"}]},
    mark_interrupted({"role": "assistant", "content": [{"type": "text", "text": "Half"}], "stop_reason": "aborted"}),
    {"role": "user", "content": [{"type": "text", "text": "again"}]},
    {"role": "assistant", "content": [{"type": "tool_call", "id": "c", "name": "bash", "arguments": {"command": "sleep 9"}}]},
    {"role": "tool_result", "tool_call_id": "c", "tool_name": "bash", "is_error": True, "details": {"cancelled": True},
     "content": [{"type": "text", "text": "cancelled: the request was stopped"}]},
]


def test_a_session_stored_before_the_projection_replays_best_effort():
    events = _project(OLD, marks={5: "req_known"})
    assert _shape(events) == [
        ("stored_0", "request_start", None, None, None),
        ("stored_0", "thinking_delta", None, None, None),
        ("stored_0", "text_delta", None, None, None),
        ("stored_0", "tool_call", "a", "pending", None),
        ("stored_0", "tool_call_update", "a", "in_progress", None),
        ("stored_0", "tool_call_update", "a", "completed", None),
        ("stored_0", "tool_call", "b", "pending", None),
        ("stored_0", "tool_call_update", "b", "in_progress", None),
        ("stored_0", "tool_call_update", "b", "failed", "error"),  # an old denial: its prose is never read
        ("stored_0", "text_delta", None, None, None),
        ("stored_0", "request_end", None, None, None),
        ("req_known", "request_start", None, None, None),
        ("req_known", "tool_call", "c", "pending", None),
        ("req_known", "tool_call_update", "c", "cancelled", "aborted"),
        ("req_known", "request_end", None, None, None),
    ]
    texts = [e["text"] for e in events if e["type"] == "text_delta"]
    assert texts == ["Looking.", "Half"]  # the server's own interrupted mark is not text the model wrote
    assert events[0]["prompt"] == "look" and events[0]["model"] == "openai:gpt-4.1"
    assert [e["stopReason"] for e in events if e["type"] == "request_end"] == ["cancelled", "end_turn"]
    assert [e["seq"] for e in events if e["requestId"] == "req_known"] == [1, 2, 3, 4]
    call = next(e for e in events if e["type"] == "tool_call")
    assert (call["kind"], call["title"], call["summary"]) == ("read", "Read x.py", "x.py")


def test_hostile_meta_and_outcomes_are_left_out_or_guessed():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}], "meta": {"requestId": "r1", "events": [
            {"type": "request_start", "prompt": "hi", "model": "m"},
            {"type": "tool_call", "toolCallId": "fake", "name": "bash", "args": {}},  # derived events are never kept
            {"type": "notice"},  # a notice without its message
            {"type": "made_up", "x": 1},
            "not an event",
        ]}},
        {"role": "assistant", "content": [{"type": "tool_call", "id": "a", "name": "bash", "arguments": {}}],
         "meta": {"requestId": "r1"}},
        {"role": "tool_result", "tool_call_id": "a", "content": [], "meta": {"requestId": "r1"},
         "details": {"outcome": {"status": "exploded", "reason": "because"}}},
    ]
    events = _project(messages, trailers={"r1": (3, [{"type": "request_end", "stopReason": "end_turn", "usage": {}}, {"type": "??"}])})
    assert [e["type"] for e in events] == [
        "request_start", "tool_call", "tool_call_update", "tool_call_update", "request_end",
    ]
    assert events[3]["status"] == "completed" and "reason" not in events[3]


def test_a_call_the_client_never_saw_replays_nothing():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}], "meta": {"requestId": "r1"}},
        {"role": "assistant", "content": [{"type": "tool_call", "id": "a", "name": "bash", "arguments": {}}], "meta": {"requestId": "r1"}},
        {"role": "tool_result", "tool_call_id": "a", "content": [], "is_error": True, "meta": {"requestId": "r1"},
         "details": {"cancelled": True, "outcome": {"status": "cancelled", "reason": "aborted", "unseen": True}}},
    ]
    assert [e["type"] for e in _project(messages)] == ["request_end"]


def test_a_request_that_stored_no_message_replays_its_trailer_in_place():
    def request(rid, text):
        return [
            {"role": "user", "content": [{"type": "text", "text": text}], "meta": {"requestId": rid, "events": [
                {"type": "request_start", "prompt": text, "model": "m"}]}},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "meta": {"requestId": rid}},
        ]

    end = {"type": "request_end", "stopReason": "end_turn", "usage": {}}
    stopped = [{"type": "request_start", "prompt": "never stored", "model": "m"},
               {"type": "request_end", "stopReason": "cancelled", "usage": {}}]
    events = _project(
        request("r1", "one") + request("r3", "three"),
        trailers={"r1": (2, [end]), "r2": (2, stopped), "r3": (4, [end]), "gone": (9, stopped)},
    )
    starts = [(e["requestId"], e.get("prompt")) for e in events if e["type"] == "request_start"]
    assert starts == [("r1", "one"), ("r2", "never stored"), ("r3", "three"), ("gone", "never stored")]
    assert [e["type"] for e in events if e["requestId"] == "r2"] == ["request_start", "request_end"]
