"""Apache Airflow provider for a product-analytics platform's open API."""

from __future__ import annotations

import os
import sys
from typing import Any

from airflow_provider_analytics.core.version import __version__

__all__ = ["__version__", "get_provider_info"]

ARROW_ALLOCATOR_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"
"""Read by Arrow once, as pyarrow loads, to choose its C++ allocator."""

if "pyarrow" not in sys.modules:
    # Arrow's Parquet writer and kernels use the C++ default allocator, which set_memory_pool
    # does not reach; mimalloc keeps what each thread freed, and with the system allocator a
    # 1M-user export peaked 12-16 MiB lower, as fast (docs/export_profile.md). A value set in
    # the environment is kept, as is the allocator of a process that loaded pyarrow first.
    os.environ.setdefault(ARROW_ALLOCATOR_VARIABLE, "system")


def get_provider_info() -> dict[str, Any]:
    """Describe the provider to Airflow (entry point ``apache_airflow_provider``)."""
    from airflow_provider_analytics.provider_info import PROVIDER_INFO

    return dict(PROVIDER_INFO)
