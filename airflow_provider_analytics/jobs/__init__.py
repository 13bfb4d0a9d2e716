"""The work behind the operators, usable without Airflow: one function a job.

>>> from airflow_provider_analytics.jobs import export_cohort_to_parquet, run_report

Each name is defined in its room (``export``, ``reports``, ``plan``) and loaded on first use, so
importing this module costs nothing. The modules that stood here in 0.1.0
(``jobs.cohort_export``, ``jobs.export_settings``, ``jobs.reports``, ``jobs.tracking_plan``) are
deprecated aliases until 0.3.0.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_analytics.export.cohort_day import export_cohort_day
    from airflow_provider_analytics.export.settings import ExportSettings
    from airflow_provider_analytics.export.stream import (
        ExportIncompleteError,
        ExportResult,
        export_cohort_to_parquet,
    )
    from airflow_provider_analytics.plan.file import load_tracking_plan
    from airflow_provider_analytics.plan.sync import SyncResult, sync_tracking_plan
    from airflow_provider_analytics.reports.job import (
        ReportResult,
        ReportWrittenInPartError,
        run_report,
        run_report_days,
    )

_HOMES = {
    "export_cohort_to_parquet": "export.stream",
    "ExportResult": "export.stream",
    "ExportIncompleteError": "export.stream",
    "export_cohort_day": "export.cohort_day",
    "ExportSettings": "export.settings",
    "run_report": "reports.job",
    "run_report_days": "reports.job",
    "ReportResult": "reports.job",
    "ReportWrittenInPartError": "reports.job",
    "sync_tracking_plan": "plan.sync",
    "SyncResult": "plan.sync",
    "load_tracking_plan": "plan.file",
}

__all__ = [
    "ExportIncompleteError",
    "ExportResult",
    "ExportSettings",
    "ReportResult",
    "ReportWrittenInPartError",
    "SyncResult",
    "export_cohort_day",
    "export_cohort_to_parquet",
    "load_tracking_plan",
    "run_report",
    "run_report_days",
    "sync_tracking_plan",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"airflow_provider_analytics.{home}"), name)
