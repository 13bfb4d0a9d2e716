"""Apache Airflow provider for a product-analytics platform's open API."""

from __future__ import annotations

import os
import sys
from typing import Any

from airflow_provider_analytics.core.version import __version__

__all__ = ["__version__", "get_provider_info"]

ARROW_ALLOCATOR_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"
"""The variable Arrow reads to choose its C++ allocator: once, the first time it picks one, which
pyarrow does as it loads."""

if "pyarrow" not in sys.modules:
    # Arrow's Parquet writer and its kernels allocate from the C++ default allocator, which
    # pyarrow's set_memory_pool does not reach; mimalloc, the default, keeps what each thread
    # freed. With the system allocator a 1M-user export peaked 12-16 MiB lower, as fast. Every
    # process that imports the provider (Airflow's do, through its entry point) and the
    # processes it starts get the setting; a value set in the environment (e.g. mimalloc) is
    # kept, and a process that loaded pyarrow before this provider keeps its allocator.
    os.environ.setdefault(ARROW_ALLOCATOR_VARIABLE, "system")


def get_provider_info() -> dict[str, Any]:
    """Describe the provider to Airflow (entry point ``apache_airflow_provider``)."""
    from airflow_provider_analytics.provider_info import PROVIDER_INFO

    return dict(PROVIDER_INFO)
