"""Prefix reuse: how much of each model call's input repeats the previous call's, byte for byte.

Providers cache a prompt's prefix (OpenAI automatically, Anthropic through `cache_control`):
the part of a call's input that is an identical prefix of the previous call's input is
cheap and fast. One 40-turn request that reads a different 20 KB file on every turn, on our
runner in-process with the scripted model (which records each request body). The figure
per run: the mean over calls 2..40 of (shared prefix of this and the previous call's
`messages` JSON) / (this call's length). Runs: no pruning (budget never reached: the
baseline, the best a growing history can do), `historyTokenBudget` 20,000 (the issue's
measurement: 12% before pruning went to rare steps) and the default 100,000.

The row's number is the share NOT reused (1 - reuse), so the table's "less is better" holds;
the goal "< 0.10" is reuse >= 0.90. The no-pruning baseline itself reuses only ~0.90 (its
early calls are short, so each new 20 KB read is a large share of them): the goal is at
the baseline, and the note gives reuse / baseline reuse and what the step calls reused.
"""

from __future__ import annotations

import json
from os.path import commonprefix
from pathlib import Path
from typing import Any

from tunacode_lsp.agent.models import resolve_model
from tunacode_lsp.agent.ports import RequestSpec
from tunacode_lsp.agent.runner import AgentRequest, new_request_id
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

from .config import BenchConfig
from .inprocess import MODEL, MemoryLog, NullSink
from .stats import Goal, Row, Samples

TURNS = 40
FILE_BYTES = 20_000
BUDGETS = {"no pruning (baseline)": 10_000_000, "historyTokenBudget 20k": 20_000, "historyTokenBudget 100k": 100_000}


def make_files(root: Path, count: int) -> None:
    for n in range(count):
        line = f"def f_{n}_{{i}}(x):  # file {n}, some padding to make the line longer\n"
        lines, size, i = [], 0, 0
        while size < FILE_BYTES:
            text = line.replace("{i}", str(i))
            lines.append(text)
            size += len(text)
            i += 1
        (root / f"file_{n:02d}.py").write_text("".join(lines))


def script(turns: int) -> list[dict[str, Any]]:
    return [
        {"steps": [{"text": f"Reading file {n}."},
                   {"tool_call": {"name": "read_file", "arguments": {"filepath": f"file_{n:02d}.py"}}}]}
        for n in range(turns)
    ] + [{"text": "Read them all."}]


def reuse_per_call(bodies: list[dict[str, Any]]) -> tuple[list[float], list[int]]:
    """(reuse share of each call after the first, indexes in it of the calls that did not
    start with the whole previous input: the pruning steps)."""
    inputs = [json.dumps(b["messages"], ensure_ascii=False) for b in bodies]
    shares = [len(commonprefix([inputs[n - 1], inputs[n]])) / len(inputs[n]) for n in range(1, len(inputs))]
    steps = [n - 1 for n in range(1, len(inputs)) if not inputs[n].startswith(inputs[n - 1][:-1])]
    return shares, steps


async def one_run(workspace: Path, budget: int, turns: int) -> tuple[float, list[float], int]:
    with ScriptedModelServer(script(turns)) as model:
        spec = RequestSpec(
            request_id=new_request_id(),
            session_id="prefix",
            prompt="Read every file, one per turn.",
            model=resolve_model(MODEL, base_url=model.chat_url, env={}),
            workspace_root=workspace,
            history=[],
            max_turns=turns + 1,
            approval="auto",
            history_token_budget=budget,
        )
        result = await AgentRequest(spec, NullSink(), MemoryLog()).run()
        if result.stop_reason != "end_turn":
            raise RuntimeError(f"prefix reuse: the request ended with {result.stop_reason}: {result.error}")
        bodies = model.requests
    shares, steps = reuse_per_call(bodies)
    return sum(shares) / len(shares), [shares[n] for n in steps], len(bodies)


async def run(config: BenchConfig) -> list[Row]:
    workspace = config.folder("prefix-reuse")
    turns = config.reps(TURNS, 12)
    make_files(workspace, turns)
    results = {name: await one_run(workspace, budget, turns) for name, budget in BUDGETS.items()}
    base_reuse, _, _ = results["no pruning (baseline)"]
    baseline = Samples([1 - base_reuse], unit="share")
    rows = []
    for name, (reuse, steps, calls) in results.items():
        if name == "no pruning (baseline)":
            continue
        rows.append(Row(
            f"input not reused as prefix, {turns} turns x 20 KB, {name}",
            Samples([1 - reuse], unit="share"), baseline, f"no pruning: {1 - base_reuse:.3f} not reused",
            Goal("p50", 0.10),
            note=(
                f"reuse {reuse:.3f} (baseline {base_reuse:.3f}, ratio {reuse / base_reuse:.2f}); {len(steps)} of "
                f"{calls - 1} calls changed earlier input (pruning steps), reusing "
                + (f"{min(steps):.2f}..{max(steps):.2f}" if steps else "-")
            ),
        ))
    return rows
