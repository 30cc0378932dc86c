"""Secrets replaced by `[redacted]` wherever they could surface.

The secrets are the values of the server's `*_API_KEY` variables (and `TUNACODE_API_KEY`),
at least 8 characters long. They are taken out of everything the server emits or stores:
events, request results, stored messages (so exports and the next model request), tool
results, log lines (stderr, `window/logMessage`, the log file). A provider error that echoes
the key (a 401 body) thus never shows it.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Mapping
from typing import Any

import attrs

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 8
SECRET_SUFFIX = "_API_KEY"
SECRET_NAMES = frozenset({"TUNACODE_API_KEY"})


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return upper.endswith(SECRET_SUFFIX) or upper in SECRET_NAMES


class Redactor:
    def __init__(self, secrets: list[str]) -> None:
        # longest first, so a key that contains another is replaced whole
        self._secrets = sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)

    def text(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value

    def value(self, obj: Any) -> Any:
        """Strings in JSON-like data and attrs instances, redacted (a new object only where changed)."""

        if not self._secrets:
            return obj
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {k: self.value(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.value(v) for v in obj]
        if attrs.has(type(obj)):
            changes = {}
            for field in attrs.fields(type(obj)):
                if field.init:
                    old = getattr(obj, field.name)
                    new = self.value(old)
                    if new is not old and new != old:
                        changes[field.name] = new
            return attrs.evolve(obj, **changes) if changes else obj
        return obj


def secrets_from(env: Mapping[str, str]) -> list[str]:
    return [value for name, value in env.items() if is_secret_name(name) and value.strip()]


@functools.cache
def process_redactor() -> Redactor:
    """The secrets of this process's environment (keys are configured through it)."""

    return Redactor(secrets_from(os.environ))


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
