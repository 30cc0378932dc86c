"""How big a store call's arguments are (agent/sessions.py `_text_size`), which decides whether
it runs on the event loop: with orjson loaded, the length of their JSON, never less than the
characters of their strings (so a call over QUICK_MAX_CHARS never runs on the loop)."""

from __future__ import annotations

import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from tunacode_lsp.agent import sessions as sessions_module

LIMIT = sessions_module.QUICK_MAX_CHARS


def characters(value) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(characters(k) + characters(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(characters(v) for v in value)
    return 0


data = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**62), 2**62) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(data)
def test_the_size_is_never_below_the_strings_characters(value):
    import orjson  # noqa: F401 - the store loads it in the server

    args = (("session", [value]), {"thoughts": None, "model": "m"})
    assert sessions_module._text_size(args, LIMIT) >= characters(args)


def test_what_orjson_refuses_is_counted_string_by_string(monkeypatch):
    import orjson  # noqa: F401

    value = ({1: "x" * 10, "big": 2**70}, {"t": ("é" * 5,)})
    assert sessions_module._text_size(value, LIMIT) == 10 + len("big") + len("t") + 5
    monkeypatch.delitem(sys.modules, "orjson")
    assert sessions_module._text_size(value, LIMIT) == 10 + len("big") + len("t") + 5


def test_a_message_just_over_the_limit_in_any_script_is_large():
    import orjson  # noqa: F401

    for char in ("x", "é", "✓", "😀"):
        message = {"role": "user", "content": [{"type": "text", "text": char * (LIMIT + 1)}]}
        assert sessions_module._text_size((("s", [message]), {}), LIMIT) > LIMIT
