"""Anthropic prompt-cache reuse: the share of each call's input that Anthropic would read from
its cache, for the request shape our Anthropic adapter sends (agent/provider/anthropic_messages.py).

The same 40-turn request as bench/prefix_reuse.py (a different 20 KB file read on every turn),
run in-process on our runner against the scripted model's Messages endpoint, which records
each request body. The cache is modelled as Anthropic documents it: a call writes a cache
entry at each `cache_control` breakpoint (the prefix of tools, system and messages up to the
end of that block); a later call reads the longest written prefix that ends at one of its own
breakpoints or at a block boundary at most 20 blocks before one (the lookback). The figure per
run: the mean over calls 2..40 of (cached prefix length) / (this call's input length), lengths
in characters of the blocks' canonical JSON (cache_control itself left out). The baseline is
the no-pruning run; the goal (issue 28) is reuse >= 0.90 at the default history budget.
"Before" is the same run's request bodies with the breakpoints the adapter placed until
2026-11-27 (the last tool, the system prompt, the latest turn: `earlier_breakpoints`), so
the two placements are compared on identical input.

The note also gives the ceiling at that budget (`ceiling`): no call can read from the cache
what it appends (the model's last turn and its tool result were never sent before), and
under the budget no input is longer than the longest the pruned run sent; so call n reads
at most 1 - appended_n / min(its no-pruning length, that longest input), even if pruning
steps cost nothing. With 20 KB appended per turn at the default budget that is ~0.898:
the goal's 0.90 is above what any pruning within 100k tokens can reach on this session.
The model of the cache follows Anthropic's prompt-caching page (prefix in the order tools,
system, messages; an entry written at each `cache_control` block; a hit looked up at a
breakpoint and up to 20 blocks before it; 4 breakpoints at most). It leaves out the minimum
cacheable length (1,024 tokens for Sonnet: every prefix here holds the tools and the system
prompt, ~3,000 tokens) and the 5-minute lifetime (the bench's calls are seconds apart).

The note adds one figure with a lifetime, counted in calls (`LIFETIME_CALLS`: 5 minutes at
~30 s a call, a session that waits on its tools and the model): an entry is read only if a
call wrote or read it at most that many calls before, and a read renews it. It is given with
the breakpoints of this adapter and with the same bodies re-marked without the head's end
before the first pruning step (`without_head_cut`, the placement until 2026-11-27 04:40), the
one thing that marker changes: with no lifetime the entry at the head's end, written by the
early call whose latest block it was, is still there at the first step.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

from tunacode_lsp.agent.models import resolve_model
from tunacode_lsp.agent.ports import RequestSpec
from tunacode_lsp.agent.provider.cache_breakpoints import place_breakpoints
from tunacode_lsp.agent.runner import AgentRequest, new_request_id
from tunacode_lsp.devtools.scripted_model import ScriptedModelServer

from .config import BenchConfig
from .inprocess import MemoryLog, NullSink
from .prefix_reuse import BUDGETS, TURNS, make_files, script
from .stats import Goal, Row, Samples

MODEL = "anthropic:claude-sonnet-4-5"
LOOKBACK_BLOCKS = 20
LIFETIME_CALLS = 10


def blocks_of(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The request as Anthropic reads it for caching, in order (tools, system, messages):
    (canonical JSON of the block without cache_control, whether it carries a breakpoint)."""

    def entry(kind: str, block: dict[str, Any]) -> tuple[str, bool]:
        plain = {k: v for k, v in block.items() if k != "cache_control"}
        return json.dumps([kind, plain], sort_keys=True, ensure_ascii=False), "cache_control" in block

    out = [entry("tool", tool) for tool in body.get("tools") or []]
    system = body.get("system") or []
    out += [entry("system", block) for block in (system if isinstance(system, list) else [{"text": system}])]
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        out += [entry(message.get("role", ""), block) for block in blocks]
    return out


def cached_shares(bodies: list[dict[str, Any]], lifetime: int | None = None) -> list[float]:
    """For each call after the first: the share of its input read from the cache (entries
    used at most `lifetime` calls before, if given)."""

    written: dict[bytes, int] = {}  # an entry's digest -> the last call that wrote or read it
    shares: list[float] = []
    for index, body in enumerate(bodies):
        blocks = blocks_of(body)
        digests, ends, hasher, length = [], [], hashlib.sha256(), 0
        for text, _ in blocks:
            hasher.update(text.encode())
            digests.append(hasher.copy().digest())  # the prefix up to and including this block
            length += len(text)
            ends.append(length)
        breakpoints = [n for n, (_, marked) in enumerate(blocks) if marked]
        if index:
            hit = 0
            for point in breakpoints:
                for n in range(point, max(-1, point - LOOKBACK_BLOCKS - 1), -1):
                    used = written.get(digests[n])
                    if used is not None and (lifetime is None or index - used <= lifetime):
                        hit = max(hit, ends[n])
                        written[digests[n]] = index
                        break
            shares.append(hit / length if length else 0.0)
        written.update((digests[n], index) for n in breakpoints)
    return shares


def ceiling(baseline: list[dict[str, Any]], longest: int) -> float:
    """The best mean cached share of any pruning that keeps each input at most `longest`
    (see module doc): per call, 1 - appended / min(its no-pruning length, longest)."""

    shares = cached_shares(baseline)
    lengths = [input_length(body) for body in baseline[1:]]
    return mean([1 - length * (1 - share) / min(length, longest) for share, length in zip(shares, lengths, strict=True)])


def input_cost(bodies: list[dict[str, Any]]) -> float:
    """The input's price over calls 2.., in characters at the base input price: a cache read
    costs 0.1 of it, the rest is written at the latest turn's breakpoint (1.25, 5-minute
    entries), as Anthropic prices them."""

    lengths = [input_length(body) for body in bodies[1:]]
    return sum(0.1 * share * n + 1.25 * (1 - share) * n for share, n in zip(cached_shares(bodies), lengths, strict=True))


def input_length(body: dict[str, Any]) -> int:
    return sum(len(text) for text, _ in blocks_of(body))


def earlier_breakpoints(body: dict[str, Any]) -> dict[str, Any]:
    """The body with the breakpoints of the adapter's first version: last tool, system, latest turn."""

    body = copy.deepcopy(body)
    blocks = [*(body.get("tools") or []), *(body.get("system") or [])]
    blocks += [block for message in body.get("messages") or [] for block in message["content"]]
    for block in blocks:
        block.pop("cache_control", None)
    marked = (body.get("tools") or [])[-1:] + (body.get("system") or [])[-1:]
    if body.get("messages") and body["messages"][-1]["content"]:
        marked.append(body["messages"][-1]["content"][-1])
    for block in marked:
        block["cache_control"] = {"type": "ephemeral"}
    return body


def without_head_cut(body: dict[str, Any]) -> dict[str, Any]:
    """The body re-marked by the adapter's policy without the head's end before the first
    pruning step (the recorded body has lost the model input's `HeadCut`)."""

    body = copy.deepcopy(body)
    blocks = [*(body.get("tools") or []), *(body.get("system") or [])]
    blocks += [block for message in body.get("messages") or [] for block in message["content"]]
    for block in blocks:
        block.pop("cache_control", None)
    place_breakpoints(body)
    return body


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


async def one_run(workspace: Path, budget: int, turns: int) -> list[dict[str, Any]]:
    with ScriptedModelServer(script(turns)) as model:
        env = {"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": model.base_url.removesuffix("/v1")}
        spec = RequestSpec(
            request_id=new_request_id(),
            session_id="anthropic-cache",
            prompt="Read every file, one per turn.",
            model=resolve_model(MODEL, env=env),
            workspace_root=workspace,
            history=[],
            max_turns=turns + 1,
            approval="auto",
            history_token_budget=budget,
        )
        result = await AgentRequest(spec, NullSink(), MemoryLog()).run()
        if result.stop_reason != "end_turn":
            raise RuntimeError(f"anthropic cache: the request ended with {result.stop_reason}: {result.error}")
        return list(model.requests)


async def run(config: BenchConfig) -> list[Row]:
    workspace = config.folder("anthropic-cache")
    turns = config.reps(TURNS, 12)
    make_files(workspace, turns)
    runs = {name: await one_run(workspace, budget, turns) for name, budget in BUDGETS.items()}
    baseline = runs.pop("no pruning (baseline)")
    base = mean(cached_shares(baseline))
    rows = []
    for name, bodies in runs.items():
        reuse = mean(cached_shares(bodies))
        before = mean(cached_shares([earlier_breakpoints(b) for b in bodies]))
        best = ceiling(baseline, max(input_length(b) for b in bodies))
        cost = input_cost(bodies) / input_cost(baseline)
        lived = mean(cached_shares(bodies, LIFETIME_CALLS))
        lived_before = mean(cached_shares([without_head_cut(b) for b in bodies], LIFETIME_CALLS))
        rows.append(Row(
            f"Anthropic: input not read from the prompt cache, {turns} turns x 20 KB, {name}",
            Samples([1 - reuse], unit="share"), Samples([1 - base], unit="share"),
            f"no pruning: {1 - base:.3f} not cached", Goal("p50", 0.10),
            note=(
                f"cached share {reuse:.3f} (no pruning {base:.3f}; ceiling within this budget, pruning "
                f"steps free: {best:.3f}; the same bodies with the earlier breakpoints, tools, system, "
                f"latest turn: {before:.3f}); input price {cost:.2f} of the no-pruning run's (cache reads "
                "0.1, writes 1.25); breakpoints once pruned: system, head end, last pruned output, latest turn; "
                f"entries living {LIFETIME_CALLS} calls: {lived:.3f} (without the head's end before the first "
                f"step: {lived_before:.3f})"
            ),
        ))
    return rows
