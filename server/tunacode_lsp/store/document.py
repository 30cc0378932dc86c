"""SessionDocument: the portable JSON form of a session (export and import).

Keys, exactly: version, session_id, project_id, created_at, last_modified,
working_directory, current_model, total_tokens, session_total_usage, thoughts, messages.
Optional keys (version 1 still): `plan`, `compaction` and `request_ends` (store/session_state.py), checked
by the store on import. `parse_document` checks a document completely (before anything is
written) and names the first bad field, e.g. "messages[3].role: unknown role 'system' ...":
times between 1970 and a day from now, token counts of at most 2**53 - 1 (the largest
integer every JSON reader keeps exactly; store/records.py MAX_COUNT). Unknown extra keys
are ignored.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from tunacode_lsp.contract.protocol import SessionInfo
from tunacode_lsp.core.codec import load_message
from tunacode_lsp.core.errors import MessageFormatError
from tunacode_lsp.core.text import shown
from tunacode_lsp.store.errors import DocumentError
from tunacode_lsp.store.records import MAX_COUNT, check_usage, us_from_iso

DOCUMENT_VERSION = 1
FUTURE_SLACK_SECONDS = 86_400.0  # clocks differ between machines
DOCUMENT_KEYS: tuple[str, ...] = (
    "version",
    "session_id",
    "project_id",
    "created_at",
    "last_modified",
    "working_directory",
    "current_model",
    "total_tokens",
    "session_total_usage",
    "thoughts",
    "messages",
)

OPTIONAL_DOCUMENT_KEYS: tuple[str, ...] = ("plan", "compaction", "request_ends")  # exported always, optional on import


@dataclass(frozen=True)
class ParsedDocument:
    """A checked document, ready to store."""

    session_id: str
    project_id: str
    created_us: int
    modified_us: int
    cwd: str
    model: str
    usage: dict[str, int | float]
    thoughts: str
    messages: list[dict[str, Any]]


def build_document(
    record: SessionInfo, *, thoughts: str, messages: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "version": DOCUMENT_VERSION,
        "session_id": record.session_id,
        "project_id": record.project_id,
        "created_at": record.created_at,
        "last_modified": record.modified_at,
        "working_directory": record.cwd,
        "current_model": record.model,
        "total_tokens": record.usage.total_tokens,
        "session_total_usage": record.usage.as_store_dict(),
        "thoughts": thoughts,
        "messages": messages,
    }


def parse_document(document: object) -> ParsedDocument:
    """Check every field; raises DocumentError naming the first bad one."""
    if not isinstance(document, dict):
        raise DocumentError(f"document: expected an object, got {type(document).__name__}")
    missing = [key for key in DOCUMENT_KEYS if key not in document]
    if missing:
        raise DocumentError(f"document: missing key(s) {', '.join(missing)}")
    version = document["version"]
    if version != DOCUMENT_VERSION or isinstance(version, bool):
        raise DocumentError(f"version: unsupported version {shown(version)} (expected {DOCUMENT_VERSION})")
    total_tokens = document["total_tokens"]
    if not isinstance(total_tokens, int) or isinstance(total_tokens, bool) or total_tokens < 0:
        raise DocumentError(f"total_tokens: expected a non-negative integer, got {shown(total_tokens)}")
    try:
        usage = check_usage(document["session_total_usage"], where="session_total_usage")
    except ValueError as exc:
        raise DocumentError(str(exc)) from None
    # counts above 2**53 - 1 are refused, not stored: no JSON client reads them exactly
    # (JavaScript makes 2**63 - 1 a float), and a stored sum past 2**63 - 1 becomes a REAL
    counts = {"total_tokens": total_tokens} | {
        f"session_total_usage.{key}": value for key, value in document["session_total_usage"].items() if key != "cost"
    }
    for name, value in counts.items():
        if value > MAX_COUNT:
            raise DocumentError(f"{name}: too large ({shown(value)}; at most {MAX_COUNT}, 2**53 - 1)")
    if "total_tokens" not in document["session_total_usage"]:
        usage["total_tokens"] = total_tokens
    return ParsedDocument(
        session_id=_text(document, "session_id"),
        project_id=_text(document, "project_id", required=True),
        created_us=_time(document, "created_at"),
        modified_us=_time(document, "last_modified"),
        cwd=_text(document, "working_directory", required=True),
        model=_text(document, "current_model"),
        usage=usage,
        thoughts=_text(document, "thoughts"),
        messages=_messages(document["messages"]),
    )


def _text(document: dict[str, Any], key: str, *, required: bool = False) -> str:
    value = document[key]
    if not isinstance(value, str):
        raise DocumentError(f"{key}: expected a string, got {type(value).__name__}")
    if required and not value:
        raise DocumentError(f"{key}: must not be empty")
    return value


def _time(document: dict[str, Any], key: str) -> int:
    """A time between 1970 and a day from now: a document from year 9999 would make every
    later write of the session land in year 10000 (and break listing it)."""

    value = _text(document, key, required=True)
    try:
        us = us_from_iso(value)
    except (ValueError, OverflowError):  # OverflowError: an offset that leaves the calendar
        raise DocumentError(f"{key}: not an ISO 8601 time: {shown(value)}") from None
    latest = int((time.time() + FUTURE_SLACK_SECONDS) * 1_000_000)
    if us < 0 or us > latest:
        raise DocumentError(f"{key}: out of range (1970 up to now): {shown(value)}")
    return us


def _messages(messages: object) -> list[dict[str, Any]]:
    if not isinstance(messages, list):
        raise DocumentError(f"messages: expected a list, got {type(messages).__name__}")
    for index, message in enumerate(messages):
        try:
            load_message(message)
        except MessageFormatError as exc:
            where = f"messages[{index}]" + (f".{exc.where}" if exc.where else "")
            raise DocumentError(f"{where}: {exc.reason}") from None
    return messages
