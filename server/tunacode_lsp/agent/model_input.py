"""What the model is sent each turn: the history's messages, pruned to the token budget.

`ModelInput` keeps, per message object, its token estimate and its pruned replacement
(computed once: this runs before every model turn, over the whole history). `build` merges
two user messages in a row, and when the history passes the budget replaces the tool outputs
`plan_pruning` (core/history.py) chooses: a pure function of the history as it grew, so
consecutive turns share their input as a prefix.

`build` is incremental: it keeps what it made of the last list it was given and redoes only
from the first message that is not the same object as before (a turn appends; the next
request of the session starts with the same models, agent/history_models.py), with
`PruningReplay` for the plan. Its result equals building the whole list again
(tests/unit/test_model_input_incremental.py).

The list it returns names where the never-pruned head ends (`HeadCut.cut`: the first tool
output a pruning step would prune, once the input is past the head), so the Anthropic
adapters can mark the head's end before the first step too (provider/cache_breakpoints.py).
"""

from __future__ import annotations

import itertools
import threading
from array import array
from bisect import bisect_right
from typing import Any

from tinyagent import TextContent

from tunacode_lsp.agent.provider.cache_breakpoints import HeadCut
from tunacode_lsp.core.codec import bulk_decoding, dump_message, load_message
from tunacode_lsp.core.history import PruningReplay, common_prefix, estimate_tokens, pruned_replacement

# (message, token estimate, (pruned replacement, its estimate) or None)
Facts = tuple[Any, int, tuple[Any, int] | None]


LLM_ROLES = ("user", "assistant", "tool_result")


class ModelInput:
    def __init__(self) -> None:
        self._facts: dict[int, Facts] = {}  # id(message) -> its facts
        self._lock = threading.Lock()
        self._reset(0)

    def _reset(self, token_budget: int) -> None:
        self._inputs: list[Any] = []  # the messages of the last build
        self._llm: list[Any] = []  # their model input, unpruned (user runs merged)
        self._ends = array("q")  # per item of _llm: the index in _inputs after its last message (not a list: never traversed by the collector)
        self._out: list[Any] = []  # _llm with the chosen outputs pruned
        self._grown = array("q")  # per item of _llm: the estimate of _llm up to it, nothing pruned
        self._cut: int | None = None  # the first item a pruning step would prune (HeadCut)
        self._scanned = 0  # the items looked at for it
        self._replay = PruningReplay(token_budget=token_budget)

    def clear(self) -> None:
        self._facts = {}
        self._reset(0)

    def load(self, dump: dict[str, Any]) -> Any:
        """A stored message as a tinyagent model, its facts taken from the dump at hand."""

        model = load_message(dump)
        replacement = pruned_replacement(dump)
        pruned = None if replacement is None else (load_message(replacement), estimate_tokens([replacement]))
        self._facts[id(model)] = (model, estimate_tokens([dump]), pruned)
        return model

    def adopt(self, model: Any, estimate: int, pruned: tuple[Any, int] | None) -> None:
        """A model loaded by an earlier request of the session (agent/history_models.py), with its facts."""

        self._facts[id(model)] = (model, estimate, pruned)

    def build(self, messages: list[Any], token_budget: int) -> tuple[list[Any], int]:
        """What the model is sent (pruned, `plan_pruning`) and its estimated tokens."""

        # one build at a time: an aborted turn's build may still run on its thread when the
        # session's next request builds on the same state
        with self._lock, bulk_decoding():  # no collector pass over the whole heap (holding the GIL) meanwhile
            return self._build(messages, token_budget)

    def _build(self, messages: list[Any], token_budget: int) -> tuple[list[Any], int]:
        if token_budget != self._replay.token_budget:
            self._reset(token_budget)
        same = common_prefix(messages, self._inputs)
        # the items made only of messages that are still the same are kept (a user message
        # after the last one is merged into it below)
        self._truncate(bisect_right(self._ends, same))
        start = self._ends[-1] if self._ends else 0
        del self._inputs[same:]  # in place: a copy of 30k items is a pass over every message, holding the GIL
        self._inputs.extend(messages[same:])
        llm, ends, out, replay = self._llm, self._ends, self._out, self._replay
        for index in range(start, len(messages)):
            message = messages[index]
            if getattr(message, "role", None) not in LLM_ROLES:
                continue
            if llm and message.role == "user" and llm[-1].role == "user":  # two user messages in a row
                merged = merge_user_runs([llm[-1], message])[0]
                self._truncate(len(llm) - 1)
                llm.append(merged)
            else:
                llm.append(message)
            ends.append(index + 1)
            out.append(llm[-1])
            fact = self.facts_of(llm[-1])
            self._grown.append((self._grown[-1] if self._grown else 0) + fact[1])
            for position in replay.push(fact[1], None if fact[2] is None else fact[2][1], llm[-1].role == "tool_result"):
                pruned = self.facts_of(llm[position])[2]
                assert pruned is not None  # only a prunable output is chosen
                out[position] = pruned[0]
        if len(self._facts) > 2 * len(llm) + 1_000:  # models of earlier requests, no longer sent
            live = {id(m) for m in itertools.chain(messages, llm)}
            self._facts = {key: fact for key, fact in self._facts.items() if key in live}
        result = HeadCut(out)
        result.cut = self._head_cut()
        return result, replay.total

    def _head_cut(self) -> int | None:
        """The first tool output past the head whose pruning would shrink it: where the first
        pruning step starts (`PruningReplay.push`'s condition), a pure function of the items up to it."""

        head, llm, grown = self._replay.head, self._llm, self._grown
        while self._cut is None and self._scanned < len(llm):
            index = self._scanned
            self._scanned += 1
            if llm[index].role == "tool_result" and grown[index] > head:
                _, estimate, pruned = self.facts_of(llm[index])
                if pruned is not None and pruned[1] < estimate:
                    self._cut = index
        return self._cut

    def _truncate(self, length: int) -> None:
        """Forget the model input from item `length` on, and the pruning those items decided."""

        for position in self._replay.truncate(length):
            if position < length:
                self._out[position] = self._llm[position]
        del self._llm[length:], self._ends[length:], self._out[length:], self._grown[length:]
        self._scanned = min(self._scanned, length)
        if self._cut is not None and self._cut >= length:
            self._cut = None

    def facts_of(self, message: Any) -> Facts:
        cached = self._facts.get(id(message))
        if cached is None or cached[0] is not message:
            dump = dump_message(message)
            replacement = pruned_replacement(dump)
            pruned = None if replacement is None else (load_message(replacement), estimate_tokens([replacement]))
            cached = (message, estimate_tokens([dump]), pruned)
            self._facts[id(message)] = cached
        return cached


def merge_user_runs(messages: list[Any]) -> list[Any]:
    """Two user messages in a row (a prompt after a turn that produced nothing) become one.

    The stored rows stay as they are (history cleaning merges them on the next load); this
    keeps the model's input valid now, in one pass.
    """

    out: list[Any] = []
    for message in messages:
        if out and message.role == "user" and out[-1].role == "user":
            out[-1] = out[-1].model_copy(update={"content": [*out[-1].content, TextContent(text="\n\n"), *message.content]})
        else:
            out.append(message)
    return out
