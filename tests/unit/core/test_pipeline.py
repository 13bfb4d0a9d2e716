"""Background stages of the streamed export: order, bounds and error propagation."""

from __future__ import annotations

import time

import pytest

from airflow_provider_analytics.core.pipeline import WriteBehind, map_ahead


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
