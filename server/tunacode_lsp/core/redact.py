"""The one redaction registry: every secret the server knows of, replaced by `[redacted]`.

What counts as a secret (docs/tools.md "What is redacted"):

- every configured key: the value of any `*_API_KEY` variable and `TUNACODE_API_KEY`;
- the value of every environment variable whose name contains KEY, TOKEN, SECRET,
  PASSWORD, PASSWD, AUTH (not AUTHOR: `GIT_AUTHOR_NAME` is a name) or CREDENTIAL, unless
  the value is trivial: shorter than 8 characters, a number, `true`/`false`-like, or the
  path of an existing file or folder (`SSH_AUTH_SOCK`, `GOOGLE_APPLICATION_CREDENTIALS`
  name where a secret is, they are not one);
- well-known token shapes, wherever they come from (`TOKEN_SHAPES`): GitHub (`ghp_`,
  `gho_`, `ghs_`, `ghu_`, `ghr_`, `github_pat_`), AWS access key ids (`AKIA`/`ASIA` + 16),
  npm (`npm_`), Slack (`xoxa-`, `xoxb-`, `xoxp-`, `xoxr-`, `xoxs-`), OpenAI / Anthropic /
  OpenRouter style (`sk-...`, `sk-ant-...`, `sk-proj-...`), GitLab (`glpat-`), Google API
  keys (`AIza`), Google OAuth access tokens (`ya29.`, Vertex's, minted at run time), AWS STS
  session tokens (`IQoJb3JpZ2luX2`, `FwoGZXIvYXdz`), JSON web tokens (three base64url parts,
  the first `eyJ`), PEM private keys;
- credentials in transit: the value of an `Authorization: Basic|Bearer|Token ...` header (the
  `extraheader` actions/checkout leaves in `.git/config`) and the password of a URL
  (`https://user:password@host`).

Each secret is also matched in its JSON-escaped form and inside base64 (`base64_cores`), and no pattern spans a `"` or `\\`,
so `Redactor.text` may be applied to JSON text (a store row, a wire message) as well as to
plain text, and its output stays valid JSON.

Where it is applied, one choke point per output channel: the agent's sink (events,
streamed deltas held back at a possible secret's start, see `StreamRedactor`), the LSP and
ACP writers (every outgoing message but the file edits a client is asked to apply), the
store's write transaction (every row), the log handlers, tool results before the model sees
them, and `sessions export`.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import os
import re
import sys
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 8
SECRET_SUFFIX = "_API_KEY"
SECRET_NAMES = frozenset({"TUNACODE_API_KEY"})
# a name that says it holds a secret; AUTH but not AUTHOR (GIT_AUTHOR_NAME, GIT_AUTHOR_EMAIL)
SECRET_NAME_WORDS = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|AUTH(?!OR)|CREDENTIAL", re.IGNORECASE)
TRIVIAL_VALUES = frozenset({"true", "false", "yes", "no", "none", "null", "undefined", "disabled", "enabled"})
NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")

# Token shapes: each a regex whose characters never include `"` or `\`, so it works on JSON text.
_LEFT = r"(?:(?<![A-Za-z0-9])|(?<=\\[nrt]))"  # a word start; `\n` of JSON text counts as a break
TOKEN_SHAPES: dict[str, str] = {
    "github": r"(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{40,255})",
    "aws-access-key-id": r"(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])",
    "npm": r"npm_[A-Za-z0-9]{36}",
    "slack": r"xox[abprs]-[A-Za-z0-9-]{10,}",
    "gitlab": r"glpat-[A-Za-z0-9_-]{20,}",
    "google-api-key": r"AIza[A-Za-z0-9_-]{35}",
    # a Google OAuth access token (Vertex's, minted at run time: in no environment variable)
    "google-oauth-token": r"ya29\.[A-Za-z0-9_.-]{20,}",
    # an AWS STS session token (X-Amz-Security-Token; from ~/.aws/credentials, in no environment
    # variable): base64 that starts with the encoding of its fixed header
    "aws-session-token": r"(?:IQoJb3JpZ2luX2|FwoGZXIvYXdz)[A-Za-z0-9+/]{40,}={0,2}",
    # sk-..., sk-ant-api03-..., sk-proj-..., sk-or-v1-...: 20+ characters with a digit in them
    "sk": _LEFT + r"sk-(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{20,}",
    "jwt": r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    "private-key": r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:[^\"\\]|\\[nr])*?-----END [A-Z ]*PRIVATE KEY-----",
}
# Credentials in transit: the group named `secret` is replaced, the rest kept (so the reader
# sees that a header or password was there).
CREDENTIAL_SHAPES: dict[str, str] = {
    "authorization-header": r"(?i:authori[sz]ation)\s*[:=]\s*(?i:basic|bearer|token)\s+(?P<secret>[A-Za-z0-9+/=._~-]{8,})",
    "url-password": r"(?<=://)[^/\s:@\"\\]{1,256}:(?P<secret>[^/\s@\"\\]{1,256})(?=@)",
}
PATTERN = re.compile("|".join(f"(?:{p})" for p in TOKEN_SHAPES.values()))
CREDENTIAL_PATTERNS = [re.compile(p) for p in CREDENTIAL_SHAPES.values()]
_AUTHORIZATION, _URL_PASSWORD = CREDENTIAL_PATTERNS
# a token shape can only match where one of these stands (checked before any regex runs)
TOKEN_HINTS = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "ASIA", "npm_", "xox", "glpat-", "AIza", "ya29.",
               "IQoJb3JpZ2luX2", "FwoGZXIvYXdz", "sk-", "eyJ", "PRIVATE KEY-----")

# What the stream redactor holds back at the end of what it has seen so far: from where a token
# may start in the word being written (it may still grow), or a header whose value may still come.
_TRAILING_WORD = re.compile(r"[^\s\"'`<>()\[\]{},;|]*\Z")
_HEADER_LEAD_IN = re.compile(r"(?i:authori[sz]ation)\s*[:=]?\s*(?:[A-Za-z]{0,6}\s*)?[A-Za-z0-9+/=._~-]*\Z")
_PEM_BEGIN = "-----BEGIN"
_PEM_END = re.compile(r"-----END[A-Z ]*-----")
# the starts of the token shapes: a word that holds one (or ends in a part of one) is held back
# until it ends; (prefix, hold the whole word)
HOLD_PREFIXES: tuple[tuple[str, bool], ...] = (
    *((p, False) for p in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "ASIA", "npm_", "xoxa-",
                           "xoxb-", "xoxp-", "xoxr-", "xoxs-", "glpat-", "AIza", "ya29.", "IQoJb3JpZ2luX2", "FwoGZXIvYXdz",
                           "sk-", "eyJ", "-----BEGIN")),
    ("://", True),
    ("authorization", True),
    ("authorisation", True),
)
_JSON_ESCAPED = re.compile(r'["\\\x00-\x1f]')  # what orjson and json write escaped in a string
_CASELESS_PREFIXES = frozenset({"authorization", "authorisation"})
MAX_HOLD_CHARS = 8_192  # a stream holds back at most this much (a longer "word" is let through, redacted)


def is_secret_name(name: str) -> bool:
    """A configured key's variable (`*_API_KEY`, `TUNACODE_API_KEY`): never given to the shell."""

    upper = name.upper()
    return upper.endswith(SECRET_SUFFIX) or upper in SECRET_NAMES


def names_a_secret(name: str) -> bool:
    """A variable whose name says it holds a secret (KEY, TOKEN, SECRET, PASSWORD, AUTH, CREDENTIAL)."""

    return is_secret_name(name) or SECRET_NAME_WORDS.search(name) is not None


def is_trivial_value(value: str) -> bool:
    """Too short or too common to be a secret: redacting it would blank ordinary text."""

    value = value.strip()
    if len(value) < MIN_SECRET_CHARS or value.lower() in TRIVIAL_VALUES or NUMBER.fullmatch(value):
        return True
    if len(set(value)) < 3:  # "xxxxxxxx", "--------"
        return True
    return value.startswith("/") and "\n" not in value and os.path.exists(value)


def base64_cores(secret: str) -> set[str]:
    """The parts of the secret's base64 that do not depend on what stands around it, at each
    of the three alignments: one of them is in any base64 text that encodes the secret (an
    `Authorization: Basic` value of `user:secret`, a token in a config file)."""

    raw = secret.encode()
    cores = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode()
        start = 4 if shift else 0
        end = len(encoded) - (4 if (shift + len(raw)) % 3 else 0)
        core = encoded[start:end]
        if len(core) >= 2 * MIN_SECRET_CHARS:
            cores.add(core)
    return cores


def _escaped_forms(secret: str) -> set[str]:
    forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1], *base64_cores(secret)}
    return {f for f in forms if len(f) >= MIN_SECRET_CHARS}


class Redactor:
    def __init__(self, secrets: Iterable[str]) -> None:
        kept = {s for s in secrets if len(s) >= MIN_SECRET_CHARS}
        forms = set().union(*(_escaped_forms(s) for s in kept)) if kept else set()
        # longest first, so a key that contains another is replaced whole
        self._secrets = sorted(forms, key=len, reverse=True)
        self._literal = re.compile("|".join(re.escape(s) for s in self._secrets)) if self._secrets else None
        self._by_first: dict[str, list[str]] = {}
        for secret in self._secrets:
            self._by_first.setdefault(secret[0], []).append(secret)
        self._longest = len(self._secrets[0]) if self._secrets else 0
        # a secret with a character JSON escapes stands in JSON text only in its escaped form,
        # which orjson and json may spell differently: no one-pass check then (`value`)
        self._json_checkable = not any(_JSON_ESCAPED.search(s) for s in kept)

    @property
    def secrets(self) -> list[str]:
        return list(self._secrets)

    def text(self, value: str) -> str:
        for pattern in self._patterns_for(value):
            if pattern is PATTERN or pattern is self._literal:
                value = pattern.sub(REDACTED, value)
            else:  # a credential's value goes, its header or user stays
                value = pattern.sub(_keep_all_but_secret, value)
        return value

    def _patterns_for(self, value: str) -> list[re.Pattern[str]]:
        """The patterns that can match in `value`, in the order they are applied (credentials
        first: a header's whole value goes, not the part a literal covers). Cheap substring
        checks first: most text holds nothing to redact and then costs no regex at all."""

        found: list[re.Pattern[str]] = []
        if "://" in value:
            found.append(_URL_PASSWORD)
        if "uthori" in value or "UTHORI" in value or "uthori" in value.lower():
            found.append(_AUTHORIZATION)
        if self._literal is not None and any(secret in value for secret in self._secrets):
            found.append(self._literal)
        if any(hint in value for hint in TOKEN_HINTS):
            found.append(PATTERN)
        return found

    def value(self, obj: Any) -> Any:
        """Strings in JSON-like data and attrs instances, redacted (a new object only where
        changed; JSON data in which nothing can match is returned as it is)."""

        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict | list) and self._nothing_in_json(obj):
            return obj
        return self._walk(obj)

    def _nothing_in_json(self, obj: dict[Any, Any] | list[Any]) -> bool:
        """True when no pattern can match any string of `obj` (keys too), checked in one pass
        over its JSON text, not string by string (a message of a few dozen strings: ~45 us, not
        ~100). Sound because every check of `_patterns_for` looks for text without a character
        JSON escapes, and JSON text holds each string as it is but for those (non-ASCII kept as
        UTF-8 by both encoders used here: orjson, json with ensure_ascii=False); a secret with
        such a character turns this off. False when the data is not plain JSON (the walk then)."""

        if not self._json_checkable:
            return False
        orjson = sys.modules.get("orjson")  # loaded by the store; never imported here for this
        try:
            text = orjson.dumps(obj).decode() if orjson is not None else json.dumps(obj, ensure_ascii=False)
        except (TypeError, ValueError):  # not JSON data (an attrs instance inside, a lone surrogate, ...)
            return False
        return not self._patterns_for(text)

    def _walk(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {self.text(k) if isinstance(k, str) else k: self._walk(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return type(obj)(self._walk(v) for v in obj) if isinstance(obj, list) else tuple(self._walk(v) for v in obj)
        if "attr" in sys.modules and sys.modules["attr"].has(type(obj)):  # no attrs instance exists before attrs loads
            import attrs  # not at start-up: the `run` client imports this module before it spawns the server

            changes = {}
            for field in attrs.fields(type(obj)):
                if field.init:
                    old = getattr(obj, field.name)
                    new = self.value(old)  # a field's JSON data: checked in one pass
                    if new is not old and new != old:
                        changes[field.alias or field.name] = new
            return attrs.evolve(obj, **changes) if changes else obj
        return obj

    def hold_from(self, text: str) -> int:
        """Where a possible secret starts that the next piece of `text` could complete (len: none)."""

        start = len(text)
        word = _TRAILING_WORD.search(text, max(0, len(text) - MAX_HOLD_CHARS))
        if word is not None and word.start() < len(text):
            start = word.start() + _token_start_in(text[word.start():])
        header = _HEADER_LEAD_IN.search(text, max(0, len(text) - 512))
        if header is not None:
            start = min(start, header.start())
        pem = text.rfind(_PEM_BEGIN, max(0, len(text) - MAX_HOLD_CHARS))
        if pem >= 0 and _PEM_END.search(text, pem) is None:  # a private key still being written
            start = min(start, pem)
        for at in range(max(0, len(text) - self._longest + 1), start):  # the start of a known value
            if any(secret.startswith(text[at:]) for secret in self._by_first.get(text[at], ())):
                start = at
                break
        start = max(start, len(text) - MAX_HOLD_CHARS)
        patterns = self._patterns_for(text)
        moved = True
        while moved:  # a whole match that the cut would split is held back whole
            moved = False
            for pattern in patterns:
                for match in pattern.finditer(text):
                    if match.start() < start < match.end():
                        start, moved = match.start(), True
        return start


def _token_start_in(word: str) -> int:
    """Where, in the word being written, a token shape starts or may still start (a prefix
    of `ghp_`, `AKIA`, `sk-`, ... at its end); len(word) when none can. A URL with a password
    (`://`) or a header name holds the whole word."""

    start = len(word)
    lower = word.lower()
    for prefix, whole_word in HOLD_PREFIXES:
        w = lower if prefix in _CASELESS_PREFIXES else word
        # a token shape starts a word (TOKEN_SHAPES' `_LEFT`): the end of "Working" is no `ghp_`
        at = w.find(prefix)
        while at >= 0 and not (whole_word or _starts_word(w, at)):
            at = w.find(prefix, at + 1)
        if at < 0:
            for size in range(min(len(prefix) - 1, len(w)), 0, -1):
                if w.endswith(prefix[:size]) and (whole_word or _starts_word(w, len(w) - size)):
                    at = len(w) - size
                    break
        if at >= 0:
            start = min(start, 0 if whole_word else at)
    return start


def _starts_word(text: str, at: int) -> bool:
    return at == 0 or not (text[at - 1].isascii() and text[at - 1].isalnum())


def _keep_all_but_secret(match: re.Match[str]) -> str:
    whole, offset = match.group(0), match.start()
    return whole[: match.start("secret") - offset] + REDACTED + whole[match.end("secret") - offset :]


class StreamRedactor:
    """Redacts a text that arrives in pieces (streamed deltas) so a secret split across two
    pieces is caught: each piece is released only up to where a secret could start that the
    next piece completes (the word being written, a header's value, a prefix of a known
    secret); the rest waits for the next piece or for `flush` (the message's end)."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._pending = ""

    @property
    def pending(self) -> str:
        return self._pending

    def feed(self, piece: str) -> str:
        text = self._pending + piece
        cut = self._redactor.hold_from(text)
        self._pending = text[cut:]
        return self._redactor.text(text[:cut])

    def flush(self) -> str:
        text, self._pending = self._pending, ""
        return self._redactor.text(text)


def secrets_from(env: Mapping[str, str]) -> list[str]:
    """The values of `env` that are secrets (see the module docstring)."""

    found = []
    for name, value in env.items():
        if not value.strip():
            continue
        if is_secret_name(name) or (names_a_secret(name) and not is_trivial_value(value)):
            found.append(value)
            if value.strip() != value:
                found.append(value.strip())
    return found


@functools.cache
def process_redactor() -> Redactor:
    """The secrets of this process's environment (keys are configured through it)."""

    return Redactor(secrets_from(os.environ))


def redact_text(text: str) -> str:
    return process_redactor().text(text)


def redact_value(obj: Any) -> Any:
    return process_redactor().value(obj)


def redact_message(message: Any, *, default: Callable[[Any], Any] | None = None, keep: Collection[str] = ()) -> Any:
    """A JSON-RPC message about to be written, redacted: the same object when nothing changed,
    else its JSON form with every secret taken out. A request whose method is in `keep` (a
    file edit the client is asked to apply: redacting it would corrupt the user's file) goes
    as it is."""

    method = message.get("method") if isinstance(message, dict) else getattr(message, "method", None)
    if method in keep:
        return message
    body = json.dumps(message, default=default)
    clean = process_redactor().text(body)
    return message if clean == body else json.loads(clean)


def message_json(message: Any, *, default: Callable[[Any], Any] | None = None, keep: Collection[str] = ()) -> bytes:
    """A JSON-RPC message about to be written, as UTF-8 JSON with every secret taken out (a
    request whose method is in `keep` as it is: see redact_message). Encoded once, with orjson
    when something has loaded it already (the store does, with the first request; start-up
    does not pay for it), else json; json also takes what orjson refuses (a lone surrogate,
    a key that is not a string, an integer past 64 bits). orjson writes non-ASCII text as
    UTF-8, not as `\\u` escapes: the redactor matches both forms (`_escaped_forms`)."""

    orjson = sys.modules.get("orjson")
    body: str | None = None
    if orjson is not None:
        try:
            body = orjson.dumps(message, default=default).decode()
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            body = None
    if body is None:
        body = json.dumps(message, default=default)
    method = message.get("method") if isinstance(message, dict) else getattr(message, "method", None)
    if method not in keep:
        body = process_redactor().text(body)
    return body.encode("utf-8", "surrogatepass")


class RedactingFilter(logging.Filter):
    """Redacts a log record's message (its arguments merged) before any handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        redactor = process_redactor()
        message = record.getMessage()
        clean = redactor.text(message)
        if clean != message:
            record.msg, record.args = clean, None
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None:
            text = str(exc)
            clean_exc = redactor.text(text)
            if clean_exc != text:  # the traceback would show it: keep the redacted message only
                record.msg, record.args = f"{record.getMessage()} ({type(exc).__name__}: {clean_exc})", None
                record.exc_info, record.exc_text = None, None
        return True


def redacted_record(record: logging.LogRecord) -> logging.LogRecord:
    """The record with its message (arguments merged) and exception text redacted."""

    RedactingFilter().filter(record)
    return record


def install_log_redaction() -> None:
    """Every log record this process makes is redacted as it is made, before any handler
    (ours, `basicConfig`'s, a library's) sees it: the log channel's one choke point.
    Idempotent; the entry point (`cli.main.main`) calls it first."""

    current = logging.getLogRecordFactory()
    if getattr(current, "redacting", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        return redacted_record(current(*args, **kwargs))

    factory.redacting = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)
