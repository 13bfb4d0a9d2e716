"""Which allocator Arrow uses while an export runs: the system one gives large blocks back at
once, where Arrow's default (mimalloc or jemalloc) keeps freed memory, ~50 MiB more at a
1M-user export's peak. This switches pyarrow's pool; Arrow's C++ default (the Parquet writer's)
is chosen from ``ARROW_DEFAULT_MEMORY_POOL`` as pyarrow loads (``docs/export_profile.md``).
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


@functools.cache
def _tell_cpp_allocator(backend: str) -> None:
    """Once a process: Arrow's C++ default is not the system allocator because pyarrow loaded
    before the provider set ``ARROW_DEFAULT_MEMORY_POOL``."""
    log.info(
        "Arrow's C++ allocator is %s (pyarrow loaded before this provider): the Parquet writer "
        "keeps what it freed, 12-16 MiB more at a 1M-user export's peak; set %s=system in the "
        "worker's environment to lower it",
        backend,
        ARROW_ALLOCATOR_VARIABLE,
    )


@contextlib.contextmanager
def arrow_memory_pool(name: str) -> Iterator[None]:
    """Use the named Arrow allocator as the process-wide default for the duration of the block
    (``default``: leave Arrow's choice alone); enter it once around work on several threads.

    :raises AnalyticsValidationError: ``name`` is not one of :data:`POOLS`.
    """
    rules.one_of(name, "memory_pool", POOLS)
    previous = pa.default_memory_pool()
    if previous.backend_name != "system" and not os.environ.get(ARROW_ALLOCATOR_VARIABLE):
        _tell_cpp_allocator(previous.backend_name)
    if name == "default":
        yield
        return
    pa.set_memory_pool(pa.system_memory_pool() if name == "system" else pa.mimalloc_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(previous)
