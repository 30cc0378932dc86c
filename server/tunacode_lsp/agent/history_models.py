"""The validated history of the last long sessions, kept between their requests.

A request validates its whole history into tinyagent messages (`AgentRequest._load_history`):
at 30,000 messages ~0.5-0.8 s of CPU on a thread, which stalls the event loop through the
GIL (issue 35: a status round trip during a long session's turn). The history is
append-only between compactions and rewinds, and the session service hands out the same
dump objects for the messages it already had (agent/sessions.py `CachedHistory`), so the
next request of the session validates only the dumps after the longest prefix of the very
same dump objects (held here, so their identity stays unique): after a rewind, a
compaction or another process's write the service loads new objects and everything is
validated again.

A `Carry` also holds the running sums of the dumps' token estimates (the compaction check
before a request) and the session's `ModelInput` (agent/model_input.py: its plan of the
model's input goes on from the same models).

Only sessions of at least `MIN_MESSAGES` are kept, and only the `MAX_SESSIONS` most
recently used; a running request takes its session's carry out (`take`) and puts it back
when it ends (`keep`).
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from tunacode_lsp.agent.model_input import ModelInput
from tunacode_lsp.core.history import common_prefix, estimate_tokens

MIN_MESSAGES = 2_000  # shorter histories validate in a few ms: not kept
MAX_SESSIONS = 2


@dataclass
class Carry:
    dumps: list[dict[str, Any]]  # the history the models were made from
    models: list[Any]  # models[i] validated from dumps[i] (changed in place by the next `load`: copy what must stay)
    totals: array[int]  # totals[i]: the token estimate of dumps[:i] (an array: never traversed by the collector)
    model_input: ModelInput
    # the last list `estimate` compared, and how many of its leading dumps are ours: `load`
    # of the same list, unchanged (a request's history is never changed in place), needs
    # no second pass
    checked: tuple[list[dict[str, Any]], int, int] | None = None


_kept: OrderedDict[str, Carry] = OrderedDict()
_lock = threading.Lock()


def take(session_id: str) -> Carry | None:
    """The session's carry (removed from the cache), or None."""

    with _lock:
        return _kept.pop(session_id, None)


def keep(session_id: str, carry: Carry) -> None:
    """Keep the session's carry for its next request (a short history is not kept)."""

    if len(carry.dumps) < MIN_MESSAGES:
        return
    with _lock:
        _kept[session_id] = carry
        _kept.move_to_end(session_id)
        while len(_kept) > MAX_SESSIONS:
            _kept.popitem(last=False)


def estimate(session_id: str, dumps: list[dict[str, Any]]) -> int:
    """`estimate_tokens(dumps)`, from the kept sums for the prefix the session's carry holds."""

    with _lock:
        carry = _kept.get(session_id)
    if carry is None:
        return estimate_tokens(dumps)
    same = _same(carry, dumps)
    return carry.totals[same] + estimate_tokens(dumps[same:])


def reused(carry: Carry | None, dumps: list[dict[str, Any]]) -> int:
    """How many of `dumps` `load` will take from `carry` instead of validating them."""

    return 0 if carry is None else _same(carry, dumps)


def _same(carry: Carry, dumps: list[dict[str, Any]]) -> int:
    """How many leading dumps of `dumps` are the carry's own objects."""

    checked = carry.checked
    if checked is not None and checked[0] is dumps and checked[1] == len(dumps):
        return checked[2]
    same = common_prefix(dumps, carry.dumps)
    carry.checked = (dumps, len(dumps), same)
    return same


def load(session_id: str, dumps: list[dict[str, Any]], previous: Carry | None) -> Carry:
    """The models of `dumps`, reusing `previous`'s for its prefix of the same dump objects.

    `previous` (taken out of the cache: no other request holds it) is cut to that prefix and
    extended in place: a copy of its 30k-item lists would be a pass over every object,
    holding the GIL, and new 30k-item containers for the collector's young passes to scan."""

    if previous is None:
        previous = Carry([], [], array("q", [0]), ModelInput())
    same = _same(previous, dumps)
    model_input, models, totals = previous.model_input, previous.models, previous.totals
    del previous.dumps[same:], models[same:], totals[same + 1 :]
    total = totals[-1]
    for dump in dumps[same:]:
        model = model_input.load(dump)
        models.append(model)
        total += model_input.facts_of(model)[1]
        totals.append(total)
    previous.dumps.extend(dumps[same:])
    previous.checked = None
    return previous
