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


# What a person approving something must see whole: runs of blanks shown by their length,
# and every control, format (bidi overrides, zero-width) or separator character by its code
# point, so neither padding nor `\r` nor U+202E can hide part of a command.
_BLANKS = re.compile(r"[ \t]{8,}")
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def visible_blanks(text: str) -> str:
    """Runs of 8 or more blanks shown as `[400 blanks]`, so padding cannot push text out of sight."""

    return _BLANKS.sub(lambda m: f"[{len(m.group(0))} blanks]", text)


def visible_text(text: str, *, keep: str = "") -> str:
    """`visible_blanks`, and every control, invisible or bidi character (other than those in
    `keep`) and every space other than ' ' shown as `[U+202E]`: what is shown is what is there."""

    import unicodedata

    def one(char: str) -> str:
        if char in keep or char == " ":
            return char
        category = unicodedata.category(char)
        if category in _HIDDEN_CATEGORIES or (category == "Zs") or char == "\t":
            return f"[U+{ord(char):04X}]"
        return char

    return "".join(one(c) for c in visible_blanks(text))
