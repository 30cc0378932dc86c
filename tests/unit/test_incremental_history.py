"""A long session's history is cleaned, planned and sent in O(what changed) (issue 35, third
session), and each incremental result equals what a full rebuild gives:

- `HistoryCleaner.extend` over batches == `clean_history` of them joined (renames too);
- `PruningReplay` pushed and truncated == `plan_pruning` of what is pushed;
- `ModelInput.build` over a growing, diverging list == a fresh `ModelInput` building it;
- `CachedHistory` (agent/sessions.py) after appends == cleaning every stored message again.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tunacode_lsp.agent.model_input import ModelInput
from tunacode_lsp.agent.sessions import CachedHistory
from tunacode_lsp.core.codec import dump_message, load_message
from tunacode_lsp.core.history import HistoryCleaner, PruningReplay, clean_history, common_prefix, plan_pruning

CALL_IDS = st.sampled_from(["c0", "c1", "c2", "c0~2", "c1~2", "unnamed_call", None])
TEXTS = st.sampled_from(["", "a", "b", "hello"])


def call(call_id: str | None) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": "read_file", "arguments": {"filepath": "a.py"}}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def result(call_id: str | None, text: str) -> dict[str, Any]:
    return {"role": "tool_result", "tool_call_id": call_id, "tool_name": "read_file",
            "content": [{"type": "text", "text": text}], "is_error": False}


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
)


@settings(max_examples=400, deadline=None)
@given(st.lists(messages, max_size=24), st.lists(st.integers(0, 24), max_size=5))
def test_a_cleaner_extended_batch_by_batch_equals_cleaning_everything(history: list[dict[str, Any]], cuts: list[int]):
    cleaner = HistoryCleaner()
    bounds = [0, *sorted(min(c, len(history)) for c in cuts), len(history)]
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        if not cleaner.extend(history[lo:hi]):  # a rename the longer input would choose differently
            cleaner = HistoryCleaner()
            cleaner.feed(history[:hi])
        assert cleaner.view() == clean_history(history[:hi])
    assert cleaner.view() == clean_history(history)


def test_an_extension_holding_an_id_an_earlier_rename_chose_is_refused():
    cleaner = HistoryCleaner()
    first = [user("a"), {"role": "assistant", "content": [call("c0")]}, result("c0", "x"),
             {"role": "assistant", "content": [call("c0")]}, result("c0", "y")]
    cleaner.feed(first)
    assert cleaner.view()[3]["content"][0]["id"] == "c0~2"
    later = [user("b"), {"role": "assistant", "content": [call("c0~2")]}, result("c0~2", "z")]
    assert not cleaner.extend(later)  # the whole input renames the second c0 to c0~3
    assert cleaner.view() == clean_history(first)
    assert clean_history(first + later)[3]["content"][0]["id"] == "c0~3"
    assert cleaner.extend([user("c"), {"role": "assistant", "content": [call("c0")]}, result("c0", "w")])
    assert cleaner.view() == clean_history([*first, user("c"), {"role": "assistant", "content": [call("c0")]}, result("c0", "w")])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(4, 900), st.one_of(st.none(), st.integers(4, 60)), st.booleans()), max_size=60),
    st.lists(st.integers(0, 60), max_size=4),
    st.sampled_from([200, 1_000, 5_000]),
    st.integers(0, 4),
)
def test_a_pruning_replay_pushed_and_truncated_equals_planning_again(
    items: list[tuple[int, int | None, bool]], cuts: list[int], budget: int, keep_recent: int
):
    replay = PruningReplay(token_budget=budget, keep_recent=keep_recent)
    pushed: list[tuple[int, int | None, bool]] = []
    rng = random.Random(len(items) * 7 + budget)
    for item in items:
        replay.push(*item)
        pushed.append(item)
        if cuts and rng.random() < 0.2:
            length = min(cuts.pop(), len(pushed))
            replay.truncate(length)
            del pushed[length:]
        expected = plan_pruning([c for c, _, _ in pushed], [s for _, s, _ in pushed], token_budget=budget,
                                keep_recent=keep_recent, is_result=[r for _, _, r in pushed])
        assert replay.chosen == expected
        assert replay.total == sum(s if i in expected and s is not None else c for i, (c, s, _) in enumerate(pushed))


def _session(n: int, seed: int) -> list[dict[str, Any]]:
    """A varied history: prompts, calls with large and small outputs, user runs, answers."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for i in range(n):
        kind = rng.random()
        if kind < 0.25:
            out.append(user(f"prompt {i}"))
        elif kind < 0.55:
            out.append({"role": "assistant", "content": [{"type": "text", "text": "reading"}, call(f"call_{i}")],
                        "stop_reason": "tool_calls"})
            out.append(result(f"call_{i}", "x" * rng.choice([10, 1_500, 6_000])))
        else:
            out.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}], "stop_reason": "stop"})
    return clean_history(out)


def _dumps(built: list[Any]) -> list[dict[str, Any]]:
    return [dump_message(m) for m in built]


def test_the_model_input_built_turn_by_turn_equals_building_it_whole():
    for seed in range(6):
        dumps = _session(400, seed)
        models = [load_message(d) for d in dumps]
        rng = random.Random(seed)
        incremental = ModelInput()
        length = 50
        current = models[:length]
        for _turn in range(40):
            step = rng.random()
            if step < 0.6:  # a turn appends
                length = min(len(models), length + rng.randint(1, 12))
                current = current + models[len(current):length]
            elif step < 0.8:  # the next request: the same models, then new objects for the last ones
                cut = rng.randint(max(0, len(current) - 10), len(current))
                current = current[:cut] + [load_message(dump_message(m)) for m in current[cut:]]
            else:  # a user message (after one of the last turn: merged into it)
                current = [*current, load_message(user(f"again {_turn}"))]
            budget = rng.choice([2_000, 5_000, 100_000])
            got, estimate = incremental.build(current, budget)
            want, want_estimate = ModelInput().build(current, budget)
            assert _dumps(got) == _dumps(want) and estimate == want_estimate
        assert common_prefix(current, current) == len(current)


def test_a_cached_history_after_appends_equals_cleaning_everything_again():
    stored = _session(300, 11)
    for compaction in (None, {"summary": "earlier work", "firstKept": 40}):
        entry = CachedHistory((0, 0), list(stored[:100]), compaction)
        fresh = CachedHistory((0, 0), list(stored[:100]), compaction)
        assert entry.build_view() == fresh.build_view()
        for count in range(100, len(stored), 7):
            for message in stored[count:count + 7]:
                entry.append(message, (count, count))
            # a call left open by the last batch gets its cancelled result in the view only
            view = entry.build_view()
            assert view == CachedHistory((0, 0), entry.stored, compaction).build_view()
        entry.append({"role": "assistant", "content": [call("call_dup")]}, (1, 1))
        entry.append({"role": "assistant", "content": [call("call_dup")]}, (2, 2))  # renamed
        entry.append(result("call_dup~2", "x"), (3, 3))
        assert entry.build_view() == CachedHistory((0, 0), entry.stored, compaction).build_view()


def test_bodies_joined_from_the_last_ones_equal_the_whole_encoding_across_sessions_and_divergence():
    from tinyagent import Context, SimpleStreamOptions

    from tests.unit.test_request_body_reuse import URL, turn, whole
    from tunacode_lsp.agent.provider.model import OpenAICompatModel
    from tunacode_lsp.agent.provider.openai_request import encode_request_body

    model = OpenAICompatModel(provider="openrouter", id="anthropic/claude-sonnet-4.5", base_url=URL)  # cache hints
    sessions = {name: [m for n in range(30) for m in turn(n)] for name in ("a", "b")}
    rng = random.Random(5)
    for step in range(40):
        name = rng.choice("ab")
        history = sessions[name]
        if step % 7 == 3:  # a message in the middle replaced by another object (a pruning step)
            at = rng.randrange(len(history))
            history[at] = history[at].model_copy()
        history += turn(100 + step)
        prompt = rng.choice(["s", "s", "another system prompt", ""])
        context = Context(system_prompt=prompt, messages=list(history))
        encoded = encode_request_body(model, context, SimpleStreamOptions())
        content, quotable = whole(model, context, SimpleStreamOptions())
        assert encoded.content == content and encoded.quotable == quotable


def test_the_common_prefix_is_of_the_same_objects_not_of_equal_ones():
    a, b, c = user("x"), user("x"), user("y")
    assert common_prefix([a, c, a], [a, c]) == 2 and common_prefix([a, c], [a, c, a]) == 2
    assert common_prefix([a, c], [b, c]) == 0  # equal, not the same object
    assert common_prefix([a, c, a], [a, c, b]) == 2 and common_prefix([], [a]) == 0
