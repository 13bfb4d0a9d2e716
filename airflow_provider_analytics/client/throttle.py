"""The one hold-off, and the bound on calls in flight, of every caller of one platform.

A process holds one :class:`PlatformThrottle` per base URL, shared by every client, thread and
event loop: at most ``max_concurrent_calls`` calls in flight (a streamed answer keeps its place
until its body is read or closed), and a ``Retry-After`` on a 429 or 503 holds off every call
that starts afterwards. A record attached for a block of work (:meth:`PlatformThrottle.sharing`)
carries the hold-off to other processes and workers. The transports do the waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import threading
import time
import warnings
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

DEFAULT_MAX_CONCURRENT_CALLS = 4
"""Calls in flight to one platform from one process unless ``max_concurrent_calls`` says
otherwise; also the slots of the Airflow pool the development stack creates."""


class SharedRecord(Protocol):
    """A hold-off record other processes read too (``hold.json``): ``publish`` (never raising)
    asks every reader to hold off ``seconds``; ``observe`` gives the seconds it asks this
    process to hold off, once per record (``None``: nothing new)."""

    def publish(self, seconds: float, status: int, who: str) -> None: ...

    def observe(self) -> float | None: ...


class Slot:
    """One call's place among the calls in flight; releasing it twice is harmless, so every
    path that ends a call may release it."""

    __slots__ = ("_held", "_throttle")

    def __init__(self, throttle: PlatformThrottle) -> None:
        self._throttle = throttle
        self._held = True

    @property
    def held(self) -> bool:
        return self._held

    def release(self) -> None:
        self._throttle._give_back(self)


@dataclass(slots=True, eq=False)
class _Waiter:
    """A call waiting for a place (``wake`` returns ``False`` when its event loop has closed)."""

    limit: int
    wake: Callable[[], bool]
    granted: bool = False


class PlatformThrottle:
    """The calls in flight to one platform from this process, and its hold-off moment (the
    process' instance: :func:`throttle_for`; a separate one shares nothing).

    :param clock: monotonic seconds (injectable for tests).
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        # re-entrant: a slot is also released by a finalizer (a response collected), which the
        # garbage collector may run on a thread that holds the lock; a plain lock deadlocks
        self._lock = threading.RLock()
        self._in_flight = 0
        self._waiters: deque[_Waiter] = deque()
        self._resume_at = -math.inf
        self._shared: list[tuple[int | None, SharedRecord, str]] = []

    def __repr__(self) -> str:
        return f"PlatformThrottle(in_flight={self._in_flight}, waiting={len(self._waiters)})"

    @property
    def in_flight(self) -> int:
        """Calls holding a place now."""
        return self._in_flight

    @property
    def waiting(self) -> int:
        """Calls waiting for a place now."""
        return len(self._waiters)

    def hold_off(self, seconds: float, *, status: int | None = None) -> float:
        """Let no call start for ``seconds`` from now (a later moment already set stays).

        :param seconds: how long the platform asked every caller to wait.
        :param status: the HTTP status that asked for it; only then is the hold-off published
            to the shared records this thread attached.
        :returns: the moment asked for, in the clock's seconds.
        """
        moment = self._clock() + max(seconds, 0.0)
        thread = threading.get_ident()
        with self._lock:
            self._resume_at = max(self._resume_at, moment)
            shared = [(r, who) for owner, r, who in self._shared if owner in (thread, None)]
        if status is not None:
            for record, who in shared:
                record.publish(seconds, status, who)
        return moment

    @contextlib.contextmanager
    def sharing(self, record: SharedRecord, who: str) -> Iterator[None]:
        """For the block, publish the hold-offs this thread's calls meet to ``record`` as
        ``who``'s, and let every call's turn take in what it holds."""
        entry = (threading.get_ident(), record, who)
        with self._lock:
            self._shared.append(entry)
        try:
            yield
        finally:
            with self._lock:
                self._shared.remove(entry)

    def listen(self, listener: Callable[[float, int], None]) -> Callable[[], None]:
        """Deprecated: use :meth:`sharing`. Calls ``listener(seconds, status)`` for every
        hold-off; returns the function that stops it."""
        warnings.warn(
            "PlatformThrottle.listen is deprecated; share the hold-off through a record "
            "attached with PlatformThrottle.sharing (airflow_provider_analytics.client.throttle)",
            DeprecationWarning,
            stacklevel=2,
        )

        class Heard:
            def publish(self, seconds: float, status: int, who: str) -> None:
                listener(seconds, status)

            def observe(self) -> None:
                return None

        entry = (None, Heard(), "")
        with self._lock:
            self._shared.append(entry)

        def stop() -> None:
            with self._lock, contextlib.suppress(ValueError):
                self._shared.remove(entry)

        return stop

    def pending(self, covered: float) -> tuple[float, float] | None:
        """The hold-off a caller has still to wait, ``(moment, seconds from now)``, or ``None``
        (attached records taken in first; a moment up to ``covered``, already waited for, asks
        nothing more)."""
        with self._lock:
            records = list(dict.fromkeys(record for _, record, _ in self._shared))
        for record in records:
            seconds = record.observe()
            if seconds is not None:
                self.hold_off(seconds)
        moment, now = self._resume_at, self._clock()
        return (moment, moment - now) if moment > max(covered, now) else None

    def acquire(self, limit: int, timeout: float) -> Slot | None:
        """Wait (blocking) for a place while fewer than ``limit`` calls are in flight; ``None``
        if none came within ``timeout`` seconds."""
        ready = threading.Event()

        def wake() -> bool:
            ready.set()
            return True

        waiter = self._enqueue(limit, wake)
        if waiter is None or ready.wait(max(timeout, 0.0)) or self._withdraw(waiter):
            return Slot(self)
        return None

    async def acquire_async(self, limit: int, timeout: float) -> Slot | None:
        """:meth:`acquire` for a coroutine; a cancelled wait gives back a place granted
        meanwhile."""
        loop, granted = asyncio.get_running_loop(), asyncio.Event()

        def wake() -> bool:
            try:
                loop.call_soon_threadsafe(granted.set)
            except RuntimeError:  # the loop has closed: nobody is waiting any more
                return False
            return True

        waiter = self._enqueue(limit, wake)
        if waiter is None:
            return Slot(self)
        try:
            async with asyncio.timeout(max(timeout, 0.0)):
                await granted.wait()
        except TimeoutError:
            return Slot(self) if self._withdraw(waiter) else None
        except BaseException:
            if self._withdraw(waiter):
                Slot(self).release()
            raise
        return Slot(self)

    def _enqueue(self, limit: int, wake: Callable[[], bool]) -> _Waiter | None:
        with self._lock:
            if not self._waiters and self._in_flight < limit:
                self._in_flight += 1
                return None
            waiter = _Waiter(limit, wake)
            self._waiters.append(waiter)
            return waiter

    def _withdraw(self, waiter: _Waiter) -> bool:
        """Leave the queue; ``True`` if a place was granted meanwhile (the caller holds it)."""
        with self._lock:
            if waiter.granted:
                return True
            self._waiters.remove(waiter)
            self._grant()  # the queue's head may have changed
            return False

    def _give_back(self, slot: Slot) -> None:
        with self._lock:
            if not slot._held:
                return
            slot._held = False
            self._in_flight -= 1
            self._grant()

    def _grant(self) -> None:
        while self._waiters and self._in_flight < self._waiters[0].limit:
            waiter = self._waiters.popleft()
            waiter.granted = True
            self._in_flight += 1
            if not waiter.wake():
                waiter.granted = False
                self._in_flight -= 1


def platform_key(base_url: str) -> str:
    """The platform a base URL names (scheme and host lower-cased, trailing slashes dropped)."""
    parts = urlsplit(base_url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


_registry: dict[str, PlatformThrottle] = {}


def throttle_for(base_url: str) -> PlatformThrottle:
    """This process' throttle of the platform at ``base_url`` (made on first use; ``setdefault``
    is atomic, so threads asking at once share the one throttle)."""
    key = platform_key(base_url)
    return _registry.get(key) or _registry.setdefault(key, PlatformThrottle())


def forget_platforms() -> None:
    """Drop every platform's throttle (in a forked child, whose parent's calls are not its
    own, and between tests)."""
    _registry.clear()


os.register_at_fork(after_in_child=forget_platforms)
