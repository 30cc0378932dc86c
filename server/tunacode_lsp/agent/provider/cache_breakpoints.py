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

bench/anthropic_cache.py measures the share of each call's input read from the cache.
"""

from __future__ import annotations

from typing import Any

from tunacode_lsp.core.history import PRUNED_MARK_PREFIX

CACHE = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20  # how far before a breakpoint Anthropic looks for an earlier entry
_UNMARKABLE = ("thinking", "redacted_thinking")  # Anthropic refuses cache_control on these


def place_breakpoints(params: dict[str, Any]) -> None:
    """Set `cache_control` on the chosen blocks of an Anthropic request (in place)."""

    tools = params.get("tools") or []
    system = params.get("system") or []
    messages = params.get("messages") or []
    blocks = [block for message in messages for block in message.get("content") or []]
    pruned = [n for n, block in enumerate(blocks) if _is_pruned_output(block)]
    bridge = _previous_input_end(messages, blocks)
    if bridge is not None and len(blocks) - 1 - bridge <= LOOKBACK_BLOCKS:
        bridge = None  # the latest block's lookback reaches the previous call's entry
    chosen: list[dict[str, Any]] = []
    if pruned and system:
        chosen.append(system[-1])
        head_end = _markable_before(blocks, pruned[0])
        if head_end is not None:
            chosen.append(blocks[head_end])
        chosen.append(blocks[pruned[-1]] if bridge is None else blocks[bridge])
    else:
        chosen += tools[-1:] + system[-1:]
        if bridge is not None:
            chosen.append(blocks[bridge])
    latest = _latest_turn_block(messages)
    if latest is not None:
        chosen.append(latest)
    unique = list({id(block): block for block in chosen}.values())
    for block in unique[-MAX_BREAKPOINTS:]:
        block["cache_control"] = CACHE


def _is_pruned_output(block: dict[str, Any]) -> bool:
    if block.get("type") != "tool_result":
        return False
    content = block.get("content")
    first = content[0] if isinstance(content, list) and content else None
    return isinstance(first, dict) and str(first.get("text", "")).startswith(PRUNED_MARK_PREFIX)


def _previous_input_end(messages: list[dict[str, Any]], blocks: list[dict[str, Any]]) -> int | None:
    """Index in `blocks` of the last markable block before the latest assistant message:
    where the previous call's input ended (None without an assistant message)."""

    start = len(blocks)
    for message in reversed(messages):
        start -= len(message.get("content") or [])
        if message.get("role") == "assistant":
            return _markable_before(blocks, start)
    return None


def _markable_before(blocks: list[dict[str, Any]], index: int) -> int | None:
    for n in range(index - 1, -1, -1):
        if blocks[n].get("type") not in _UNMARKABLE:
            return n
    return None


def _latest_turn_block(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    if messages and messages[-1]["content"]:
        last = messages[-1]["content"][-1]
        if last.get("type") not in _UNMARKABLE:
            return last
    return None
