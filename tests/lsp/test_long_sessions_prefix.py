"""Long sessions over the real server: a pruning step keeps the start of the input cached.

Pruning happens in rare steps (tests/lsp/test_long_sessions.py); this checks what a step
itself reuses. The scripted model records every request body; a provider caches the
request's messages as a prefix, so the call that takes a step still reuses the head of
the history (the task and its first context) when the step only changes input after it.
"""

from __future__ import annotations

import json
from os.path import commonprefix
from typing import Any

from tests.conftest import scripted_options

FILE_LINES = 400  # about 20 KB, ~5,500 estimated tokens per read
BUDGET = 40_000  # the head (a quarter) holds the first read; steps every few turns


def read_turns(turns: int) -> list[dict[str, Any]]:
    steps = [
        {"steps": [{"text": f"Reading it again ({n})."}, {"tool_call": {"name": "read_file", "arguments": {"filepath": "big.py"}}}]}
        for n in range(turns)
    ]
    return steps + [{"text": "Done reading."}]


def model_input(messages: list[Any]) -> str:
    return json.dumps(messages, ensure_ascii=False)


async def test_a_pruning_step_keeps_the_head_of_the_input_byte_identical(lsp, model, workspace):
    (workspace / "big.py").write_text("".join(f"value_{n:04d} = {n} * 2  # some padding text here\n" for n in range(FILE_LINES)))
    turns = 24
    model.set_script(read_turns(turns))
    await lsp.start(init_options=scripted_options(model, historyTokenBudget=BUDGET, maxTurns=100))

    result = await lsp.command("tunacode.request", {"prompt": "Read big.py many times."})

    assert result["stopReason"] == "end_turn", result
    bodies = [b["messages"] for b in model.requests]
    assert len(bodies) == turns + 1
    inputs = [model_input(b) for b in bodies]
    first_tool = next(i for i, m in enumerate(bodies[1]) if m["role"] == "tool")
    head = model_input(bodies[1][: first_tool + 1])[:-1]  # up to the end of the first read's output
    steps = [n for n in range(1, len(inputs)) if not inputs[n].startswith(inputs[n - 1][:-1])]
    assert 2 <= len(steps) <= len(inputs) // 3, steps  # steps happen, and rarely
    for n in steps:
        shared = commonprefix([inputs[n - 1], inputs[n]])
        # The step keeps the head as it was: the first output is sent in full, unchanged...
        assert inputs[n].startswith(head), f"call {n} changed the head of the input"
        # ...so the call that takes the step still reuses a good share of its input (here
        # ~0.35-0.4; cutting from the first output, it reused 0.04-0.10).
        assert len(shared) / len(inputs[n]) >= 0.2, (n, len(shared), len(inputs[n]))
    assert all(s.startswith(head) for s in inputs[1:])
