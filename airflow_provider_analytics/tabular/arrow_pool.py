"""Which allocator Arrow uses while an export runs.

Arrow's default allocator (mimalloc or jemalloc) keeps freed memory for reuse, so a process
that decodes and writes many blocks holds far more than it uses. The system allocator gives
large blocks back at once: a 1M-user stream peaked ~50 MiB higher with mimalloc, and reading
a million users in shards ~55 MiB higher (both with Airflow imported).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import pyarrow as pa

from airflow_provider_analytics.core import rules

if TYPE_CHECKING:
    from collections.abc import Iterator

POOLS = ("default", "system", "mimalloc")


@contextlib.contextmanager
def arrow_memory_pool(name: str) -> Iterator[None]:
    """Use the named Arrow allocator as the default for the duration of the block
    (``default``: leave Arrow's choice alone).

    The default pool is process-wide: enter this once around work that may run on several
    threads, not in each thread.

    :raises AnalyticsValidationError: ``name`` is not one of :data:`POOLS`.
    """
    rules.one_of(name, "memory_pool", POOLS)
    if name == "default":
        yield
        return
    previous = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool() if name == "system" else pa.mimalloc_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(previous)
