"""A loopback HTTP server that answers each model call with recorded bytes, as they were sent.

For the wires the scripted model does not speak (Bedrock's binary event stream, Vertex's
`:streamRawPredict`): each POST takes the next `Reply` and gets its body byte for byte
(chunked, so a cut is visible as an incomplete body); a `stall` reply sends its body and then
holds the connection open until the client closes it (an abort), which `wait_for_closed`
sees at once. `POST /token` answers Google's OAuth token exchange (a service account's
credentials file names its `token_uri`), so the Vertex token is minted here too.
"""

from __future__ import annotations

import json
import struct
import threading
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAKE_ACCESS_TOKEN = "ya29.loopback-token"


@dataclass
class Reply:
    body: bytes
    content_type: str = "application/json"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    stall: bool = False  # after the body, hold the connection until the client closes it


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class ReplayServer:
    """`with ReplayServer() as server: server.replies.append(Reply(...))`"""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Recorded] = []
        self.token_requests: list[Recorded] = []
        self._cond = threading.Condition()
        self._open = 0
        handler = _handler_for(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)

    def wait_for_closed(self, timeout: float = 5.0) -> bool:
        """True once no stalled response is open (the client closed its connection)."""

        with self._cond:
            return self._cond.wait_for(lambda: self._open == 0, timeout)

    def wait_for_stall(self, timeout: float = 5.0) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._open > 0, timeout)

    def _take(self, recorded: Recorded) -> Reply | None:
        with self._cond:
            self.requests.append(recorded)
            return self.replies.pop(0) if self.replies else None

    def _stalled(self, delta: int) -> None:
        with self._cond:
            self._open += delta
            self._cond.notify_all()


def _handler_for(server: ReplayServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            length = int(self.headers.get("Content-Length") or 0)
            recorded = Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length))
            if self.path.split("?", 1)[0] == "/token":
                server.token_requests.append(recorded)
                token = {"access_token": FAKE_ACCESS_TOKEN, "expires_in": 3600, "token_type": "Bearer"}
                return self._send_whole(Reply(json.dumps(token).encode()))
            reply = server._take(recorded)
            if reply is None:
                return self._send_whole(Reply(b'{"message":"replay server: no reply left"}', status=500))
            if reply.status != 200:
                return self._send_whole(reply)
            self.send_response(200)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Transfer-Encoding", "chunked")
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if reply.body:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(reply.body), reply.body))
                self.wfile.flush()
            if not reply.stall:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return
            server._stalled(1)
            try:
                self.connection.settimeout(60)
                while self.connection.recv(4096):  # the client sends nothing more: b"" is its close
                    pass
            except (TimeoutError, OSError):
                pass
            finally:
                server._stalled(-1)
                self.close_connection = True

        def _send_whole(self, reply: Reply) -> None:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(reply.body)
            self.wfile.flush()

    return Handler


def service_account_file(path: Any, token_uri: str) -> None:
    """A Google service account credentials file with a fresh key, its token endpoint `token_uri`."""

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    info = {
        "type": "service_account",
        "project_id": "p1",
        "private_key_id": "loopback",
        "private_key": pem,
        "client_email": "loopback@p1.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": token_uri,
    }
    path.write_text(json.dumps(info))


# ------------------------------------------------------------ AWS event stream frames


def eventstream_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One `application/vnd.amazon.eventstream` message (string headers), CRCs as AWS computes them."""

    head = b"".join(
        bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()
        for name, value in headers.items()
    )
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + head + payload
    return message + struct.pack(">I", zlib.crc32(message))


def bedrock_chunk(event_json: str) -> bytes:
    """An Anthropic event as Bedrock's InvokeModelWithResponseStream sends it: a `chunk` event
    whose payload is `{"bytes": base64(event)}`."""

    import base64

    payload = json.dumps({"bytes": base64.b64encode(event_json.encode()).decode()}, separators=(",", ":"))
    return eventstream_frame(
        {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}, payload.encode()
    )


def eventstream_events(data: bytes) -> list[bytes]:
    """The whole messages of an event stream body, in order (to cut a recording at a frame)."""

    out, offset = [], 0
    while offset + 12 <= len(data):
        (total,) = struct.unpack(">I", data[offset : offset + 4])
        out.append(data[offset : offset + total])
        offset += total
    return out
