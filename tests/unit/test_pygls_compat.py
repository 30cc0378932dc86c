"""The pygls internals this server relies on (lsp/pygls_compat.py and the overrides in
lsp/protocol_plumbing.py) still exist with the shape we use: each assertion fails when upstream changes."""

from __future__ import annotations

import inspect

from pygls.lsp.server import LanguageServer
from pygls.progress import Progress
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol


def test_progress_registers_tokens_privately():
    assert callable(getattr(Progress, "_register_token", None))
    assert "token" in inspect.signature(Progress._register_token).parameters


def test_protocol_keeps_pending_requests_and_the_workspace():
    server = LanguageServer("t", "0")
    assert isinstance(server.protocol._request_futures, dict)
    assert hasattr(server.protocol, "_workspace") and server.protocol._workspace is None


def test_the_methods_the_server_overrides_exist():
    for name in ("structure_message", "_handle_cancel_notification", "_send_response", "send_request"):
        assert callable(getattr(JsonRPCProtocol, name, None)), name
    assert "msg_id" in inspect.signature(JsonRPCProtocol.send_request).parameters
    assert callable(getattr(LanguageServerProtocol, "lsp_initialize", None))
    assert callable(getattr(LanguageServer, "_start_io_async", None))
    assert callable(getattr(JsonRPCProtocol, "_send_data", None))  # pygls_compat.send_payload
    assert callable(getattr(JsonRPCProtocol, "handle_message", None))


def test_what_the_server_s_send_data_writes_through_exists():
    """lsp/protocol_plumbing.py TunaProtocol._send_data writes each frame itself (encoded once)."""
    server = LanguageServer("t", "0")
    protocol = server.protocol
    assert hasattr(protocol, "writer") and isinstance(protocol._include_headers, bool)
    assert callable(protocol._serialize_message) and protocol.CONTENT_TYPE and protocol.CHARSET
    assert callable(getattr(server, "_report_server_error", None))
