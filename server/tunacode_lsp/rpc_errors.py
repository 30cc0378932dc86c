"""The JSON-RPC error the server's services raise with one of the contract's codes."""

from __future__ import annotations

from pygls.exceptions import JsonRpcException


class CommandError(JsonRpcException):
    """A JSON-RPC error with one of the contract's codes."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message=message, code=code)
        self.code = code
