"""An overall deadline per request, however slowly a server sends its bytes.

A read timeout bounds each wait for data, not the whole call: a server that sends one byte a
second keeps a request alive forever. :class:`DeadlineAdapter` remembers which connection the
current thread's request uses, and :func:`deadline` shuts that connection's socket down when
time is up, so the blocked read returns and the request fails.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import TYPE_CHECKING, Any

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

if TYPE_CHECKING:
    from collections.abc import Iterator

_current = threading.local()


class Watch:
    """The connection of one request and whether its deadline has passed."""

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self.expired = False
        self._lock = threading.Lock()

    def attach(self, connection: HTTPConnection) -> None:
        """Remember the socket the request was sent on (the connection may drop its
        reference once the answer is being read, the answer keeps reading from it)."""
        with self._lock:
            self.sock = connection.sock
            if self.expired:
                self._cut()

    def expire(self) -> None:
        with self._lock:
            self.expired = True
            self._cut()

    def _cut(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)


def _attach_current(connection: HTTPConnection) -> None:
    watch = getattr(_current, "watch", None)
    if watch is not None:
        watch.attach(connection)


def _watched(connection: type[HTTPConnection]) -> type[HTTPConnection]:
    """``connection`` telling the current thread's watch which socket its request went on."""

    def request(self: HTTPConnection, *args: Any, **kwargs: Any) -> None:
        connection.request(self, *args, **kwargs)
        _attach_current(self)

    return type(f"_Watched{connection.__name__}", (connection,), {"request": request})


_WATCHED_POOLS = {
    scheme: type(f"_Watched{pool.__name__}", (pool,), {"ConnectionCls": _watched(connection)})
    for scheme, pool, connection in (
        ("http", HTTPConnectionPool, HTTPConnection),
        ("https", HTTPSConnectionPool, HTTPSConnection),
    )
}


class DeadlineAdapter(HTTPAdapter):
    """An ``HTTPAdapter`` whose connections can be cut by :func:`deadline`, direct or
    tunnelled through a proxy."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_WATCHED_POOLS)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = dict(_WATCHED_POOLS)
        return manager


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[Watch]:
    """Cut the current thread's request if it is still running after ``seconds``.

    :param seconds: time allowed from now.
    :return: the watch; ``watch.expired`` tells whether the deadline cut the request.
    """
    watch = Watch()
    previous = getattr(_current, "watch", None)
    _current.watch = watch
    timer = threading.Timer(max(seconds, 0.0), watch.expire)
    timer.daemon = True
    timer.start()
    try:
        yield watch
    finally:
        timer.cancel()
        _current.watch = previous
