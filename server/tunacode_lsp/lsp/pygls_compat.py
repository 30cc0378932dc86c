"""Every use of pygls internals, in one place; tests/unit/test_pygls_compat.py fails when
upstream changes any of them.

pygls 2.1 gives no public way to: register a progress token created by a request we sent
ourselves (with a bounded wait); drop a pending server->client request we stopped waiting
for; know whether `initialize` has run.
"""

from __future__ import annotations

from typing import Any

from pygls.lsp.server import LanguageServer


def register_progress_token(ls: LanguageServer, token: Any) -> None:
    """What `Progress.create_async` does after the client answered."""

    ls.work_done_progress._register_token(token)


def drop_pending_request(ls: LanguageServer, msg_id: Any) -> None:
    """Forget a request we sent, so its late answer is taken quietly."""

    ls.protocol._request_futures.pop(msg_id, None)


def send_payload(protocol: Any, payload: dict[str, Any]) -> None:
    """Write one raw JSON-RPC object (an error response pygls would not build)."""

    protocol._send_data(payload)


def resolve_raw_answer(protocol: Any, msg_id: Any, result: Any) -> None:
    """Complete a pending server->client request with the client's answer as it came."""

    future = protocol._request_futures.pop(msg_id, None)
    if future is not None and not future.done():
        future.set_result(result)


def workspace_ready(ls: LanguageServer) -> bool:
    """`initialize` has set up the workspace (before it, `ls.workspace` raises)."""

    return ls.protocol._workspace is not None
