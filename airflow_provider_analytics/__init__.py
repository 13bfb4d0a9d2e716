"""Apache Airflow provider for a product-analytics platform's open API."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def get_provider_info() -> dict[str, Any]:
    """Describe the provider to Airflow (entry point ``apache_airflow_provider``)."""
    from airflow_provider_analytics.provider_info import PROVIDER_INFO

    return dict(PROVIDER_INFO)
