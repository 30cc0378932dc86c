"""Usage totals and the time format of the store. A session is the contract's SessionInfo."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from tunacode_lsp.core.text import shown

USAGE_KEYS: tuple[str, ...] = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "total_tokens",
    "cost",
)
TOKEN_KEYS: tuple[str, ...] = USAGE_KEYS[:-1]
# Token counts stop at the largest integer every JSON reader keeps exactly (JavaScript's
# Number.MAX_SAFE_INTEGER): a document above it is refused, a running total saturates there.
# Without the cap SQLite turns a sum past 2**63 - 1 into a REAL, sent on as 9.2e18.
MAX_COUNT = 2**53 - 1
# the SET clause that adds a usage delta (token keys, then cost) to a session's totals
ADD_USAGE_SQL = ", ".join(f"{key} = MIN({key} + ?, {MAX_COUNT})" for key in TOKEN_KEYS) + ", cost = cost + ?"


def stored_count(value: object) -> int:
    """A token total as read from the store: an int within MAX_COUNT (a row written before
    the cap may hold a REAL or more)."""

    try:
        return max(0, min(int(value), MAX_COUNT))  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return 0


def zero_usage() -> dict[str, int | float]:
    return {**{key: 0 for key in TOKEN_KEYS}, "cost": 0.0}


def check_usage(usage: object, *, where: str = "usage") -> dict[str, int | float]:
    """A usage mapping with known keys and non-negative numbers; missing keys count 0.

    Raises ValueError naming the bad key.
    """
    if not isinstance(usage, dict):
        raise ValueError(f"{where}: expected an object, got {type(usage).__name__}")
    checked = zero_usage()
    for key, value in usage.items():
        if key not in checked:
            raise ValueError(f"{where}.{key}: unknown usage key (expected {', '.join(USAGE_KEYS)})")
        if key == "cost":
            if not _is_number(value) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{where}.{key}: expected a non-negative number, got {shown(value)}")
        elif not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{where}.{key}: expected a non-negative integer, got {shown(value)}")
        checked[key] = float(value) if key == "cost" else min(value, MAX_COUNT)
    return checked


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def now_us() -> int:
    return time.time_ns() // 1_000


def iso_from_us(us: int) -> str:
    """ISO 8601 UTC with milliseconds, e.g. 2026-11-22T02:31:50.123Z."""
    seconds, micros = divmod(us, 1_000_000)
    stamp = datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{micros // 1000:03d}Z"


def us_from_iso(text: str) -> int:
    """Parse an ISO 8601 time (naive means UTC); raises ValueError."""
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    delta = parsed - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


@dataclass(frozen=True)
class RequestCheckpointRecord:
    """One request's checkpoints: where its messages start and the workspace trees before and
    after it ('' when that checkpoint could not be taken)."""

    session_id: str
    request_id: str
    first_seq: int
    workspace: str
    before_tree: str
    after_tree: str
    started_us: int
