"""Errors a tool raises; tinyagent turns each into an error tool result with str(exc)."""

from __future__ import annotations


class ToolError(Exception):
    """A tool failed: the message says what went wrong and what the model can do about it."""


def retry_hint(problem: str, fix: str) -> str:
    """The one wording of an error that asks the model to call again: what was wrong, what to
    change, and that calling again is expected (the seeds' ToolRetryError)."""

    return f"{problem.rstrip('. ')}. {fix[:1].upper()}{fix[1:].rstrip('. ')}, then call the tool again."


class ToolCancelled(ToolError):
    """The user aborted the request while the tool was running."""

    def __init__(self, message: str = "cancelled by the user") -> None:
        super().__init__(message)
