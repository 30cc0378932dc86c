"""The redaction registry (core/redact.py): which values are secrets, which shapes are
caught, JSON text stays valid, and a secret split across streamed pieces never shows."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tunacode_lsp.core.redact import REDACTED, Redactor, StreamRedactor, names_a_secret, secrets_from

ENV = {
    "OPENAI_API_KEY": "sk-test-abcdefghijklmnop1234",
    "GITHUB_TOKEN": "ghs_" + "A1b2" * 9,
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "NPM_TOKEN": "npm_" + "x9" * 18,
    "DB_PASSWORD": 'pa ss"wo\\rd-42',
    "SLACK_AUTH": "some-auth-value-77",
    "MY_CREDENTIALS_JSON": '{"k": "v-123456"}',
    # not secrets: a name, a number, a flag, a short value, an existing path
    "GIT_AUTHOR_NAME": "Jane Q. Developer",
    "MAX_TOKENS": "100000000",
    "USE_KEYRING": "true",
    "API_KEY_ID": "abc",
    "SSH_AUTH_SOCK": "/tmp",
}
REDACTOR = Redactor(secrets_from(ENV))


def test_which_environment_values_are_secrets():
    found = set(secrets_from(ENV))
    for name in ("OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "NPM_TOKEN", "DB_PASSWORD", "SLACK_AUTH",
                 "MY_CREDENTIALS_JSON"):
        assert ENV[name] in found, name
    for name in ("GIT_AUTHOR_NAME", "MAX_TOKENS", "USE_KEYRING", "API_KEY_ID", "SSH_AUTH_SOCK"):
        assert ENV[name] not in found, name
    assert names_a_secret("x_passwd") and names_a_secret("OAUTH_CLIENT") and not names_a_secret("GIT_AUTHOR_EMAIL")


SHAPES = [
    "ghp_" + "a" * 36, "gho_" + "B" * 36, "ghs_" + "c1" * 18, "ghu_" + "D" * 36, "github_pat_" + "11ABC_" * 10,
    "AKIAIOSFODNN7EXAMPLE", "ASIA" + "Z" * 16, "npm_" + "q" * 36, "xoxb-1234567890-abcdef", "xoxp-12345678901",
    "sk-abcdefghij0123456789", "sk-ant-api03-" + "x" * 40 + "9", "sk-proj-" + "a1" * 20, "glpat-" + "z" * 20,
    "AIza" + "Sy" * 17 + "x", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
    "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD6fakefakefakefakefakefakefake+AbC/dEf==",
    "FwoGZXIvYXdzEBYaDFakeFakeFakeFakeFakeFakeFakeFakeFakeFakeFakeFakeFake0123",
]


@pytest.mark.parametrize("token", SHAPES)
def test_token_shapes_are_caught_in_text_and_in_json(token):
    redactor = Redactor([])
    assert redactor.text(f"use {token} now") == f"use {REDACTED} now"
    encoded = json.dumps({"t": f"line\n{token}\n"})
    assert token not in json.loads(redactor.text(encoded))["t"]


@pytest.mark.parametrize("text", ["task-management-tool-for-teams", "risk-assessment-framework-doc", "AKIAB", "ghp_short",
                                  "the sk-learn library", "Authorization: see below"])
def test_ordinary_text_is_left_alone(text):
    assert Redactor([]).text(text) == text


def test_git_credential_headers_and_url_passwords():
    header = base64.b64encode(b"x-access-token:ghs_abcdefghijklmnopqrstuvwxyz0123456789").decode()
    config = f'[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic {header}\n'
    assert Redactor([]).text(config) == f'[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic {REDACTED}\n'
    assert Redactor([]).text("https://x-access-token:s3cret@github.com/o/r") == f"https://x-access-token:{REDACTED}@github.com/o/r"


def test_a_known_secret_is_caught_inside_base64_at_any_alignment():
    secret = ENV["AWS_SECRET_ACCESS_KEY"]
    for prefix in ("", "u:", "ab:", "x-access-token:"):
        encoded = base64.b64encode(f"{prefix}{secret}".encode()).decode()
        assert REDACTED in REDACTOR.text(encoded)


@given(st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=400))
@settings(max_examples=150, deadline=None)
def test_a_secret_split_across_pieces_never_shows(cuts):
    text = (f"key {ENV['OPENAI_API_KEY']}, token={ENV['GITHUB_TOKEN']} pw {ENV['DB_PASSWORD']}!\n"
            f"Authorization: Bearer abcdefghijklmnop0123 and {SHAPES[5]} https://u:pw12345@h/ {SHAPES[-1]} "
            f"{ENV['AWS_SECRET_ACCESS_KEY']} done")
    stream, out, position = StreamRedactor(REDACTOR), [], 0
    for cut in cuts:
        if position >= len(text):
            break
        out.append(stream.feed(text[position:position + cut]))
        position += cut
    out.append(stream.feed(text[position:]))
    out.append(stream.flush())
    assert "".join(out) == REDACTOR.text(text)


def test_plain_words_stream_live():
    stream = StreamRedactor(REDACTOR)
    pieces = [stream.feed(c) for c in "Hello world, this is fine. "]
    assert sum(1 for p in pieces if p) >= 10  # not held back a word at a time


def test_attrs_instances_in_data_are_redacted_field_by_field():
    """`Redactor.value` reaches into attrs instances (both the `attrs` and the older `attr`
    API), though the module imports attrs only when one is met (start-up: the `run` client
    imports it before it spawns the server)."""

    import attr
    import attrs

    @attrs.frozen
    class Item:
        text: str
        nested: list[str]
        count: int = 3

    @attr.s(auto_attribs=True)
    class Old:
        value: str

    secret = ENV["OPENAI_API_KEY"]
    item = Item(f"key {secret} here", ["ok", secret])
    clean = REDACTOR.value({"item": item, "old": Old(secret)})
    assert clean["item"] == Item(f"key {REDACTED} here", ["ok", REDACTED])
    assert clean["old"].value == REDACTED
    plain = Item("nothing", ["here"])
    assert REDACTOR.value(plain) is plain  # unchanged: the same object
