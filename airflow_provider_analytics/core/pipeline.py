"""Overlap the stages of a streamed job: parse ahead in a pool, write behind in a thread.

Arrow's JSON parser and Parquet encoding release the GIL, so running them beside the caller's
thread (which reads the socket and finishes each block) uses both cores of a small worker. Each
stage holds a bounded number of items, so memory stays bounded; errors in a background stage
surface in the caller's thread.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

T = TypeVar("T")
U = TypeVar("U")

_DONE = object()


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
