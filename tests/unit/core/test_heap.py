"""Giving the C heap's free memory back between large steps: a no-op where the C library
cannot, never an error."""

from __future__ import annotations

import ctypes
import platform
from typing import TYPE_CHECKING

from airflow_provider_analytics.core import heap

if TYPE_CHECKING:
    import pytest


def test_trim_heap_returns_memory_where_glibc_can(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = heap._malloc_trim()
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert real is not None  # glibc has malloc_trim
    monkeypatch.setattr(heap, "_malloc_trim", lambda: calls.append)
    heap.trim_heap()
    assert calls == [0]  # asked to trim everything above the heap's minimum


def test_without_malloc_trim_it_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    heap._malloc_trim.cache_clear()
    monkeypatch.setattr(ctypes, "CDLL", lambda name: object())  # a C library without it
    try:
        assert heap._malloc_trim() is None
        heap.trim_heap()  # no library, no error
    finally:
        heap._malloc_trim.cache_clear()
