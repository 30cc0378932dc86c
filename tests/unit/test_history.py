"""History invariants: clean_history, violations, cancelled results, interruption, pruning."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tunacode_lsp.core.codec import load_message
from tunacode_lsp.core.history import (
    CANCELLED_TEXT,
    cancelled_results_for,
    clean_history,
    estimate_tokens,
    mark_interrupted,
    prune_tool_outputs,
    unanswered_tool_calls,
    violations,
)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def call(call_id: str | None, name: str = "read_file") -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": {"filepath": "a.py"}}


def assistant(*blocks: Any, text: str | None = None) -> dict[str, Any]:
    content = ([{"type": "text", "text": text}] if text is not None else []) + list(blocks)
    return {"role": "assistant", "content": content, "stop_reason": "tool_calls"}


def result(call_id: str | None, text: str = "out") -> dict[str, Any]:
    return {
        "role": "tool_result",
        "tool_call_id": call_id,
        "tool_name": "read_file",
        "content": [{"type": "text", "text": text}],
        "details": {},
        "is_error": False,
    }


def is_cancelled(message: dict[str, Any]) -> bool:
    return message["role"] == "tool_result" and message["content"][0]["text"] == CANCELLED_TEXT


# ---------------------------------------------------------------- examples


def test_a_valid_history_is_kept_as_is() -> None:
    history = [
        user("read a.py"),
        assistant(call("c1"), call("c2"), text="reading"),
        result("c2"),
        result("c1"),
        assistant(text="done"),
        user("thanks"),
    ]
    assert violations(history) == []
    assert clean_history(history) == history


def test_unanswered_call_gets_a_cancelled_result_after_the_other_results() -> None:
    history = [user("go"), assistant(call("c1"), call("c2")), result("c1"), user("next")]
    cleaned = clean_history(history)
    assert [m["role"] for m in cleaned] == ["user", "assistant", "tool_result", "tool_result", "user"]
    assert cleaned[2] == result("c1")
    assert cleaned[3]["tool_call_id"] == "c2"
    assert cleaned[3]["is_error"] is True
    assert cleaned[3]["tool_name"] == "read_file"
    assert is_cancelled(cleaned[3])
    assert violations(history) == ["messages[1]: tool call 'c2' has no tool result"]


def test_a_call_left_open_at_the_end_is_closed() -> None:
    cleaned = clean_history([user("go"), assistant(call("c1"))])
    assert cleaned[-1]["tool_call_id"] == "c1" and is_cancelled(cleaned[-1])


def test_orphan_results_are_dropped() -> None:
    history = [user("go"), result("nope"), assistant(text="hi"), result("c9")]
    assert clean_history(history) == [user("go"), assistant(text="hi")]
    assert len(violations(history)) == 2


def test_a_late_result_is_an_orphan_and_the_call_is_cancelled() -> None:
    history = [user("go"), assistant(call("c1")), user("more"), result("c1")]
    cleaned = clean_history(history)
    assert [m["role"] for m in cleaned] == ["user", "assistant", "tool_result", "user"]
    assert is_cancelled(cleaned[2])


def test_system_and_empty_assistant_messages_go_and_users_merge() -> None:
    history = [
        {"role": "system", "content": [{"type": "text", "text": "you are"}]},
        user("one"),
        assistant(text=""),
        {"role": "assistant", "content": [{"type": "thinking", "thinking": ""}]},
        user("two"),
    ]
    cleaned = clean_history(history)
    assert cleaned == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
            "timestamp": 1,
        }
    ]
    found = violations(history)
    assert "messages[0]: system message stored" in found
    assert "messages[2]: empty assistant message" in found
    assert "messages[4]: user message follows a user message" in found


def test_an_empty_assistant_inside_a_result_run_does_not_orphan_the_results() -> None:
    history = [user("go"), assistant(call("c1"), call("c2")), result("c1"), assistant(), result("c2")]
    assert clean_history(history) == [history[0], history[1], history[2], history[4]]


def test_thinking_only_assistant_is_not_empty() -> None:
    history = [user("go"), {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]}]
    assert violations(history) == []
    assert clean_history(history) == history


def test_duplicate_ids_are_renamed_in_the_call_and_its_result() -> None:
    history = [
        user("go"),
        assistant(call("call_0")),
        result("call_0", "first"),
        assistant(call("call_0")),
        result("call_0", "second"),
    ]
    cleaned = clean_history(history)
    assert cleaned[3]["content"][0]["id"] == "call_0~2"
    assert cleaned[4]["tool_call_id"] == "call_0~2"
    assert cleaned[4]["content"][0]["text"] == "second"
    assert cleaned[2] == history[2]
    assert violations(history) == ["messages[3]: duplicate tool call id 'call_0'"]


def test_a_rename_never_takes_an_id_used_later() -> None:
    history = [
        user("go"),
        assistant(call("x")),
        result("x"),
        assistant(call("x")),
        result("x"),
        assistant(call("x~2")),
        result("x~2"),
    ]
    cleaned = clean_history(history)
    ids = [b["id"] for m in cleaned if m["role"] == "assistant" for b in m["content"]]
    assert ids == ["x", "x~3", "x~2"]
    assert [m["tool_call_id"] for m in cleaned if m["role"] == "tool_result"] == ids


def test_duplicates_inside_one_message_are_answered_in_order() -> None:
    history = [user("go"), assistant(call("c"), call("c")), result("c", "a"), result("c", "b")]
    cleaned = clean_history(history)
    assert [b["id"] for b in cleaned[1]["content"]] == ["c", "c~2"]
    assert [(m["tool_call_id"], m["content"][0]["text"]) for m in cleaned[2:]] == [("c", "a"), ("c~2", "b")]


def test_calls_without_an_id_get_one_and_a_cancelled_result() -> None:
    cleaned = clean_history([user("go"), assistant(call(None), call(None))])
    ids = [b["id"] for b in cleaned[1]["content"]]
    assert ids == ["unnamed_call", "unnamed_call~2"]
    assert [m["tool_call_id"] for m in cleaned[2:]] == ids
    assert violations(cleaned) == []


def test_null_blocks_are_removed() -> None:
    history = [user("go"), {"role": "assistant", "content": [None, {"type": "text", "text": "a"}]}]
    assert violations(history) == ["messages[1]: null content block"]
    assert clean_history(history)[1]["content"] == [{"type": "text", "text": "a"}]


def test_non_messages_are_dropped() -> None:
    history: list[Any] = [user("go"), "junk", {"role": "tool"}, None, assistant(text="ok")]
    assert clean_history(history) == [user("go"), assistant(text="ok")]
    assert len(violations(history)) == 3


def test_the_input_is_never_mutated() -> None:
    history = [user("a"), user("b"), assistant(call("c"), call("c")), result("c")]
    before = copy.deepcopy(history)
    cleaned = clean_history(history)
    cleaned[0]["content"].append({"type": "text", "text": "x"})
    assert history == before


def test_unanswered_tool_calls_and_their_cancelled_results_close_an_abort() -> None:
    history = [user("go"), assistant(call("c1"), call("c2"), call("c3")), result("c2")]
    open_calls = unanswered_tool_calls(history)
    assert [c["id"] for c in open_calls] == ["c1", "c3"]
    closed = history + cancelled_results_for(open_calls)
    assert violations(closed) == []
    for message in closed[3:]:
        load_message(message)  # a valid tinyagent ToolResultMessage
        assert message["is_error"] is True
        assert message["content"] == [{"type": "text", "text": CANCELLED_TEXT}]


def test_unanswered_tool_calls_sees_earlier_runs_too() -> None:
    history = [user("go"), assistant(call("a")), assistant(call("b")), result("b")]
    assert [c["id"] for c in unanswered_tool_calls(history)] == ["a"]
    assert unanswered_tool_calls([user("x")]) == []


def test_mark_interrupted_appends_the_marker_once() -> None:
    partial = {"role": "assistant", "content": [{"type": "text", "text": "half a sen"}]}
    marked = mark_interrupted(partial)
    assert marked["content"][0]["text"] == "half a sen\n\n[INTERRUPTED]"
    assert marked["stop_reason"] == "aborted"
    assert mark_interrupted(marked) == marked
    assert partial["content"][0]["text"] == "half a sen"
    load_message(marked)


def test_mark_interrupted_without_text_adds_a_text_block() -> None:
    partial = {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}], "stop_reason": "aborted"}
    marked = mark_interrupted(partial)
    assert marked["content"][-1] == {"type": "text", "text": "[INTERRUPTED]"}
    empty = mark_interrupted({"role": "assistant", "content": []})
    assert violations([user("go"), empty]) == []


def test_mark_interrupted_marks_the_last_text_block() -> None:
    partial = assistant({"type": "text", "text": "second"}, text="first")
    assert [b["text"] for b in mark_interrupted(partial)["content"]] == ["first", "second\n\n[INTERRUPTED]"]


# ---------------------------------------------------------------- pruning


def big_result(call_id: str, size: int) -> dict[str, Any]:
    return result(call_id, "x" * size)


def conversation_with_outputs(sizes: list[int]) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [user("go")]
    for n, size in enumerate(sizes):
        history += [assistant(call(f"c{n}")), big_result(f"c{n}", size)]
    return history


def test_prune_leaves_a_history_under_budget_alone() -> None:
    history = conversation_with_outputs([5000, 5000])
    pruned = prune_tool_outputs(history, token_budget=estimate_tokens(history))
    assert pruned == history and pruned is not history


def test_prune_replaces_oldest_large_outputs_down_to_half_the_budget() -> None:
    history = conversation_with_outputs([8000, 8000, 8000, 8000, 8000, 100])
    before = copy.deepcopy(history)
    budget = estimate_tokens(history) - 3000  # passed at the fourth output
    assert estimate_tokens(history[:7]) <= budget < estimate_tokens(history[:9])
    # head_ratio 0.25: the first output outside the head (at the default 0.3 it fits in it)
    pruned = prune_tool_outputs(history, token_budget=budget, keep_recent=3, head_ratio=0.25)
    texts = [m["content"][0]["text"] for m in pruned if m["role"] == "tool_result"]
    marker = "[output pruned: 8000 chars; re-run the tool if needed]"
    # At the fourth output, sparing the three latest would not reach half the budget: all
    # but the latest go; the next two outputs are appended without another step.
    assert texts == [marker] * 3 + ["x" * 8000] * 2 + ["x" * 100]
    assert estimate_tokens(pruned[:9]) <= budget // 2
    assert estimate_tokens(pruned) <= budget
    assert history == before
    assert [m["tool_call_id"] for m in pruned if m["role"] == "tool_result"] == [f"c{n}" for n in range(6)]


def test_prune_spares_the_recent_outputs_when_it_can_and_the_latest_always() -> None:
    history = conversation_with_outputs([8000] * 8 + [100])
    budget = estimate_tokens(history) - 100  # passed at the last (small) output
    pruned = prune_tool_outputs(history, token_budget=budget, keep_recent=3, head_ratio=0)  # no kept head
    texts = [m["content"][0]["text"][:7] for m in pruned if m["role"] == "tool_result"]
    assert texts == ["[output"] * 5 + ["x" * 7] * 4  # the target reached before the three latest
    history = conversation_with_outputs([8000, 8000, 8000])
    pruned = prune_tool_outputs(history, token_budget=1, keep_recent=3)
    assert pruned[-1] == history[-1]
    pruned = prune_tool_outputs(history, token_budget=1, keep_recent=0)
    assert all(m["content"][0]["text"].startswith("[output pruned") for m in pruned if m["role"] == "tool_result")


def test_prune_skips_small_outputs() -> None:
    history = conversation_with_outputs([200, 200, 200, 200, 200])
    assert prune_tool_outputs(history, token_budget=1, keep_recent=1) == history


def test_estimate_tokens_grows_with_content() -> None:
    small = [user("a")]
    assert estimate_tokens(small) < estimate_tokens([user("a" * 400)])
    assert estimate_tokens([user("a" * 400)]) >= 100
    thinking = {"role": "assistant", "content": [{"type": "thinking", "thinking": "t" * 400}]}
    assert estimate_tokens([thinking]) >= 100
    assert estimate_tokens([assistant(call("c"))]) > estimate_tokens([assistant()])
    assert estimate_tokens([]) == 0


# ---------------------------------------------------------------- properties

CALL_IDS = st.sampled_from(["c0", "c1", "c2", "c0~2", None])
TEXTS = st.sampled_from(["", "a", "b", "hello"])

blocks = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, TEXTS),
    st.builds(lambda t: {"type": "thinking", "thinking": t}, TEXTS),
    st.builds(call, CALL_IDS),
    st.none(),
)
messages = st.one_of(
    st.builds(user, TEXTS),
    st.builds(lambda b: {"role": "assistant", "content": b}, st.lists(blocks, max_size=4)),
    st.builds(result, CALL_IDS, TEXTS),
    st.just({"role": "system", "content": [{"type": "text", "text": "sys"}]}),
    st.just({"role": "custom", "content": []}),
)
histories = st.lists(messages, max_size=14)


@settings(max_examples=200, deadline=None)
@given(histories)
def test_cleaned_history_satisfies_every_invariant(history: list[dict[str, Any]]) -> None:
    before = copy.deepcopy(history)
    cleaned = clean_history(history)
    assert violations(cleaned) == []
    assert unanswered_tool_calls(cleaned) == []
    assert history == before
    for message in cleaned:
        load_message(message)


@settings(max_examples=200, deadline=None)
@given(histories)
def test_cleaning_is_idempotent(history: list[dict[str, Any]]) -> None:
    once = clean_history(history)
    assert clean_history(once) == once


@settings(max_examples=200, deadline=None)
@given(histories)
def test_a_history_without_violations_is_unchanged(history: list[dict[str, Any]]) -> None:
    if violations(history) == []:
        assert clean_history(history) == history


@settings(max_examples=200, deadline=None)
@given(histories)
def test_no_user_text_or_assistant_content_is_lost(history: list[dict[str, Any]]) -> None:
    def user_texts(items: list[Any]) -> list[str]:
        return [b["text"] for m in items if m["role"] == "user" for b in m["content"]]

    def assistant_blocks(items: list[Any]) -> list[Any]:
        # content without call ids (they may be renamed) and without null blocks
        return [
            [{k: v for k, v in b.items() if k != "id"} for b in m["content"] if b is not None]
            for m in items
            if m["role"] == "assistant" and violations([user("u"), m]) != ["messages[1]: empty assistant message"]
        ]

    kept = [m for m in history if m["role"] in ("user", "assistant", "tool_result")]
    cleaned = clean_history(history)
    assert user_texts(cleaned) == user_texts(kept)
    assert assistant_blocks(cleaned) == assistant_blocks(kept)


@st.composite
def valid_with_junk(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    valid = clean_history(draw(histories))
    junk = st.one_of(
        st.just({"role": "system", "content": [{"type": "text", "text": "sys"}]}),
        st.just({"role": "assistant", "content": [{"type": "text", "text": ""}]}),
        st.builds(result, st.sampled_from(["orphan-1", "orphan-2"])),
    )
    noisy = list(valid)
    for _ in range(draw(st.integers(0, 5))):
        noisy.insert(draw(st.integers(0, len(noisy))), draw(junk))
    return valid, noisy


@settings(max_examples=200, deadline=None)
@given(valid_with_junk())
def test_junk_around_a_valid_history_is_removed_and_nothing_else(pair: tuple[list[Any], list[Any]]) -> None:
    valid, noisy = pair
    assert clean_history(noisy) == valid


@settings(max_examples=200, deadline=None)
@given(histories, st.lists(CALL_IDS.filter(lambda c: c is not None), min_size=1, max_size=3), st.data())
def test_closing_an_abort_with_cancelled_results_gives_a_valid_history(
    history: list[dict[str, Any]], ids: list[str], data: st.DataObject
) -> None:
    valid = clean_history(history)
    used = {b["id"] for m in valid if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_call"}
    fresh = [f"new{n}" for n, _ in enumerate(ids) if f"new{n}" not in used]
    aborted = valid + [assistant(*[call(i) for i in fresh], text="partial")]
    answered = data.draw(st.lists(st.sampled_from(fresh), unique=True)) if fresh else []
    aborted += [result(i) for i in answered]
    closed = aborted + cancelled_results_for(unanswered_tool_calls(aborted))
    assert violations(closed) == []
    assert clean_history(closed) == closed


@settings(max_examples=200, deadline=None)
@given(histories, st.integers(0, 200), st.integers(0, 4))
def test_pruning_never_mutates_and_keeps_shape(history: list[Any], budget: int, keep: int) -> None:
    cleaned = clean_history(history)
    before = copy.deepcopy(cleaned)
    pruned = prune_tool_outputs(cleaned, token_budget=budget, keep_recent=keep, large_output_chars=1)
    assert cleaned == before
    assert [m["role"] for m in pruned] == [m["role"] for m in cleaned]
    assert violations(pruned) == []


# ---------------------------------------------------------------- pruning in rare large steps


def growing_views(sizes: list[int], budget: int) -> list[list[dict[str, Any]]]:
    """What the model is sent before each turn of a session that reads one output per turn."""
    history: list[dict[str, Any]] = [user("go")]
    views = []
    for n, size in enumerate(sizes):
        history += [assistant(call(f"c{n}")), big_result(f"c{n}", size)]
        views.append(prune_tool_outputs(history, token_budget=budget))
    return views


def shared_prefix(a: list[Any], b: list[Any]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def test_prune_cuts_back_to_half_the_budget_when_passed() -> None:
    history = conversation_with_outputs([8000] * 6)  # about 12,000 tokens: passes 11,000 at the last
    budget = 11_000
    assert estimate_tokens(history[:-1]) <= budget < estimate_tokens(history)
    pruned = prune_tool_outputs(history, token_budget=budget, keep_recent=1)
    assert estimate_tokens(pruned) <= budget // 2
    # The old rule stopped as soon as the estimate fitted: one output, the next turn another.
    assert sum(m["content"][0]["text"].startswith("[output pruned") for m in pruned if m["role"] == "tool_result") >= 3


def test_pruning_happens_in_rare_steps_and_keeps_earlier_views_as_prefixes() -> None:
    views = growing_views([20_000] * 40, budget=20_000)
    breaks = [n for n in range(1, len(views)) if shared_prefix(views[n - 1], views[n]) < len(views[n - 1])]
    # 40 turns of 5,000 tokens against a 20,000 budget cut back to 10,000: a step every few
    # turns, not every turn (the old pruning broke the prefix on every turn past the budget).
    assert 0 < len(breaks) <= 40 // 2
    reuse = [shared_prefix(views[n - 1], views[n]) / len(views[n]) for n in range(1, len(views))]
    assert sum(reuse) / len(reuse) >= 0.6
    for view in views:
        assert violations(view) == []
        assert estimate_tokens(view) <= 20_000 + 5_100


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 6000), min_size=1, max_size=30), st.integers(1000, 30_000))
def test_pruning_decisions_depend_only_on_the_history_so_far(sizes: list[int], budget: int) -> None:
    views = growing_views(sizes, budget)
    for n in range(1, len(views)):
        earlier, later = views[n - 1], views[n]
        prefix = later[: len(earlier)]
        # Every message pruned before stays pruned, with the same bytes.
        for old, new in zip(earlier, prefix, strict=True):
            if old != new:
                assert old["content"][0]["text"] != new["content"][0]["text"]
                assert new["content"][0]["text"].startswith("[output pruned")
                assert not old["content"][0]["text"].startswith("[output pruned")
