"""Errors a tool raises; tinyagent turns each into an error tool result with str(exc)."""

from __future__ import annotations


class ToolError(Exception):
    """A tool failed: the message says what went wrong and what the model can do about it."""


class ToolCancelled(ToolError):
    """The user aborted the request while the tool was running."""

    def __init__(self, message: str = "cancelled by the user") -> None:
        super().__init__(message)
