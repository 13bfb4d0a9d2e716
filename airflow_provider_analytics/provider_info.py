"""Static provider metadata returned by :func:`airflow_provider_analytics.get_provider_info`."""

from __future__ import annotations

from typing import Any

PROVIDER_INFO: dict[str, Any] = {
    "package-name": "airflow-provider-analytics",
    "name": "Analytics",
    "description": "Cohorts, funnels, event analysis, ad tracking, tracking plan and accounts.",
    "versions": ["0.1.0"],
}
