"""Pure-Python client of the analytics platform's open API (no Airflow import).

>>> from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
>>> config = ClientConfig("https://analytics.example.com:4005", token="...", app_key="...")
>>> with AnalyticsClient(config) as client:  # doctest: +SKIP
...     events = client.list_events(plan=1)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.core.errors import (
    AnalyticsAlreadyExistsError,
    AnalyticsApiError,
    AnalyticsAuthenticationError,
    AnalyticsBadRequestError,
    AnalyticsConfigurationError,
    AnalyticsDisabledError,
    AnalyticsError,
    AnalyticsNotCompletedError,
    AnalyticsNotFoundError,
    AnalyticsOperationFailedError,
    AnalyticsProtocolError,
    AnalyticsQuotaExceededError,
    AnalyticsRateLimitError,
    AnalyticsServerError,
    AnalyticsStreamError,
    AnalyticsTransportError,
    AnalyticsUnsupportedMediaTypeError,
    AnalyticsUsageError,
    AnalyticsValidationError,
)

if TYPE_CHECKING:
    from airflow_provider_analytics.client.analysis_requests import (
        Condition,
        EventRequest,
        Filter,
        FunnelRequest,
        FunnelStep,
        Measure,
        SplitField,
    )
    from airflow_provider_analytics.client.api import AnalyticsClient
    from airflow_provider_analytics.client.config import ClientConfig
    from airflow_provider_analytics.client.export import CohortExport
    from airflow_provider_analytics.client.validation import (
        validate_event_request,
        validate_funnel_request,
    )
    from airflow_provider_analytics.core.ndjson import iter_lines
    from airflow_provider_analytics.core.retry import RetryPolicy

_LAZY = {
    **dict.fromkeys(
        (
            "Condition",
            "EventRequest",
            "Filter",
            "FunnelRequest",
            "FunnelStep",
            "Measure",
            "SplitField",
        ),
        ".analysis_requests",
    ),
    "AnalyticsClient": ".api",
    "ClientConfig": ".config",
    "CohortExport": ".export",
    "RetryPolicy": "airflow_provider_analytics.core.retry",
    "validate_event_request": ".validation",
    "validate_funnel_request": ".validation",
    "iter_lines": "airflow_provider_analytics.core.ndjson",
}
"""Names imported on first use (most of their modules load ``requests`` and the HTTP stack),
so that importing ``client`` for its errors (as operator modules do at DAG-parse time)
stays cheap."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)  # ".api": in this package
    globals()[name] = value
    return value


__all__ = [
    "AnalyticsAlreadyExistsError",
    "AnalyticsApiError",
    "AnalyticsAuthenticationError",
    "AnalyticsBadRequestError",
    "AnalyticsClient",
    "AnalyticsConfigurationError",
    "AnalyticsDisabledError",
    "AnalyticsError",
    "AnalyticsNotCompletedError",
    "AnalyticsNotFoundError",
    "AnalyticsOperationFailedError",
    "AnalyticsProtocolError",
    "AnalyticsQuotaExceededError",
    "AnalyticsRateLimitError",
    "AnalyticsServerError",
    "AnalyticsStreamError",
    "AnalyticsTransportError",
    "AnalyticsUnsupportedMediaTypeError",
    "AnalyticsUsageError",
    "AnalyticsValidationError",
    "ClientConfig",
    "CohortExport",
    "Condition",
    "EventRequest",
    "Filter",
    "FunnelRequest",
    "FunnelStep",
    "Measure",
    "RetryPolicy",
    "SplitField",
    "iter_lines",
    "validate_event_request",
    "validate_funnel_request",
]
