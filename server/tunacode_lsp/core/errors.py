"""Errors of the core helpers, importable without loading tinyagent or pydantic."""

from __future__ import annotations


class MessageFormatError(ValueError):
    """A message dump is not a valid tinyagent message; `where` is the bad field's path."""

    def __init__(self, reason: str, *, where: str = "") -> None:
        super().__init__(f"{where}: {reason}" if where else reason)
        self.where = where
        self.reason = reason
