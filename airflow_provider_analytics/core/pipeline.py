"""Overlap the stages of a streamed job: read ahead in one thread, write behind in another.

Socket reads, Arrow's JSON parser and Parquet encoding all release the GIL, so running them
side by side uses both cores of a small worker. Each stage holds at most ``depth`` items, so
memory stays bounded; errors in a background stage surface in the caller's thread.
"""

from __future__ import annotations

import collections
import contextlib
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

T = TypeVar("T")
U = TypeVar("U")

_DONE = object()


@contextlib.contextmanager
def read_ahead(items: Iterable[T], depth: int = 2) -> Iterator[Iterator[T]]:
    """Iterate ``items`` in a background (daemon) thread, keeping up to ``depth`` items ready.
    A caller leaving early must make the source fail or end (for an HTTP body: close it)."""
    buffer: queue.Queue[tuple[object, BaseException | None]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry: tuple[object, BaseException | None]) -> bool:
        while not stop.is_set():
            with contextlib.suppress(queue.Full):
                buffer.put(entry, timeout=0.1)
                return True
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
        except BaseException as error:  # handed to the consumer, raised there
            put((_DONE, error))
            return
        put((_DONE, None))

    def consume() -> Iterator[T]:
        while True:
            item, error = buffer.get()
            if item is _DONE:
                if error is not None:
                    raise error
                return
            yield item  # type: ignore[misc]

    thread = threading.Thread(target=produce, name="read-ahead", daemon=True)
    thread.start()
    try:
        yield consume()
    finally:
        stop.set()
        thread.join(timeout=5)


class WriteBehind(Generic[T]):
    """Run ``write(item)`` in one background thread, in order: :meth:`submit` waits for the
    previous write first, and a failed write raises on the next :meth:`submit` or :meth:`drain`."""

    def __init__(self, write: Callable[[T], object]) -> None:
        self._write = write
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="write-behind")
        self._pending: Future[object] | None = None

    def submit(self, item: T) -> None:
        self.drain()
        self._pending = self._executor.submit(self._write, item)

    def drain(self) -> None:
        """Wait for the write in progress; re-raise its error."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def close(self) -> None:
        """Wait for the last write (errors are raised) and stop the thread."""
        try:
            self.drain()
        finally:
            self._executor.shutdown(wait=True)


def map_ahead(
    function: Callable[[T], U], items: Iterable[T], workers: int
) -> Iterator[tuple[T, U]]:
    """``(item, function(item))`` in input order, up to ``workers`` computed at once (inline for
    1), for functions that release the GIL. One item more than ``workers`` is in flight, so no
    worker idles while the caller takes a result."""
    if workers <= 1:
        for item in items:
            yield item, function(item)
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="map-ahead") as pool:
        in_flight: collections.deque[tuple[T, Future[U]]] = collections.deque()
        try:
            for item in items:
                in_flight.append((item, pool.submit(function, item)))
                if len(in_flight) > workers:
                    done, future = in_flight.popleft()
                    yield done, future.result()
            while in_flight:
                done, future = in_flight.popleft()
                yield done, future.result()
        finally:
            for _, future in in_flight:
                future.cancel()
