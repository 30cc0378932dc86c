"""Bounding text for messages, summaries and errors: one place, one ellipsis ("…").

Input is echoed to users and models only in bounded form: `shown` for a value quoted in an
error message, `clip` for a one-line label.
"""

from __future__ import annotations

SHOWN_CHARS = 80
ELLIPSIS = "…"


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """repr(value) for a message, cut to about `limit` characters: input is echoed, never in bulk."""

    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}{ELLIPSIS} ({len(text):,} characters)"


def clip(text: str, limit: int) -> str:
    """`text` if it fits in `limit` characters, else its first `limit - 1` and an ellipsis."""

    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + ELLIPSIS
