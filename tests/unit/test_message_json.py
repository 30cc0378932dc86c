"""core/redact.py `message_json`: the one encoding of an outgoing JSON-RPC message (issue 35:
it was encoded twice, by the redactor and again by pygls), redacted, valid JSON whatever it holds."""

from __future__ import annotations

import json

import attrs
import orjson  # noqa: F401  (loaded: message_json takes orjson when something loaded it)

from tunacode_lsp.core import redact
from tunacode_lsp.core.redact import Redactor, message_json


@attrs.define
class Params:
    text: str


def _unstructure(value: object) -> object:
    return attrs.asdict(value) if attrs.has(type(value)) else value.__dict__


def test_a_message_is_encoded_once_to_the_same_json(monkeypatch):
    monkeypatch.setattr(redact, "process_redactor", lambda: Redactor([]))
    message = {"jsonrpc": "2.0", "method": "tunacode/event", "params": {"text": "héllo ✓", "n": [1, 2.5, None, True]}}
    assert json.loads(message_json(message)) == message
    assert json.loads(message_json({"jsonrpc": "2.0", "id": 1, "result": Params("x")}, default=_unstructure)) == {
        "jsonrpc": "2.0", "id": 1, "result": {"text": "x"}}


def test_what_orjson_refuses_is_still_sent_as_valid_json(monkeypatch):
    monkeypatch.setattr(redact, "process_redactor", lambda: Redactor([]))
    for params in ({"text": "bad \udc80 byte"}, {1: "an int key"}, {"n": 2**70}):
        body = message_json({"jsonrpc": "2.0", "method": "m", "params": params})
        assert json.loads(body)["params"] == json.loads(json.dumps(params))


def test_a_secret_is_redacted_in_both_json_forms(monkeypatch):
    secret = "sécret-válue-12345"
    monkeypatch.setattr(redact, "process_redactor", lambda: Redactor([secret]))
    for params in ({"text": f"the key is {secret}"}, {"text": f"the key is {secret} \udc80"}):  # orjson, json
        body = message_json({"jsonrpc": "2.0", "method": "m", "params": params})
        assert secret.encode() not in body and b"v\\u00e1lue" not in body
        assert "[redacted]" in json.loads(body)["params"]["text"]
    kept = message_json({"jsonrpc": "2.0", "id": 3, "method": "workspace/applyEdit", "params": {"text": secret}},
                        keep={"workspace/applyEdit"})
    assert json.loads(kept)["params"]["text"] == secret
