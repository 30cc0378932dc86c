"""What the model is sent each turn: the history's messages, pruned to the token budget.

`ModelInput` keeps, per message object, its token estimate and its pruned replacement
(computed once: this runs before every model turn, over the whole history). `build` merges
two user messages in a row, and when the history passes the budget replaces the tool outputs
`plan_pruning` (core/history.py) chooses: a pure function of the history as it grew, so
consecutive turns share their input as a prefix.
"""

from __future__ import annotations

from typing import Any

from tinyagent import TextContent

from tunacode_lsp.core.codec import bulk_decoding, dump_message, load_message
from tunacode_lsp.core.history import estimate_tokens, plan_pruning, pruned_replacement

# (message, token estimate, (pruned replacement, its estimate) or None)
Facts = tuple[Any, int, tuple[Any, int] | None]


class ModelInput:
    def __init__(self) -> None:
        self._facts: dict[int, Facts] = {}  # id(message) -> its facts

    def clear(self) -> None:
        self._facts = {}

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

        with bulk_decoding():  # no collector pass over the whole heap (holding the GIL) meanwhile
            return self._build(messages, token_budget)

    def _build(self, messages: list[Any], token_budget: int) -> tuple[list[Any], int]:
        llm = merge_user_runs([m for m in messages if getattr(m, "role", None) in ("user", "assistant", "tool_result")])
        facts = [self.facts_of(m) for m in llm]
        estimate = sum(f[1] for f in facts)
        if estimate <= token_budget:
            return llm, estimate  # no prefix of the history passed the budget: nothing is pruned
        chosen = plan_pruning(
            [f[1] for f in facts],
            [None if f[2] is None else f[2][1] for f in facts],
            token_budget=token_budget,
            is_result=[getattr(m, "role", None) == "tool_result" for m in llm],
        )
        out: list[Any] = []
        for position, (message, fact) in enumerate(zip(llm, facts, strict=True)):
            replacement = fact[2]
            out.append(replacement[0] if position in chosen and replacement is not None else message)
        estimate = sum(
            pruned[1] if i in chosen and (pruned := facts[i][2]) is not None else facts[i][1] for i in range(len(llm))
        )
        return out, estimate

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
