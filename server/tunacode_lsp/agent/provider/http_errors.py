"""Reading an HTTP error: Retry-After and the message inside an error body."""

from __future__ import annotations

import email.utils
import json
from datetime import UTC, datetime
from typing import Any

ERROR_DETAIL_LIMIT = 2000


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds from now: a number of seconds or an HTTP date."""

    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def error_detail_from_body(body: bytes) -> str:
    text = body.decode("utf-8", errors="replace").strip()
    try:
        payload = json.loads(text)
    except ValueError:
        return text[:ERROR_DETAIL_LIMIT]
    detail = error_detail(payload) if isinstance(payload, dict) else None
    return (detail or text)[:ERROR_DETAIL_LIMIT]


def error_detail(payload: dict[str, Any]) -> str | None:
    error = payload.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"][:ERROR_DETAIL_LIMIT]
    if isinstance(error, str):
        return error[:ERROR_DETAIL_LIMIT]
    if isinstance(payload.get("message"), str):
        return payload["message"][:ERROR_DETAIL_LIMIT]
    return json.dumps(payload)[:ERROR_DETAIL_LIMIT] if error else None
