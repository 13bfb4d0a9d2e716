"""The DAG run's data interval as the platform's inclusive ``yyyy-MM-dd`` date range."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from airflow.sdk import Context


def interval_dates(context: Context) -> tuple[str, str]:
    """First and last day (inclusive) covered by the run's data interval.

    Airflow's intervals are half-open (``[start, end)``), so a daily run of 2024-01-05 covers
    2024-01-05 only. Under Airflow 3's default cron timetable the interval is empty
    (``start == end``); the run then covers the day of its logical date.
    """
    start = context.get("data_interval_start") or context.get("logical_date")
    end = context.get("data_interval_end") or start
    if start is None or end is None:
        day = dt.date.fromisoformat(context["ds"])
        return day.isoformat(), day.isoformat()
    last = end - dt.timedelta(microseconds=1) if end > start else start
    return start.date().isoformat(), last.date().isoformat()
