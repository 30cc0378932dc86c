"""Logging: stderr always, `window/logMessage` once a client is attached, a file when asked.

stdout belongs to the protocol, so nothing here ever writes to it.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from lsprotocol import types

from tunacode_lsp.core.redact import RedactingFilter
from tunacode_lsp.store.locations import data_dir

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class ClientLogHandler(logging.Handler):
    """Forwards our own log records (not pygls's chatter) to the client as window/logMessage."""

    _TYPES = {
        logging.ERROR: types.MessageType.Error,
        logging.WARNING: types.MessageType.Warning,
        logging.INFO: types.MessageType.Info,
    }

    def __init__(self, server) -> None:
        super().__init__(logging.INFO)
        self._server = server
        self._emitting = False

    def emit(self, record: logging.LogRecord) -> None:
        if self._emitting or self._server.protocol.writer is None:
            return
        self._emitting = True  # sending may log; never recurse
        try:
            kind = self._TYPES.get(record.levelno, types.MessageType.Log)
            self._server.window_log_message(types.LogMessageParams(type=kind, message=self.format(record)))
        except Exception:
            pass
        finally:
            self._emitting = False


STDERR_HANDLER = "tunacode-stderr"


class ExpectedRpcErrors(logging.Filter):
    """pygls logs a full traceback for every JSON-RPC error a handler returns; for the
    contract's own answers (bad params, unknown or busy session, unusable model, cancelled)
    that is noise that hides real faults."""

    EXPECTED = frozenset({-32602, -32001, -32002, -32003, -32800})

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return getattr(exc, "code", None) not in self.EXPECTED


def set_stderr_level(level: str) -> None:
    """The `logLevel` setting. The root logger gets the same level, so records nobody would
    keep are never built (httpcore alone makes dozens per model call at DEBUG)."""

    value = LEVELS.get(level, logging.INFO)
    root = logging.getLogger()
    root.setLevel(value)
    for handler in root.handlers:
        handler.setLevel(value)
    # pygls logs every message it sends, httpx every request: only when debugging
    chatty = logging.DEBUG if value <= logging.DEBUG else logging.WARNING
    for name in ("pygls", "httpx", "httpcore"):
        logging.getLogger(name).setLevel(chatty)


def setup_logging(level: str = "info", *, server=None, log_file: bool = False) -> Path | None:
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    stderr = logging.StreamHandler(sys.stderr)
    stderr.set_name(STDERR_HANDLER)
    stderr.setFormatter(logging.Formatter(FORMAT))
    stderr.addFilter(RedactingFilter())
    root.addHandler(stderr)
    set_stderr_level(level)
    logging.getLogger("pygls.protocol.json_rpc").addFilter(ExpectedRpcErrors())
    ours = logging.getLogger("tunacode_lsp")
    if server is not None:
        client = ClientLogHandler(server)
        client.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        client.addFilter(RedactingFilter())
        ours.addHandler(client)
    return enable_log_file() if log_file else None


def enable_log_file() -> Path:
    """Also log to $TUNACODE_HOME/server.log (default under XDG_DATA_HOME); idempotent."""

    path = data_dir() / "server.log"
    root = logging.getLogger()
    for handler in root.handlers:
        if isinstance(handler, logging.FileHandler) and Path(handler.baseFilename) == path.resolve():
            return path
    path.parent.mkdir(parents=True, exist_ok=True)
    file_handler = logging.FileHandler(path, encoding="utf-8")
    file_handler.setLevel(root.level)
    file_handler.setFormatter(logging.Formatter(FORMAT))
    file_handler.addFilter(RedactingFilter())
    root.addHandler(file_handler)
    return path
