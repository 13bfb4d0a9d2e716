"""A tiny HTTP proxy on a loopback address, for the proxy rule's tests: it tunnels
``CONNECT`` requests (relaying bytes both ways) and answers any other request with 502, and
records everything that reaches it, so a test sees what a proxy would have read.

:func:`resolving` makes a name that does not look like loopback
(:data:`NON_LOOPBACK_NAME`) resolve to ``127.0.0.2`` for ``requests`` and ``httpx`` alike
(both resolve through ``socket.getaddrinfo``), so a proxy "elsewhere" still runs on this
machine.
"""

from __future__ import annotations

import contextlib
import select
import socket
import socketserver
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tests.loopback import ServedOnLoopback

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import TracebackType

NON_LOOPBACK_NAME = "proxy.analytics.test"
"""A proxy name that is not loopback by its looks; :func:`resolving` maps it to 127.0.0.2."""
NON_LOOPBACK_ADDRESS = "127.0.0.2"


@contextlib.contextmanager
def resolving(name: str = NON_LOOPBACK_NAME, address: str = NON_LOOPBACK_ADDRESS) -> Iterator[None]:
    """Resolve ``name`` to ``address`` in this process for the length of the block (other
    names resolve as usual)."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        shown = host.decode() if isinstance(host, bytes) else host
        if shown == name:
            host = address
        return real(host, port, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
    try:
        yield
    finally:
        socket.getaddrinfo = real  # type: ignore[assignment]


@dataclass
class Seen:
    """What reached the proxy: each request's head, the targets it tunnelled to and every
    byte it relayed from the client."""

    heads: list[str] = field(default_factory=list)
    tunnels: list[str] = field(default_factory=list)
    relayed: bytearray = field(default_factory=bytearray)


class LoopbackProxy(ServedOnLoopback):
    """A proxy served on ``bind`` (a loopback address) while used as a context manager.

    :param bind: the address to listen on.
    :param name: how clients name it (the address itself, or a name :func:`resolving`
        maps to it).
    """

    def __init__(self, bind: str = "127.0.0.1", name: str | None = None) -> None:
        self.seen = Seen()
        self.name = name or bind
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy._serve(self.request)

        super().__init__(socketserver.ThreadingTCPServer((bind, 0), Handler))

    @property
    def url(self) -> str:
        return f"http://{self.name}:{self.httpd.server_address[1]}"

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.close()
        super().__exit__(exc_type, exc, tb)

    def _keep(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.append(sock)

    def _serve(self, client: socket.socket) -> None:
        self._keep(client)
        head = b""
        while b"\r\n\r\n" not in head and len(head) < 65536:
            chunk = client.recv(4096)
            if not chunk:
                return
            head += chunk
        head, _, early = head.partition(b"\r\n\r\n")
        text = head.decode("latin-1")
        with self._lock:
            self.seen.heads.append(text)
        method, _, rest = text.partition(" ")
        if method != "CONNECT":  # a forwarding proxy would read this request whole
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        target = rest.partition(" ")[0]
        host, _, port = target.rpartition(":")
        with self._lock:
            self.seen.tunnels.append(target)
        upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
        self._keep(upstream)
        try:
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if early:
                upstream.sendall(early)
            self._relay(client, upstream)
        finally:
            upstream.close()

    def _relay(self, client: socket.socket, upstream: socket.socket) -> None:
        sockets = [client, upstream]
        while True:
            try:
                ready, _, _ = select.select(sockets, [], [], 0.5)
            except (OSError, ValueError):  # closed at exit
                return
            for sock in ready:
                try:
                    data = sock.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                other = upstream if sock is client else client
                if sock is client:
                    with self._lock:
                        self.seen.relayed += data
                try:
                    other.sendall(data)
                except OSError:
                    return
