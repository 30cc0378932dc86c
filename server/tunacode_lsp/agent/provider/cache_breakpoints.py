"""Where an Anthropic request puts its `cache_control` breakpoints (at most 4, Anthropic's limit).

Anthropic writes a cache entry at each breakpoint (the prefix of tools, system and messages
up to that block) and a later call reads the longest written prefix that ends at one of its
own breakpoints or up to 20 blocks before one. A session's history only grows at its end,
except when old tool outputs are pruned (core/history.py): a pruning step replaces outputs
after the never-pruned head (the first step) or after the previous step's last pruned
output, and leaves everything before unchanged. So:

- nothing pruned: the last tool, the system prompt, the latest turn (the next call reads
  this call's whole input);
- pruned outputs: the system prompt (its prefix holds the tools), the end of the head (the
  block before the first pruned output: every call since the first step wrote it), the last
  pruned output (the next step leaves everything up to it unchanged) and the latest turn;
- the latest turn more than 20 blocks after the previous call's input (a turn of 10 or more
  parallel tool calls: a call and a result each): the last block of that input too (the
  block before the latest assistant message), since from the latest block the lookback
  would not reach the entry the previous call wrote and this call would read only the
  tools and system prompt. It takes the place of the last pruned output (what that adds
  over the head's end is pruned markers only).

- the input past the never-pruned head but nothing pruned yet: the end of the head too (the
  block before the first output a pruning step would prune, which agent/model_input.py
  names on the message list, `HeadCut`), in place of the last tool, so the entry the first
  step's call reads there is written again by every call before it, not only by the early
  call whose latest block it was (which a slow session outlives: the cache's lifetime is
  5 minutes).

The policy (`choose_breakpoints`) works on a neutral description of the request (`Unit`:
role, pruned flag, how many Anthropic blocks it stands for, whether it can carry a marker),
so the native adapter (one unit per block) and OpenRouter's chat-completions hints
(openai_request.py, one unit per message) place the same breakpoints for the same history.

bench/anthropic_cache.py measures the share of each call's input read from the cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from tunacode_lsp.core.history import PRUNED_MARK_PREFIX

CACHE = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20  # how far before a breakpoint Anthropic looks for an earlier entry
_UNMARKABLE = ("thinking", "redacted_thinking")  # Anthropic refuses cache_control on these


class Unit(NamedTuple):
    """One place of a request that may carry a breakpoint, as the policy sees it."""

    role: str  # "tools", "system", "user", "assistant" or "tool"
    blocks: int = 1  # how many Anthropic content blocks it stands for (the lookback counts blocks)
    markable: bool = True
    pruned: bool = False  # a pruned tool output


class HeadCut(list[Any]):
    """The model's input (a list of messages) naming where its never-pruned head ends:
    `cut` is the index of the first tool output a pruning step would prune (None: the input
    is not past the head, or nothing after it can be pruned). agent/model_input.py makes it;
    the adapters read it with `head_cut` (a plain list: None)."""

    cut: int | None = None


def head_cut(messages: Any) -> int | None:
    cut = getattr(messages, "cut", None) if isinstance(messages, HeadCut) else None
    return cut if isinstance(cut, int) and 0 <= cut < len(messages) else None


def same_head_cut(source: Any, copy: list[Any]) -> list[Any]:
    """`copy` (of `source`'s messages) naming the same head cut."""

    cut = head_cut(source)
    if cut is None:
        return copy
    out = HeadCut(copy)
    out.cut = cut
    return out


def choose_breakpoints(units: Sequence[Unit], cut: int | None = None) -> list[int]:
    """The positions in `units` to mark (at most 4), by the module's policy. `cut`: the
    position of the first output a pruning step would prune (the first pruned one wins)."""

    last_pruned = next((n for n in range(len(units) - 1, -1, -1) if units[n].pruned), None)
    if last_pruned is not None:  # scanned only once pruned: the first is then just past the head
        cut = next(n for n in range(len(units)) if units[n].pruned)
    head_end = None if cut is None else _markable_before(units, cut)
    bridge = _previous_input_end(units)
    if bridge is not None and sum(unit.blocks for unit in units[bridge + 1:]) <= LOOKBACK_BLOCKS:
        bridge = None  # the latest block's lookback reaches the previous call's entry
    tools = [n for n in range(min(2, len(units))) if units[n].role == "tools"]
    system = [n for n in range(min(2, len(units))) if units[n].role == "system"]
    chosen: list[int] = []
    if last_pruned is not None or head_end is not None:
        chosen += system[-1:] or tools[-1:]  # the system prompt's prefix holds the tools
        if head_end is not None:
            chosen.append(head_end)
        if bridge is not None:
            chosen.append(bridge)
        elif last_pruned is not None and units[last_pruned].markable:
            chosen.append(last_pruned)
    else:
        chosen += tools[-1:] + system[-1:]
        if bridge is not None:
            chosen.append(bridge)
    latest = len(units) - 1
    if latest >= 0 and units[latest].role not in ("tools", "system") and units[latest].markable:
        chosen.append(latest)
    return list(dict.fromkeys(chosen))[-MAX_BREAKPOINTS:]


def _previous_input_end(units: Sequence[Unit]) -> int | None:
    """The last markable message unit before the latest assistant message: where the
    previous call's input ended (None without an assistant message)."""

    n = len(units) - 1
    while n >= 0 and units[n].role != "assistant":
        if units[n].role in ("tools", "system"):
            return None
        n -= 1
    while n >= 0 and units[n].role == "assistant":
        n -= 1
    return None if n < 0 else _markable_before(units, n + 1)


def _markable_before(units: Sequence[Unit], index: int) -> int | None:
    for n in range(index - 1, -1, -1):
        if units[n].role in ("tools", "system"):
            return None
        if units[n].markable:
            return n
    return None


def place_breakpoints(params: dict[str, Any], cut_call_id: str | None = None) -> None:
    """Set `cache_control` on the chosen blocks of an Anthropic request (in place).
    `cut_call_id`: the tool_use_id of the first output a pruning step would prune."""

    places: list[dict[str, Any]] = [*(params.get("tools") or [])[-1:], *(params.get("system") or [])[-1:]]
    units = [Unit("tools")] if params.get("tools") else []
    if params.get("system"):
        units.append(Unit("system"))
    cut = None
    for message in params.get("messages") or []:
        role = message.get("role", "")
        for block in message.get("content") or []:
            if cut is None and cut_call_id is not None and block.get("tool_use_id") == cut_call_id:
                cut = len(units)
            places.append(block)
            units.append(Unit(role, 1, block.get("type") not in _UNMARKABLE, _is_pruned_output(block)))
    for position in choose_breakpoints(units, cut):
        places[position]["cache_control"] = CACHE


def _is_pruned_output(block: dict[str, Any]) -> bool:
    if block.get("type") != "tool_result":
        return False
    content = block.get("content")
    first = content[0] if isinstance(content, list) and content else None
    return isinstance(first, dict) and str(first.get("text", "")).startswith(PRUNED_MARK_PREFIX)
