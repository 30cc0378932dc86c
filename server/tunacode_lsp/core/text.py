"""Bounding text for messages, summaries and errors: one place, one ellipsis ("…").

Input is echoed to users and models only in bounded form: `shown` for a value quoted in an
error message, `clip` for a one-line label.
"""

from __future__ import annotations

import json
import re
from typing import Any

SHOWN_CHARS = 80
ELLIPSIS = "…"


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """repr(value) for a message, cut to about `limit` characters: input is echoed, never in bulk."""

    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}{ELLIPSIS} ({len(text):,} characters)"


def clip(text: str, limit: int) -> str:
    """`text` if it fits in `limit` characters, else its first `limit - 1` and an ellipsis."""

    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + ELLIPSIS


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def loads_text(text: str) -> Any:
    """json.loads for what a model sends: a lone surrogate (`"\\ud800"` is valid JSON, but no
    UTF-8 can hold it) becomes U+FFFD, so the text can be stored and sent on (raises ValueError
    as json.loads does)."""

    value = json.loads(text)
    return _replace_surrogates(value) if _SURROGATE_ESCAPE.search(text) else value


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_replace_surrogates(key): _replace_surrogates(item) for key, item in value.items()}
    return value
