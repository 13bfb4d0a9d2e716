"""Static provider metadata returned by :func:`airflow_provider_analytics.get_provider_info`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

_PACKAGE = "airflow_provider_analytics"
DOCUMENTATION_URL = "https://airflow-provider-analytics.readthedocs.io/en/latest/"
"""Where the built documentation is published (Airflow's ``documentation-url``)."""

HOW_TO_GUIDES = [
    "/docs/operators/index.md",
    "/docs/howto/daily_pipeline.md",
    "/docs/howto/backfill.md",
    "/docs/howto/object_storage.md",
    "/docs/howto/days.md",
    "/docs/howto/stack.md",
    "/docs/howto/iceberg.md",
]
"""The how-to pages, from the repository root (as Airflow's own providers list theirs)."""

DEFAULT_CONN_ID = "analytics_default"
"""The connection the hook, the operators and the sensor use unless told otherwise."""

PLATFORM_POOL = "analytics_platform"
"""The Airflow pool every task that calls the platform belongs to, so only as many calls as it
has slots are made at once however many workers run (docs/howto/scaling.md: create it once
per deployment with ``max_concurrent_calls`` slots)."""

PLATFORM_POOL_DESCRIPTION = "calls to the analytics platform"
"""The description the development stack gives :data:`PLATFORM_POOL`."""

APP_KEY_EXTRA: Final = "app_api_key"
"""The extra the appKey is stored under: Airflow hides an extra named with ``api_key``; the
older ``app_key`` would be shown in clear, so it is only read, never offered."""

CONNECTION_FIELDS: dict[str, Any] = json.loads(
    (Path(__file__).parent / "connection_form.json").read_text(encoding="utf-8")
)
"""The connection form's fields, as the settings' one declaration gives them, kept as data so
Airflow reads the metadata without building the settings' model (a test compares the two;
``python -m devtools.connection_form`` writes it anew)."""


def _modules(room: str, *names: str) -> list[dict[str, Any]]:
    """Airflow's list of the provider's modules ``names`` of one kind, in the folder ``room``."""
    modules = [f"{_PACKAGE}.{room}.{name}" for name in names]
    return [{"integration-name": "Analytics", "python-modules": modules}]


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
    "hooks": _modules("hooks", "analytics"),
    "operators": _modules(
        "operators",
        "cohort_export",
        "cohort_shards",
        "reports",
        "campaigns",
        "accounts",
        "tracking_plan",
        "iceberg_maintenance",
    ),
    "sensors": _modules("sensors", "data_ready"),
    "triggers": _modules("triggers", "data_ready", "data_ready_event"),
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
