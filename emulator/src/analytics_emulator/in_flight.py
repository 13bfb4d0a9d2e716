"""How many API requests the emulator is serving right now, for the admin API's statistics.

A request counts from the moment it reaches the application until its response has been
sent in full, or abandoned because the client went away; so a request held by a ``stall``
fault counts until the operation it was holding has been carried out.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send


class InFlightRequests:
    """A thread-safe count of the requests being served."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    @property
    def count(self) -> int:
        return self._count

    def started(self) -> None:
        with self._lock:
            self._count += 1

    def finished(self) -> None:
        with self._lock:
            self._count -= 1


class InFlightMiddleware:
    """Counts every HTTP request into ``counter`` except those under ``ignored_prefix``.

    :param app: the application to wrap.
    :param counter: where the requests being served are counted.
    :param ignored_prefix: a path prefix left uncounted (the admin API, which reads the
        count and must not see its own call).
    """

    def __init__(self, app: ASGIApp, counter: InFlightRequests, ignored_prefix: str) -> None:
        self.app = app
        self.counter = counter
        self.ignored_prefix = ignored_prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or str(scope.get("path", "")).startswith(self.ignored_prefix):
            await self.app(scope, receive, send)
            return
        self.counter.started()
        try:
            await self.app(scope, receive, send)
        finally:
            self.counter.finished()
