"""Static provider metadata returned by :func:`airflow_provider_analytics.get_provider_info`."""

from __future__ import annotations

from typing import Any

_PACKAGE = "airflow_provider_analytics"
DOCUMENTATION_URL = "https://airflow-provider-analytics.readthedocs.io/en/latest/"
"""Where the built documentation is published; also the ``Documentation`` project URL, from
which Airflow fills ``documentation-url``."""

HOW_TO_GUIDES = [
    "/docs/operators/index.md",
    "/docs/howto/daily_pipeline.md",
    "/docs/howto/backfill.md",
    "/docs/howto/object_storage.md",
    "/docs/howto/days.md",
    "/docs/howto/stack.md",
    "/docs/howto/iceberg.md",
]
"""The how-to pages in the repository's ``docs/`` folder (Airflow's own providers list theirs
the same way, from the repository root)."""

DEFAULT_CONN_ID = "analytics_default"
"""The connection the hook, the operators and the sensor use unless told otherwise."""

PLATFORM_POOL = "analytics_platform"
"""The Airflow pool every task that calls the platform belongs to, so that however many tasks
and workers run, only as many calls as it has slots are made at once. Create it once per
deployment, with ``max_concurrent_calls`` slots (4 by default):
``airflow pools set analytics_platform 4 "calls to the analytics platform"``; ``make stack``
creates it. Give a task that makes several calls at once (threads reading shards) as many
``pool_slots``."""

PLATFORM_POOL_DESCRIPTION = "calls to the analytics platform"
"""The description the development stack gives :data:`PLATFORM_POOL`."""

#: Extra holding the appKey. Airflow's REST API and UI hide an extra when the key's name
#: contains a sensitive word such as ``api_key``; the older name ``app_key`` contains none and
#: would be shown in clear, so it is only read, never offered.
APP_KEY_EXTRA = "app_api_key"


def _secret(label: str, description: str) -> dict[str, Any]:
    return {
        "label": label,
        "schema": {"type": ["string", "null"], "format": "password"},
        "description": description,
    }


def _number(label: str, kind: str, default: float, description: str) -> dict[str, Any]:
    return {
        "label": label,
        "schema": {"type": [kind, "null"], "default": default},
        "description": description,
    }


CONNECTION_FIELDS: dict[str, Any] = {
    APP_KEY_EXTRA: _secret("App key", "The project's appKey (header `appKey`)."),
    "xtoken": _secret(
        "Platform xtoken", "Platform-wide super token for account operations (header `xtoken`)."
    ),
    "utm_prefix": {
        "label": "Ad tracking path prefix",
        "schema": {"type": ["string", "null"], "default": "/svc"},
        "description": "First path segment of the ad tracking paths: /svc (spec) or /ark.",
    },
    "timezone": {
        "label": "Project timezone",
        "schema": {"type": ["string", "null"], "default": "UTC"},
        "description": "IANA name of the timezone the platform writes datetimes in.",
    },
    "connect_timeout": _number(
        "Connect timeout (s)", "number", 10, "Seconds to open a connection."
    ),
    "read_timeout": _number("Read timeout (s)", "number", 60, "Seconds to wait for a response."),
    "export_read_timeout": _number(
        "Export read timeout (s)", "number", 600, "Seconds a cohort export stream may stall."
    ),
    "progress_interval": _number(
        "Progress interval (s)",
        "number",
        10,
        "Seconds between progress lines of long exports and reports.",
    ),
    "max_attempts": _number(
        "Attempts", "integer", 4, "Tries per call for transient failures (1 = no retry)."
    ),
    "max_concurrent_calls": _number(
        "Calls at once",
        "integer",
        4,
        "Most calls in flight to the platform from one worker process (a whole number >= 1).",
    ),
    "retry_after_max": _number(
        "Longest Retry-After (s)",
        "number",
        120,
        "Longest wait a 429/503 Retry-After is honoured for, by every call of the process.",
    ),
    "verify": {
        "label": "Verify TLS",
        "schema": {"type": ["boolean", "null"], "default": True},
        "description": "Verify the server's TLS certificate (or set a CA bundle path in extras).",
    },
    "allow_insecure_http": {
        "label": "Allow plain http",
        "schema": {"type": ["boolean", "null"], "default": False},
        "description": "Permit http:// to a host that is not loopback (tokens travel unencrypted).",
    },
    "proxy": {
        "label": "HTTPS proxy",
        "schema": {"type": ["string", "null"]},
        "description": "http://host:port of a proxy to tunnel https:// calls through (default: "
        "HTTPS_PROXY); plain http:// never goes through a proxy.",
    },
    "allowed_destinations": {
        "label": "Allowed destinations",
        "schema": {"type": ["string", "null"]},
        "description": "Comma-separated roots every destination must lie under, e.g. "
        "file:///data/, s3://analytics-bucket/ (also [analytics] allowed_destinations).",
    },
}

PROVIDER_INFO: dict[str, Any] = {
    "package-name": "airflow-provider-analytics",
    "name": "Analytics",
    "description": "Cohorts, funnels, event analysis, ad tracking, tracking plan and accounts.",
    "versions": ["0.2.0", "0.1.0"],
    "integrations": [
        {
            "integration-name": "Analytics",
            "external-doc-url": DOCUMENTATION_URL,
            "how-to-guide": HOW_TO_GUIDES,
            "tags": ["service"],
        }
    ],
    "hooks": [{"integration-name": "Analytics", "python-modules": [f"{_PACKAGE}.hooks.analytics"]}],
    "operators": [
        {
            "integration-name": "Analytics",
            "python-modules": [
                f"{_PACKAGE}.operators.cohort_export",
                f"{_PACKAGE}.operators.cohort_shards",
                f"{_PACKAGE}.operators.reports",
                f"{_PACKAGE}.operators.campaigns",
                f"{_PACKAGE}.operators.accounts",
                f"{_PACKAGE}.operators.tracking_plan",
                f"{_PACKAGE}.operators.iceberg_maintenance",
            ],
        }
    ],
    "sensors": [
        {"integration-name": "Analytics", "python-modules": [f"{_PACKAGE}.sensors.data_ready"]}
    ],
    "triggers": [
        {
            "integration-name": "Analytics",
            "python-modules": [
                f"{_PACKAGE}.triggers.data_ready",
                f"{_PACKAGE}.triggers.data_ready_event",
            ],
        }
    ],
    "connection-types": [
        {
            "hook-class-name": f"{_PACKAGE}.hooks.analytics.AnalyticsHook",
            "hook-name": "Analytics",
            "connection-type": "analytics",
            "conn-fields": CONNECTION_FIELDS,
            "ui-field-behaviour": {
                "hidden-fields": ["schema", "login", "port"],
                "relabeling": {"host": "Base URL", "password": "Project token"},
                "placeholders": {
                    "host": "https://analytics.example.com:4005",
                    "password": "the project's API secret (header `token`)",
                },
            },
        }
    ],
}
