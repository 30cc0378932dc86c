"""The shared HTTP client's TLS context, with its certificate store loaded on the first TLS
connection instead of when the client is made.

httpx builds its default context (`ssl.create_default_context(cafile=certifi.where())`) when a
client is created: ~40 ms of CPU holding the GIL, paid by the first model call of every
server even when the endpoint is `http://` (a local server, the scripted model) and no TLS
connection is ever made. This context is the same (the client's protocol, hostname check
and certificate requirement from the start; `SSL_CERT_FILE` / `SSL_CERT_DIR` honoured as httpx
does; `SSLKEYLOGFILE` as `ssl.create_default_context`); its trust anchors are loaded before
its first handshake object is made. Nothing is trusted before that: a handshake without them
fails, it is never unverified.
"""

from __future__ import annotations

import os
import ssl
import threading
from typing import Any


class LazyTrustContext(ssl.SSLContext):
    """A client context that verifies peers, loading its CA certificates on first use."""

    _trust_lock = threading.Lock()
    _trust_loaded = False

    def _load_trust(self) -> None:
        if self._trust_loaded:
            return
        with self._trust_lock:
            if self._trust_loaded:
                return
            if os.environ.get("SSL_CERT_FILE"):  # httpx's own order (trust_env)
                self.load_verify_locations(cafile=os.environ["SSL_CERT_FILE"])
            elif os.environ.get("SSL_CERT_DIR"):
                self.load_verify_locations(capath=os.environ["SSL_CERT_DIR"])
            else:
                import certifi

                self.load_verify_locations(cafile=certifi.where())
            self._trust_loaded = True

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:  # asyncio/anyio TLS
        self._load_trust()
        return super().wrap_bio(*args, **kwargs)

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:  # blocking sockets
        self._load_trust()
        return super().wrap_socket(*args, **kwargs)


def lazy_trust_context() -> ssl.SSLContext:
    """What `httpx.create_ssl_context(verify=True)` makes, its certificate store loaded on first use."""

    context = LazyTrustContext(ssl.PROTOCOL_TLS_CLIENT)  # check_hostname and CERT_REQUIRED from the start
    keylog = os.environ.get("SSLKEYLOGFILE")
    if keylog and hasattr(context, "keylog_filename"):
        context.keylog_filename = keylog
    return context
