"""Which allocator Arrow uses while an export runs.

Arrow's own default allocator (mimalloc, or jemalloc in some builds) keeps freed memory for
reuse, so a process that decodes and writes many blocks holds far more than it uses. The system
allocator gives large blocks back at once: a 1M-user stream peaked ~50 MiB higher with mimalloc,
and reading a million users in shards ~55 MiB higher (both with Airflow imported).

Two allocators are at play. pyarrow's (``pa.set_memory_pool``, what :func:`arrow_memory_pool`
switches) serves what pyarrow asks for; Arrow's C++ default serves what its C++ code allocates
for itself, the Parquet writer's encoders among it, and is chosen once, from
``ARROW_DEFAULT_MEMORY_POOL``, as pyarrow loads. The provider sets that variable to ``system``
when it loads first (``airflow_provider_analytics/__init__.py``); where pyarrow loaded before it
(a DAG file importing pandas first) the C++ default stays Arrow's, and the first export says so.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from typing import TYPE_CHECKING

import pyarrow as pa

from airflow_provider_analytics import ARROW_ALLOCATOR_VARIABLE
from airflow_provider_analytics.core import rules

if TYPE_CHECKING:
    from collections.abc import Iterator

POOLS = ("default", "system", "mimalloc")

log = logging.getLogger(__name__)


def _say_cpp_allocator(backend: str) -> None:
    """Log once a process when Arrow's C++ default is not the system allocator and nobody chose
    it (``ARROW_DEFAULT_MEMORY_POOL`` unset): pyarrow loaded before the provider."""
    if backend != "system" and not os.environ.get(ARROW_ALLOCATOR_VARIABLE):
        _tell_cpp_allocator(backend)


@functools.cache
def _tell_cpp_allocator(backend: str) -> None:
    log.info(
        "Arrow's C++ allocator is %s (pyarrow loaded before this provider): the Parquet writer "
        "keeps what it freed, 12-16 MiB more at a 1M-user export's peak; set %s=system in the "
        "worker's environment to lower it",
        backend,
        ARROW_ALLOCATOR_VARIABLE,
    )


@contextlib.contextmanager
def arrow_memory_pool(name: str) -> Iterator[None]:
    """Use the named Arrow allocator as the default for the duration of the block
    (``default``: leave Arrow's choice alone).

    The default pool is process-wide: enter this once around work that may run on several
    threads, not in each thread.

    :raises AnalyticsValidationError: ``name`` is not one of :data:`POOLS`.
    """
    rules.one_of(name, "memory_pool", POOLS)
    previous = pa.default_memory_pool()
    _say_cpp_allocator(previous.backend_name)
    if name == "default":
        yield
        return
    pa.set_memory_pool(pa.system_memory_pool() if name == "system" else pa.mimalloc_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(previous)
