"""Invariants of a stored history, as pure functions on tinyagent message dumps.

A history is valid when:

1. every assistant tool call has exactly one tool result, in the run of tool results
   directly after its assistant message, and every tool result answers such a call;
2. no assistant message is empty (no text, no thinking, no tool call), no two user
   messages are adjacent, and only user/assistant/tool_result messages are stored;
3. tool call ids are unique within the history.

`clean_history` repairs any list of dumps into a valid history, changing as little as
it can: unanswered calls get a synthetic "cancelled" result placed after their assistant
message's other results; orphan results are dropped; empty assistant, system and unknown
messages are dropped as if absent; adjacent user messages are merged; a duplicate call
id is renamed ("call_0" -> "call_0~2") in the call and in its results. A valid history
comes back equal to itself. Inputs are never mutated. See docs/sessions.md.

What the server knows of a message beyond tinyagent's dump is structured, never prose:

- `meta` (any role, optional): `{"requestId": str, "events": [wire event, ...]}`: the
  request that stored it, and the events of that request which no message holds (request
  start, notices, compaction, turn ends) emitted since the previous stored message;
  agent/projection.py replays them.
- a tool result's `details.outcome`: `{"status", "reason"?, "asked"?, "started"?,
  "result"?, "exitCode"?, "durationMs"?}`: how the call ended, as its final
  `tool_call_update` said (agent/registry.py `outcome_of`).
- an interrupted assistant message: `stop_reason: "aborted"` and the mark below at the end
  of its text (`interrupted_text` gives the text without it).
"""

from __future__ import annotations

import copy
import itertools
import math
import operator
from array import array
from collections import deque
from typing import Any

import orjson

Message = dict[str, Any]

MESSAGE_ROLES = frozenset({"user", "assistant", "tool_result"})
CANCELLED_TEXT = "cancelled: the request was stopped before this tool ran/finished"
INTERRUPTED_MARK = "[INTERRUPTED]"
UNNAMED_CALL_ID = "unnamed_call"
LARGE_OUTPUT_CHARS = 1_000
CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4
TOKENS_PER_IMAGE = 1_000


# ---------------------------------------------------------------- reading dumps


def _blocks(message: Message) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _tool_calls(message: Message) -> list[dict[str, Any]]:
    return [b for b in _blocks(message) if isinstance(b, dict) and b.get("type") == "tool_call"]


def _content_list(message: Message) -> list[Any]:
    """Content as a list of blocks; a bare string becomes one text block."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def _has_substance(block: object) -> bool:
    if not isinstance(block, dict):
        return False
    kind = block.get("type")
    if kind == "text":
        return bool(block.get("text"))
    if kind == "thinking":
        return bool(block.get("thinking"))
    return kind == "tool_call"


def _is_empty_assistant(message: Message) -> bool:
    return not any(_has_substance(block) for block in _blocks(message))


def _call_id(call: dict[str, Any]) -> str | None:
    call_id = call.get("id")
    return call_id if isinstance(call_id, str) and call_id else None


def _is_message(message: object) -> bool:
    return isinstance(message, dict) and message.get("role") in MESSAGE_ROLES


# ---------------------------------------------------------------- checking


def violations(messages: list[Message]) -> list[str]:
    """Every broken invariant, one line each naming the message index; [] when valid."""
    found: list[str] = []
    seen_ids: set[str] = set()
    pending: dict[str, int] = {}  # call id -> index of its assistant message, current run only
    previous_role: str | None = None

    def close_run() -> None:
        for call_id, index in pending.items():
            found.append(f"messages[{index}]: tool call {call_id!r} has no tool result")
        pending.clear()

    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not _is_message(message):
            role = message.get("role") if isinstance(message, dict) else None
            kind = "system message stored" if role == "system" else f"not a message (role {role!r})"
            found.append(f"{where}: {kind}")
            continue
        role = message["role"]
        if role == "tool_result":
            call_id = message.get("tool_call_id")
            if isinstance(call_id, str) and call_id in pending:
                del pending[call_id]
            else:
                found.append(f"{where}: tool result {call_id!r} answers no open tool call before it")
            previous_role = role
            continue
        if role == "assistant" and _is_empty_assistant(message):
            found.append(f"{where}: empty assistant message")
            continue
        close_run()
        if role == "user":
            if previous_role == "user":
                found.append(f"{where}: user message follows a user message")
        else:
            if any(block is None for block in _blocks(message)):
                found.append(f"{where}: null content block")
            for call in _tool_calls(message):
                call_id = _call_id(call)
                if call_id is None:
                    found.append(f"{where}: tool call without an id")
                    continue
                if call_id in seen_ids:
                    found.append(f"{where}: duplicate tool call id {call_id!r}")
                seen_ids.add(call_id)
                pending[call_id] = index
        previous_role = role
    close_run()
    return found


def unanswered_tool_calls(messages: list[Message]) -> list[dict[str, Any]]:
    """Tool call blocks (copies) with no tool result in the run after their assistant message."""
    unanswered: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for message in messages:
        if not _is_message(message):
            continue
        if message["role"] == "tool_result":
            answered = message.get("tool_call_id")
            for position, call in enumerate(pending):
                if _call_id(call) is not None and _call_id(call) == answered:
                    del pending[position]
                    break
            continue
        if message["role"] == "assistant" and _is_empty_assistant(message):
            continue
        unanswered.extend(pending)
        pending = []
        if message["role"] == "assistant":
            pending = [copy.deepcopy(call) for call in _tool_calls(message)]
    unanswered.extend(pending)
    return unanswered


# ---------------------------------------------------------------- repairing


def cancelled_results_for(calls: list[dict[str, Any]]) -> list[Message]:
    """Synthetic error results that close `calls` after a stop."""
    return [
        {
            "role": "tool_result",
            "tool_call_id": call.get("id"),
            "tool_name": call.get("name") or "",
            "content": [{"type": "text", "text": CANCELLED_TEXT}],
            "details": {"cancelled": True},
            "is_error": True,
        }
        for call in calls
    ]


def mark_interrupted(message: Message) -> Message:
    """A copy of a partial assistant message whose text ends with "\\n\\n[INTERRUPTED]".

    Idempotent. With no text block, a text block "[INTERRUPTED]" is added.
    """
    marked = copy.deepcopy(message)
    blocks = [block for block in _blocks(marked) if block is not None]
    texts = [b for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    last = texts[-1] if texts else None
    if last is None:
        blocks.append({"type": "text", "text": INTERRUPTED_MARK})
    else:
        text = last.get("text") or ""
        if not text.endswith(INTERRUPTED_MARK):
            last["text"] = f"{text}\n\n{INTERRUPTED_MARK}" if text else INTERRUPTED_MARK
    marked["content"] = blocks
    marked.setdefault("stop_reason", "aborted")
    return marked


def interrupted_text(message: Message, text: str) -> str:
    """`text` of `message` without the mark `mark_interrupted` added (only an aborted message has it)."""
    if message.get("stop_reason") == "aborted" and text.endswith(INTERRUPTED_MARK):
        return text[: -len(INTERRUPTED_MARK)].removesuffix("\n\n")
    return text


def meta_of(message: object) -> dict[str, Any]:
    """The message's `meta` (see module doc), {} when it has none."""
    meta = message.get("meta") if isinstance(message, dict) else None
    return meta if isinstance(meta, dict) else {}


def outcome_of_result(message: object) -> dict[str, Any] | None:
    """A tool result's stored outcome (see module doc), None for one stored without it."""
    details = message.get("details") if isinstance(message, dict) else None
    outcome = details.get("outcome") if isinstance(details, dict) else None
    return outcome if isinstance(outcome, dict) and isinstance(outcome.get("status"), str) else None


def clean_history(messages: list[Message]) -> list[Message]:
    """A valid history with everything valid of `messages`, in order (see module doc)."""
    cleaner = HistoryCleaner()
    cleaner.feed(messages)
    return cleaner.view()


class HistoryCleaner:
    """`clean_history`, resumable: feed the messages in batches, take the view after any.

    After `feed(a)` and `extend(b)`, `view()` equals `clean_history(a + b)`. A rename of a
    duplicate call id avoids every call id of the whole input, later ones too: `extend`
    refuses (returns False, nothing changed) a batch holding an id an earlier rename chose,
    since the whole input would have renamed differently; clean it again whole then. The
    open run of tool results is kept open between batches; `view()` closes it on a copy
    (the cancelled results of its calls).
    """

    def __init__(self) -> None:
        self.cleaned: list[Message] = []
        self._renamed_to: set[str] = set()  # the ids renames chose
        self._inputs: list[list[Message]] = []  # every batch fed, for the rename's id set
        self._taken: set[str] | None = None  # every call id of the input, found only when a rename needs it
        self._used_ids: set[str] = set()
        # The open run: original id -> final ids still waiting, and their call blocks.
        self._waiting: dict[str, deque[str]] = {}
        self._open_calls: dict[str, dict[str, Any]] = {}

    def view(self) -> list[Message]:
        """The cleaned history of everything fed so far (a new list)."""
        if not self._open_calls:
            return list(self.cleaned)
        return [*self.cleaned, *cancelled_results_for(list(self._open_calls.values()))]

    def _taken_ids(self) -> set[str]:
        if self._taken is None:
            self._taken = {
                call_id
                for batch in self._inputs
                for message in batch
                if isinstance(message, dict) and message.get("role") == "assistant"
                for call in _tool_calls(message)
                if (call_id := _call_id(call)) is not None
            }
        return self._taken

    def _close_run(self) -> None:
        if self._open_calls:
            self.cleaned.extend(cancelled_results_for(list(self._open_calls.values())))
            self._open_calls.clear()
        self._waiting.clear()

    def _unique_id(self, wanted: str | None) -> str:
        used_ids = self._used_ids
        if wanted is not None and wanted not in used_ids:
            return wanted
        taken = self._taken_ids()
        base = wanted or UNNAMED_CALL_ID
        if base not in used_ids and base not in taken:
            chosen = base
        else:
            n = 2
            while f"{base}~{n}" in used_ids or f"{base}~{n}" in taken:
                n += 1
            chosen = f"{base}~{n}"
        self._renamed_to.add(chosen)
        return chosen

    def extend(self, messages: list[Message]) -> bool:
        """Clean `messages` on from where the last batch ended; False (nothing done) when
        a rename of the batches before would change (see the class doc)."""
        if self._renamed_to and any(
            _call_id(call) in self._renamed_to
            for message in messages
            if isinstance(message, dict) and message.get("role") == "assistant"
            for call in _tool_calls(message)
        ):
            return False
        self.feed(messages)
        return True

    def feed(self, messages: list[Message]) -> None:
        """Clean `messages` on from where the last batch ended (see `extend`)."""
        self._inputs.append(messages)
        self._taken = None
        cleaned, waiting, open_calls, used_ids = self.cleaned, self._waiting, self._open_calls, self._used_ids
        for message in messages:
            if not _is_message(message):
                continue
            role = message["role"]
            if role == "tool_result":
                original = message.get("tool_call_id")
                queue = waiting.get(original) if isinstance(original, str) else None
                if not queue:
                    continue  # orphan: answers no open call
                final_id = queue.popleft()
                open_calls.pop(final_id)
                cleaned.append(message if final_id == original else {**message, "tool_call_id": final_id})
                continue
            if role == "assistant" and _is_empty_assistant(message):
                continue  # dropped as if absent: it does not end a run of results
            self._close_run()
            if role == "user":
                if cleaned and cleaned[-1]["role"] == "user":
                    cleaned[-1] = {**cleaned[-1], "content": _content_list(cleaned[-1]) + _content_list(message)}
                else:
                    cleaned.append(message)
                continue
            # Messages are shared with the input, never changed in place: a message that
            # needs a change (a None block dropped, a call renamed) is copied first.
            assistant = message
            if any(block is None for block in _blocks(assistant)):
                assistant = {**assistant, "content": [b for b in _blocks(assistant) if b is not None]}
            for index, call in enumerate(_blocks(assistant)):
                if not (isinstance(call, dict) and call.get("type") == "tool_call"):
                    continue
                original = _call_id(call)
                final_id = self._unique_id(original)
                used_ids.add(final_id)
                if final_id != call.get("id"):
                    if assistant is message:
                        assistant = {**message, "content": list(_blocks(message))}
                    call = {**call, "id": final_id}
                    assistant["content"][index] = call
                if original is not None:
                    waiting.setdefault(original, deque()).append(final_id)
                open_calls[final_id] = call
            cleaned.append(assistant)


def common_prefix(a: list[Any], b: list[Any]) -> int:
    """How many leading items of `a` and `b` are the same objects (compared in C, not a
    Python loop): a long history grows at its end, so a turn redoes only what follows."""
    if all(map(operator.is_, a, b)):  # the usual case, about twice as fast as finding where
        return min(len(a), len(b))
    return next(itertools.compress(itertools.count(), map(operator.is_not, a, b)))


# ---------------------------------------------------------------- budget


def estimate_tokens(messages: list[Message]) -> int:
    """A rough token count: characters / 4, plus a little per message and per image."""
    return sum(_message_tokens(message) for message in messages)


# The pruning policy (issue 28, Anthropic prompt cache). A step's call reads from the
# provider's cache only the input before its first newly pruned output: about the head, so
# ~head/target of that call; every call between steps reads all but what it appends, so
# ~1 - appended/input. A lower target makes steps rarer and larger (each frees at least
# 60% of the budget), a larger head makes a step's call read more: with 0.4 and 0.3 a step
# call reads ~3/4 of its input (0.5 and 0.25: ~1/2). Measured by `python -m bench --only
# anthropic_cache prefix_reuse` (docs/performance.md, issue 28 third session).
PRUNE_TARGET_RATIO = 0.4  # of the budget: where a step brings the estimate back to
PRUNE_HEAD_RATIO = 0.3  # of the budget: the start of the history, never pruned (see plan_pruning)


PRUNED_MARK_PREFIX = "[output pruned: "


def pruned_marker(chars: int) -> str:
    """The stable text that replaces a pruned tool output (the same bytes on every turn)."""
    return f"{PRUNED_MARK_PREFIX}{chars} chars; re-run the tool if needed]"


def plan_pruning(
    tokens: list[int],
    pruned_tokens: list[int | None],
    *,
    token_budget: int,
    keep_recent: int = 3,
    target_ratio: float = PRUNE_TARGET_RATIO,
    head_ratio: float = PRUNE_HEAD_RATIO,
    is_result: list[bool] | None = None,
) -> set[int]:
    """Positions to prune, chosen in rare large steps (hysteresis) as a pure function of the list.

    `tokens[i]` is message i's estimate, `pruned_tokens[i]` its estimate once pruned (None:
    not prunable). The history is replayed as it grew, one message at a time: whenever the
    running estimate passes `token_budget`, the oldest prunable results are pruned until the
    estimate is at most `target_ratio * token_budget`: first sparing the `keep_recent` most
    recent tool results of that moment, and when that is not enough, all but the latest
    (with keep_recent=0, none is spared). Decisions at message i depend only on messages
    up to i, so a longer list keeps every earlier decision: between two steps the model's
    input only grows at its end, and the provider's prompt cache stays warm.

    The head, the messages that fit in `head_ratio * token_budget` from the start (the
    task and its first context), is never pruned: a step changes the input only after it,
    so even the call that takes a step reuses the head from the provider's cache (the
    step's cut started at the first output before, and such a call reused ~nothing).
    """
    results = is_result if is_result is not None else [p is not None for p in pruned_tokens]
    target = int(token_budget * target_ratio)
    head = int(token_budget * head_ratio)
    chosen: set[int] = set()
    total = 0
    grown = 0  # the estimate of the history so far, nothing pruned: where the head ends
    result_positions: list[int] = []
    cursor = 0  # index into result_positions: everything before it was considered
    for index, count in enumerate(tokens):
        total += count
        grown += count
        if results[index] and grown > head:
            result_positions.append(index)
        if total <= token_budget:
            continue
        # The `keep_recent` latest results are spared when the step reaches the target
        # without them; else the step goes on into them (sparing the very latest), since a
        # step too small to reach the target would be followed by another on every turn.
        for spare in (max(0, keep_recent), min(1, max(0, keep_recent))):
            limit = max(0, len(result_positions) - spare)
            while total > target and cursor < limit:
                position = result_positions[cursor]
                cursor += 1
                small = pruned_tokens[position]
                if small is None or small >= tokens[position]:
                    continue
                total += small - tokens[position]
                chosen.add(position)
    return chosen


NOT_PRUNABLE = -1  # a pruned estimate is at least TOKENS_PER_MESSAGE
MARK_FIELDS = 5


class PruningReplay:
    """`plan_pruning`, one message at a time, and back to any earlier length.

    `push` adds the next message (its estimate, its estimate once pruned or None, whether
    it is a tool result) and returns the positions it newly pruned (a step prunes older
    results); `truncate(n)` forgets every message from position n on, with the decisions
    they took, and returns the positions no longer pruned. After any sequence of both,
    `chosen` and `total` equal `plan_pruning` over the messages currently pushed and the
    estimate of the input with them pruned: the model's input of a long session is
    planned in O(new messages) per turn instead of O(history). `push` is `plan_pruning`'s
    loop body: a change to the policy there is made here too
    (tests/unit/test_incremental_history.py compares the two).
    """

    def __init__(
        self,
        *,
        token_budget: int,
        keep_recent: int = 3,
        target_ratio: float = PRUNE_TARGET_RATIO,
        head_ratio: float = PRUNE_HEAD_RATIO,
    ) -> None:
        self.token_budget = token_budget
        self.keep_recent = keep_recent
        self.target = int(token_budget * target_ratio)
        self.head = int(token_budget * head_ratio)
        self.total = 0  # the estimate of the messages pushed, as pruned
        self.chosen: set[int] = set()
        self._grown = 0  # the estimate of the history so far, nothing pruned: where the head ends
        # arrays, not lists: the collector never traverses them (a 30k-item list of ints is
        # 30k objects touched by every full pass)
        self._tokens = array("q")
        self._pruned_tokens = array("q")  # NOT_PRUNABLE: None in plan_pruning's list
        self._result_positions = array("q")
        self._cursor = 0  # index into _result_positions: everything before it was considered
        self._chosen_order = array("q")
        self._marks = array("q")  # the state before each position, MARK_FIELDS values each

    def __len__(self) -> int:
        return len(self._tokens)

    def push(self, count: int, small: int | None, is_result: bool) -> list[int]:
        index = len(self._tokens)
        self._marks.extend((self.total, self._grown, len(self._result_positions), self._cursor, len(self._chosen_order)))
        self._tokens.append(count)
        self._pruned_tokens.append(NOT_PRUNABLE if small is None else small)
        self.total += count
        self._grown += count
        if is_result and self._grown > self.head:
            self._result_positions.append(index)
        if self.total <= self.token_budget:
            return []
        # The `keep_recent` latest results are spared when the step reaches the target
        # without them; else the step goes on into them (sparing the very latest), since a
        # step too small to reach the target would be followed by another on every turn.
        newly: list[int] = []
        tokens, pruned_tokens, positions = self._tokens, self._pruned_tokens, self._result_positions
        keep_recent = self.keep_recent
        for spare in (max(0, keep_recent), min(1, max(0, keep_recent))):
            limit = max(0, len(positions) - spare)
            while self.total > self.target and self._cursor < limit:
                position = positions[self._cursor]
                self._cursor += 1
                pruned = pruned_tokens[position]
                if pruned == NOT_PRUNABLE or pruned >= tokens[position]:
                    continue
                self.total += pruned - tokens[position]
                self.chosen.add(position)
                self._chosen_order.append(position)
                newly.append(position)
        return newly

    def truncate(self, length: int) -> list[int]:
        if length >= len(self._tokens):
            return []
        self.total, self._grown, results, self._cursor, chosen = self._marks[length * MARK_FIELDS:(length + 1) * MARK_FIELDS]
        del self._marks[length * MARK_FIELDS:], self._tokens[length:], self._pruned_tokens[length:]
        del self._result_positions[results:]
        dropped = list(self._chosen_order[chosen:])
        del self._chosen_order[chosen:]
        self.chosen.difference_update(dropped)
        return dropped


def prune_tool_outputs(
    messages: list[Message],
    *,
    token_budget: int,
    keep_recent: int = 3,
    large_output_chars: int = LARGE_OUTPUT_CHARS,
    target_ratio: float = PRUNE_TARGET_RATIO,
    head_ratio: float = PRUNE_HEAD_RATIO,
) -> list[Message]:
    """A new list for the model, with old large tool outputs replaced by a short marker.

    The choice is `plan_pruning`'s: nothing while the history never passed `token_budget`;
    past it, the oldest tool results of at least `large_output_chars` characters after the
    head (`head_ratio` of the budget; sparing the `keep_recent` most recent ones where it
    can, the latest always) are replaced, in large steps that bring the estimate down to
    `target_ratio` of the budget. The input is not mutated.
    """
    tokens = [_message_tokens(m) for m in messages]
    replacements: list[Message | None] = [
        pruned_replacement(m, large_output_chars) for m in messages
    ]
    chosen = plan_pruning(
        tokens,
        [None if r is None else _message_tokens(r) for r in replacements],
        token_budget=token_budget,
        keep_recent=keep_recent,
        target_ratio=target_ratio,
        head_ratio=head_ratio,
        is_result=[isinstance(m, dict) and m.get("role") == "tool_result" for m in messages],
    )
    return [replacements[i] if i in chosen else m for i, m in enumerate(messages)]  # type: ignore[misc]


def pruned_replacement(message: object, large_output_chars: int = LARGE_OUTPUT_CHARS) -> Message | None:
    """The pruned form of a large tool result (a stable marker), or None when not prunable."""
    if not (isinstance(message, dict) and message.get("role") == "tool_result"):
        return None
    chars = sum(len(b.get("text") or "") for b in _blocks(message) if _is_text(b))
    if chars < large_output_chars:
        return None
    return {**message, "content": [{"type": "text", "text": pruned_marker(chars)}]}


def _is_text(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") == "text"


def _message_tokens(message: object) -> int:
    if not isinstance(message, dict):
        return 0
    chars = 0
    images = 0
    for block in _blocks(message):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            chars += len(block.get("text") or "")
        elif kind == "thinking":
            chars += len(block.get("thinking") or "")
        elif kind == "tool_call":
            chars += len(block.get("name") or "") + len(_json_text(block.get("arguments")))
        elif kind == "image":
            images += 1
    return TOKENS_PER_MESSAGE + images * TOKENS_PER_IMAGE + math.ceil(chars / CHARS_PER_TOKEN)


def _json_text(value: object) -> str:
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return str(value)
