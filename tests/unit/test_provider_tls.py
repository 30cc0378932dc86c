"""The model client's TLS context (agent/provider/tls.py): its certificate store is loaded on
the first TLS connection, not when the client is made, and it verifies exactly as httpx's
default does. Over real sockets on 127.0.0.1: a TLS server with a self-signed certificate."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tunacode_lsp.agent.provider import openai_chat
from tunacode_lsp.agent.provider.tls import LazyTrustContext, lazy_trust_context

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"


def _certificate(folder: Path, names: list[str]) -> tuple[Path, Path]:
    """A self-signed certificate for `names` (DNS names or IP addresses), and its key."""

    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tunacode test")])
    alt: list[x509.GeneralName] = []
    for name in names:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alt.append(x509.DNSName(name))
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


class _Server:
    """One-answer-per-connection HTTP server on 127.0.0.1, over TLS when given a certificate."""

    def __init__(self, cert: tuple[Path, Path] | None) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.context: ssl.SSLContext | None = None
        if cert is not None:
            self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.context.load_cert_chain(str(cert[0]), str(cert[1]))
        self.stopped = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                conn.settimeout(5)
                if self.context is not None:
                    conn = self.context.wrap_socket(conn, server_side=True)
                conn.recv(65536)
                conn.sendall(ANSWER)
            except (OSError, ssl.SSLError):
                pass  # a client that refused our certificate
            finally:
                conn.close()

    def close(self) -> None:
        self.stopped = True
        self.sock.close()


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[tuple[_Server, _Server, Path]]:
    cert = _certificate(tmp_path, ["localhost"])
    tls, plain = _Server(cert), _Server(None)
    try:
        yield tls, plain, cert[0]
    finally:
        tls.close()
        plain.close()


def _get(url: str) -> tuple[int | None, str, bool]:
    """A GET through the provider's shared client; (status or None, error, trust loaded)."""

    async def go() -> tuple[int | None, str, bool]:
        client = openai_chat.shared_client()
        context = client._transport._pool._ssl_context  # the context httpx was given
        try:
            response = await client.get(url, timeout=10)
            return response.status_code, "", context._trust_loaded
        except httpx.HTTPError as exc:
            return None, repr(exc), context._trust_loaded
        finally:
            await openai_chat.close_shared_client()

    return asyncio.run(go())


def test_an_http_endpoint_never_loads_the_certificate_store(servers):
    _tls, plain, _cert = servers
    status, error, loaded = _get(f"http://127.0.0.1:{plain.port}/v1")
    assert (status, error, loaded) == (200, "", False)


def test_an_untrusted_certificate_is_refused(servers, monkeypatch):
    tls, _plain, _cert = servers
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    status, error, loaded = _get(f"https://localhost:{tls.port}/v1")
    assert status is None and "CERTIFICATE_VERIFY_FAILED" in error and loaded


def test_a_trusted_certificate_is_accepted_for_its_name_only(servers, monkeypatch):
    tls, _plain, cert = servers
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # as httpx's default context honours it
    assert _get(f"https://localhost:{tls.port}/v1")[:2] == (200, "")
    status, error, _ = _get(f"https://127.0.0.1:{tls.port}/v1")  # not a name the certificate holds
    assert status is None and "CERTIFICATE_VERIFY_FAILED" in error


def test_the_context_verifies_as_httpx_default_does():
    ours, theirs = lazy_trust_context(), httpx.create_ssl_context()
    assert isinstance(ours, LazyTrustContext)
    for attribute in ("protocol", "verify_mode", "check_hostname", "options", "minimum_version", "maximum_version",
                      "verify_flags", "post_handshake_auth"):
        assert getattr(ours, attribute) == getattr(theirs, attribute), attribute
    assert ours.cert_store_stats()["x509_ca"] == 0  # nothing trusted before the first connection
    ours.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO(), server_hostname="example.com")
    assert ours.cert_store_stats() == theirs.cert_store_stats()
