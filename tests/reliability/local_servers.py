"""Tiny servers on 127.0.0.1 for what the emulator does not do: TLS with a self-signed
certificate, and a redirect to another host. Each records the requests that reach it."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import ssl
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.loopback import ServedOnLoopback

if TYPE_CHECKING:
    from pathlib import Path


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A certificate for ``127.0.0.1`` signed by its own key; returns (certificate, key) files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "server.crt", folder / "server.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


class LocalServer(ServedOnLoopback):
    """Answers every request with one status, headers and JSON body; keeps each request's
    path and headers in :attr:`received`.

    :param status: the answer's status.
    :param body: the answer's JSON body.
    :param headers: extra answer headers (``Location`` for a redirect).
    :param tls: (certificate, key) files to serve HTTPS with.
    """

    def __init__(
        self,
        *,
        status: int = 200,
        body: Any = None,
        headers: dict[str, str] | None = None,
        tls: tuple[Path, Path] | None = None,
    ) -> None:
        self.received: list[tuple[str, dict[str, str]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                server.received.append((self.path, dict(self.headers)))
                payload = json.dumps(body).encode()
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, format: str, *args: Any) -> None:
                return None

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(tls[0]), str(tls[1]))
            httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        super().__init__(httpd, "http" if tls is None else "https")
