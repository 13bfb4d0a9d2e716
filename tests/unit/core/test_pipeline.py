"""Background stages of the streamed export: order, bounds and error propagation."""

from __future__ import annotations

import threading
import time

import pytest

from airflow_provider_analytics.core.pipeline import WriteBehind, map_ahead, read_ahead


def test_read_ahead_keeps_order_and_is_bounded() -> None:
    produced: list[int] = []

    def source():
        for n in range(20):
            produced.append(n)
            yield n

    with read_ahead(source(), depth=2) as items:
        first = next(items)
        time.sleep(0.2)  # let the producer run as far ahead as it may
        assert first == 0
        assert len(produced) <= 4  # 1 consumed + 2 buffered + 1 waiting to be put
        assert [first, *items] == list(range(20))


def test_read_ahead_raises_the_producers_error_in_the_consumer() -> None:
    def source():
        yield 1
        raise ConnectionResetError("peer went away")

    with read_ahead(source()) as items, pytest.raises(ConnectionResetError, match="peer"):
        list(items)


def _read_ahead_threads() -> list[threading.Thread]:
    """The live threads read_ahead runs its producers on (other tests' threads ignored)."""
    return [thread for thread in threading.enumerate() if thread.name == "read-ahead"]


def test_read_ahead_stops_its_thread_when_left_early() -> None:
    def endless():
        n = 0
        while True:
            n += 1
            yield n

    before = set(_read_ahead_threads())
    with read_ahead(endless()) as items:
        assert next(items) == 1
        started = [thread for thread in _read_ahead_threads() if thread not in before]
    assert len(started) == 1
    assert not started[0].is_alive()


def test_map_ahead_keeps_input_order_with_uneven_work() -> None:
    def slow_for_even(n: int) -> int:
        time.sleep(0.02 if n % 2 == 0 else 0)
        return n * n

    for workers in (1, 2, 3):
        assert list(map_ahead(slow_for_even, range(10), workers)) == [(n, n * n) for n in range(10)]


def test_map_ahead_raises_the_first_failure_in_order() -> None:
    def boom(n: int) -> int:
        if n == 3:
            raise ValueError("block 3 is bad")
        return n

    seen = []
    with pytest.raises(ValueError, match="block 3"):
        for item, _ in map_ahead(boom, range(10), 2):
            seen.append(item)
    assert seen == [0, 1, 2]


def test_write_behind_writes_in_order_and_surfaces_errors() -> None:
    written: list[int] = []
    behind = WriteBehind(written.append)
    for n in range(5):
        behind.submit(n)
    behind.close()
    assert written == [0, 1, 2, 3, 4]

    def fail(n: int) -> None:
        raise OSError(f"disk full at {n}")

    behind = WriteBehind(fail)
    behind.submit(1)
    with pytest.raises(OSError, match="disk full at 1"):
        behind.submit(2)
    behind.close()
