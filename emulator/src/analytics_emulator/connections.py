"""The server's open TCP connections, so a fault can drop one and the admin API count them.

The HTTP protocol class the server runs registers each connection's transport under the
peer address, which is what ASGI puts in ``scope["client"]``; a route can then close its
own connection. Everything here runs on the server's event loop thread, except
:meth:`ConnectionRegistry.accepted`, which only reads an integer.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol
from uvicorn.protocols.utils import get_remote_addr

if TYPE_CHECKING:
    import asyncio
    from collections.abc import MutableMapping


class ConnectionUnavailable(RuntimeError):
    """The request did not arrive through a registered connection (e.g. an in-process client)."""


class ConnectionRegistry:
    """Open transports by peer address, and how many connections were accepted."""

    def __init__(self) -> None:
        self._transports: dict[tuple[str, int], asyncio.Transport] = {}
        self._accepted = 0
        self._lock = threading.Lock()

    @property
    def accepted(self) -> int:
        return self._accepted

    def reset_count(self) -> None:
        with self._lock:
            self._accepted = 0

    def opened(self, transport: asyncio.Transport) -> tuple[str, int] | None:
        """Count and register a new connection; returns the peer address it is known by."""
        with self._lock:
            self._accepted += 1
        peer = get_remote_addr(transport)
        if peer is not None:
            self._transports[peer] = transport
        return peer

    def closed(self, peer: tuple[str, int] | None, transport: asyncio.Transport) -> None:
        if peer is not None and self._transports.get(peer) is transport:
            del self._transports[peer]

    @property
    def open_count(self) -> int:
        return len(self._transports)

    def drop(self, scope: MutableMapping[str, Any], *, flush: bool) -> None:
        """Close the connection a request came in on.

        :param flush: True sends what was already written before closing (a stream cut in
            the middle); False aborts at once, so the client gets no response at all.
        :raises ConnectionUnavailable: when the request's connection is not registered.
        """
        client = scope.get("client")
        transport = None if client is None else self._transports.get((client[0], client[1]))
        if transport is None:
            raise ConnectionUnavailable("the request's connection cannot be dropped")
        if flush:
            transport.close()
        else:
            transport.abort()


def counting_protocol(registry: ConnectionRegistry) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class, reporting each connection to ``registry``."""
    base: type[Any] = AutoHTTPProtocol

    def connection_made(self: Any, transport: asyncio.Transport) -> None:
        self.registered_peer = registry.opened(transport)
        self.registered_transport = transport
        base.connection_made(self, transport)

    def connection_lost(self: Any, exc: Exception | None) -> None:
        registry.closed(self.registered_peer, self.registered_transport)
        base.connection_lost(self, exc)

    members = {"connection_made": connection_made, "connection_lost": connection_lost}
    protocol: type[asyncio.Protocol] = type("RegisteredHTTPProtocol", (base,), members)
    return protocol
