"""`Redactor.value` checks JSON data in one pass over its JSON text before it walks it string
by string (issue 35): data in which nothing can match comes back as it is, and whatever the
data holds, the result equals redacting every string (keys too) one by one."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tunacode_lsp.core.redact import REDACTED, Redactor, secrets_from

ENV = {
    "OPENAI_API_KEY": "sk-test-abcdefghijklmnop1234",
    "DB_PASSWORD": 'pa ss"wo\\rd-42',  # escaped in JSON text: the one-pass check is off for it
    "SERVICE_TOKEN": "zq7-Wé-ünïcode-value-91",  # non-ASCII: orjson and json both keep it as it is
    "PLAIN_SECRET": "plainsecretvalue42",
}
QUOTED = Redactor(secrets_from(ENV))
UNQUOTED = Redactor(secrets_from({k: v for k, v in ENV.items() if k != "DB_PASSWORD"}))

MESSAGE = {
    "role": "toolResult",
    "content": [{"type": "text", "text": "line one\nline \"two\"\tand ünïcode ✓\n" * 200}],
    "details": {"exit": 0, "lines": [1, 2, 3], "ok": True, "none": None, "ratio": 0.5},
}


def by_string(redactor: Redactor, obj):
    """The reference: every string (and string key) redacted on its own."""

    if isinstance(obj, str):
        return redactor.text(obj)
    if isinstance(obj, dict):
        return {redactor.text(k) if isinstance(k, str) else k: by_string(redactor, v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [by_string(redactor, v) for v in obj]
    return obj


@pytest.mark.parametrize("encoder", ["orjson", "json"])
def test_data_with_nothing_to_redact_comes_back_as_it_is(encoder, monkeypatch):
    if encoder == "json":
        monkeypatch.delitem(sys.modules, "orjson", raising=False)
    else:
        import orjson  # noqa: F401 - the store loads it in the server

    assert UNQUOTED.value(MESSAGE) is MESSAGE  # one pass, no copy (before: a copy, string by string)
    assert UNQUOTED.value([MESSAGE]) == [MESSAGE]


@pytest.mark.parametrize("encoder", ["orjson", "json"])
def test_a_secret_anywhere_is_still_found(encoder, monkeypatch):
    if encoder == "json":
        monkeypatch.delitem(sys.modules, "orjson", raising=False)
    else:
        import orjson  # noqa: F401

    for secret in (ENV["OPENAI_API_KEY"], ENV["SERVICE_TOKEN"], ENV["PLAIN_SECRET"], "ghp_" + "Z9" * 18):
        data = {"a": [{"deep": {"x": f"before {secret} after"}}], f"key {secret}": 1}
        clean = UNQUOTED.value(data)
        assert clean == by_string(UNQUOTED, data)
        assert secret not in repr(clean) and REDACTED in clean["a"][0]["deep"]["x"]


def test_a_secret_that_json_escapes_is_found_by_the_walk():
    secret = ENV["DB_PASSWORD"]
    data = {"text": f"password={secret}!", "list": [secret]}
    assert QUOTED.value(data) == {"text": f"password={REDACTED}!", "list": [REDACTED]}


def test_data_that_is_not_plain_json_is_walked():
    big = 2**70  # orjson refuses it; json takes it, the check then runs on json's text
    secret = ENV["PLAIN_SECRET"]
    for data in ({1: secret, "n": big}, {"t": (secret, "x")}, {"s": "\ud800 lone " + secret}):
        clean = UNQUOTED.value(data)
        assert secret not in repr(clean)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40)
    | st.lists(st.sampled_from([*"ab \"\\\n\t-_:/@.é✓ghpsk", "sk-", "ghp_", "://u:", "@h", "uthori",
                               "AUTHORIZATION: Bearer ", "plainsecretvalue42", "AKIA", "IQoJb3JpZ2luX2"]),
               max_size=12).map("".join),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_one_pass_check_agrees_with_string_by_string(data):
    assert UNQUOTED.value(data) == by_string(UNQUOTED, data)
    assert QUOTED.value(data) == by_string(QUOTED, data)
