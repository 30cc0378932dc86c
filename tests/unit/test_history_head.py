"""The head of a history (PRUNE_HEAD_RATIO of the budget from the start, 0.3) is never pruned."""

from __future__ import annotations

from typing import Any

from tunacode_lsp.core.history import estimate_tokens, prune_tool_outputs


def conversation(sizes: list[int]) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    for n, size in enumerate(sizes):
        history.append({"role": "assistant", "content": [{"type": "tool_call", "id": f"c{n}", "name": "read_file", "arguments": {}}]})
        history.append({"role": "tool_result", "tool_call_id": f"c{n}", "tool_name": "read_file", "content": [{"type": "text", "text": "x" * size}], "is_error": False})
    return history


def pruned_flags(messages: list[dict[str, Any]]) -> list[bool]:
    return [m["content"][0]["text"].startswith("[output pruned") for m in messages if m["role"] == "tool_result"]


def test_outputs_inside_the_head_stay_and_the_step_cuts_after_them() -> None:
    history = conversation([8000] * 12)  # ~2,000 tokens each
    budget = 10_000  # head 3,000: the first output only
    flags = pruned_flags(prune_tool_outputs(history, token_budget=budget))
    assert flags[0] is False and flags[1] is True, flags
    assert estimate_tokens(prune_tool_outputs(history, token_budget=budget)) <= budget
    # Without a head the step starts at the first output.
    assert pruned_flags(prune_tool_outputs(history, token_budget=budget, head_ratio=0))[0] is True


def test_an_output_larger_than_the_head_is_not_part_of_it() -> None:
    history = conversation([40_000] + [8000] * 8)  # the first output alone is the whole budget
    flags = pruned_flags(prune_tool_outputs(history, token_budget=10_000))
    assert flags[0] is True
