"""The error a service raises with one of the contract's JSON-RPC codes.

Protocol-neutral: the LSP layer turns it into a JSON-RPC error response, ACP into its own.
"""

from __future__ import annotations


class CommandError(Exception):
    """A failure the client is told about with one of the contract's codes and a message."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data  # the JSON-RPC error's `data`, when the contract gives it one
