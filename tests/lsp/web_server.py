"""A small HTTP server on 127.0.0.1 for web_fetch's tests: pages, redirects, a silent route."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGE = (
    "<html><head><title>T</title><style>body{}</style><script>alert(1)</script></head><body>"
    "<h1>Release notes</h1><p>See <a href='https://example.org/x'>the docs</a>.</p>"
    "<ul><li>one</li><li>two</li></ul></body></html>"
)


class Hits(list[str]):
    """The paths asked for; `silent_reached` is set once the silent route holds a request."""

    def __init__(self) -> None:
        super().__init__()
        self.silent_reached = threading.Event()


class Handler(BaseHTTPRequestHandler):
    hits: Hits
    silent: threading.Event

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, code: int, body: bytes, kind: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        self.hits.append(self.path)
        port = self.server.server_address[1]
        if self.path == "/page":
            self._send(200, PAGE.encode(), "text/html; charset=utf-8")
        elif self.path == "/big":
            self._send(200, b"x" * (6 * 1024 * 1024), "text/plain")
        elif self.path == "/binary":
            self._send(200, b"\x89PNG\r\n" + bytes(100), "image/png")
        elif self.path.startswith("/loop"):
            self._send(302, b"", "text/plain", {"Location": f"/loop{len(self.path)}"})
        elif self.path == "/to-other-loopback":
            self._send(302, b"", "text/plain", {"Location": f"http://127.0.0.2:{port}/page"})
        elif self.path == "/silent":
            self.hits.silent_reached.set()
            self.silent.wait(30)
        else:
            self._send(404, b"not here", "text/plain")


@contextmanager
def web_server() -> Iterator[tuple[str, Hits]]:
    hits = Hits()
    silent = threading.Event()
    handler = type("H", (Handler,), {"hits": hits, "silent": silent})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        silent.set()
        server.shutdown()
        server.server_close()
