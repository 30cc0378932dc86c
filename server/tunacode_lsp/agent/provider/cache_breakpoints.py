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
  pruned output (the next step leaves everything up to it unchanged) and the latest turn.

bench/anthropic_cache.py measures the share of each call's input read from the cache.
"""

from __future__ import annotations

from typing import Any

from tunacode_lsp.core.history import PRUNED_MARK_PREFIX

CACHE = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
_UNMARKABLE = ("thinking", "redacted_thinking")  # Anthropic refuses cache_control on these


def place_breakpoints(params: dict[str, Any]) -> None:
    """Set `cache_control` on the chosen blocks of an Anthropic request (in place)."""

    tools = params.get("tools") or []
    system = params.get("system") or []
    messages = params.get("messages") or []
    blocks = [block for message in messages for block in message.get("content") or []]
    pruned = [n for n, block in enumerate(blocks) if _is_pruned_output(block)]
    chosen: list[dict[str, Any]] = []
    if pruned and system:
        chosen.append(system[-1])
        head_end = _markable_before(blocks, pruned[0])
        if head_end is not None:
            chosen.append(blocks[head_end])
        chosen.append(blocks[pruned[-1]])
    else:
        chosen += tools[-1:] + system[-1:]
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
