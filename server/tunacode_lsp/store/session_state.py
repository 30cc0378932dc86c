"""A session's state beside its messages: the model's plan and the compaction summary.

Both are stored in the `sessions` row as JSON text (schema step 2 -> 3) and travel in
the SessionDocument as optional keys `plan` and `compaction`.

- plan: `[{content, status, activeForm}]`, status one of pending | in_progress | completed.
- compaction: `{summary, firstKept}` or None. The model is sent a user message carrying
  `summary` (marked, see `summary_message`) followed by the stored messages from index
  `firstKept` on; the stored messages themselves are all kept.

The `request_ends` rows (each request's events after its last stored message, for the
replay) travel as the optional key `request_ends`: `[{request_id, at_seq, events}]`.
"""

from __future__ import annotations

import json
from typing import Any

from tunacode_lsp.store.errors import DocumentError

PLAN_STATUSES = ("pending", "in_progress", "completed")
SUMMARY_MARK = "compaction"  # the key that marks the summary message in what the model is sent
SUMMARY_HEADER = "[Summary of the earlier conversation, written when it was compacted]\n\n"
MAX_PLAN_ITEMS = 200


def check_plan(plan: object, *, where: str = "plan") -> list[dict[str, str]]:
    if not isinstance(plan, list) or len(plan) > MAX_PLAN_ITEMS:
        raise DocumentError(f"{where}: expected a list of at most {MAX_PLAN_ITEMS} items")
    items = []
    for index, item in enumerate(plan):
        if not isinstance(item, dict):
            raise DocumentError(f"{where}[{index}]: expected an object")
        fields = {key: item.get(key) for key in ("content", "status", "activeForm")}
        if not all(isinstance(value, str) for value in fields.values()):
            raise DocumentError(f"{where}[{index}]: content, status and activeForm must be strings")
        if fields["status"] not in PLAN_STATUSES:
            raise DocumentError(f"{where}[{index}].status: one of {', '.join(PLAN_STATUSES)}")
        items.append({key: str(value) for key, value in fields.items()})
    return items


def check_compaction(compaction: object, *, where: str = "compaction") -> dict[str, Any] | None:
    if compaction is None:
        return None
    if not isinstance(compaction, dict):
        raise DocumentError(f"{where}: expected an object or null")
    summary, first = compaction.get("summary"), compaction.get("firstKept")
    if not isinstance(summary, str) or not summary:
        raise DocumentError(f"{where}.summary: expected a non-empty string")
    if not isinstance(first, int) or isinstance(first, bool) or first < 0:
        raise DocumentError(f"{where}.firstKept: expected a non-negative integer")
    return {"summary": summary, "firstKept": first}


def encode_state(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def decode_plan(text: str) -> list[dict[str, str]]:
    try:
        return check_plan(json.loads(text or "[]"))
    except (ValueError, DocumentError):
        return []  # an unreadable plan is no plan; the messages are what matters


def decode_compaction(text: str) -> dict[str, Any] | None:
    try:
        return check_compaction(json.loads(text)) if text else None
    except (ValueError, DocumentError):
        return None


def summary_message(summary: str) -> dict[str, Any]:
    """The marked user message that stands for the compacted turns in what the model is sent."""
    return {"role": "user", "content": [{"type": "text", "text": SUMMARY_HEADER + summary}], "timestamp": 0,
            SUMMARY_MARK: True}


def compacted_view(messages: list[dict[str, Any]], compaction: dict[str, Any] | None) -> list[dict[str, Any]]:
    """What the model is sent of `messages` under `compaction` (not yet cleaned)."""
    if compaction is None:
        return messages
    first = min(compaction["firstKept"], len(messages))
    return [summary_message(compaction["summary"]), *messages[first:]]


MAX_REQUEST_ENDS = 100_000  # rows of an imported document's request_ends
MAX_REQUEST_ID = 200  # characters of a request id


def check_request_ends(value: object, message_count: int, *, where: str = "request_ends") -> list[tuple[str, int, list[dict[str, Any]]]]:
    """[{request_id, at_seq, events}] of a SessionDocument as rows; each event an object
    (its shape is checked when it is projected: agent/projection.py keeps contract events only)."""
    if not isinstance(value, list) or len(value) > MAX_REQUEST_ENDS:
        raise DocumentError(f"{where}: expected a list of at most {MAX_REQUEST_ENDS} items")
    rows = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise DocumentError(f"{where}[{index}]: expected an object")
        request_id, at_seq, events = item.get("request_id"), item.get("at_seq"), item.get("events")
        if not isinstance(request_id, str) or not request_id or len(request_id) > MAX_REQUEST_ID:
            raise DocumentError(f"{where}[{index}].request_id: expected a non-empty string of at most {MAX_REQUEST_ID} characters")
        if not isinstance(at_seq, int) or isinstance(at_seq, bool) or not 0 <= at_seq <= message_count:
            raise DocumentError(f"{where}[{index}].at_seq: expected an integer from 0 to {message_count} (the message count)")
        if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
            raise DocumentError(f"{where}[{index}].events: expected a list of objects")
        rows.append((request_id, at_seq, events))
    return rows
