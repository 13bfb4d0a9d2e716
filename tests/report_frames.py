"""The flattened analysis tables as pandas frames, for tests that read them cell by cell."""

from __future__ import annotations

from typing import Any

import pandas as pd

from airflow_provider_analytics.reports.frames import event_table, funnel_table


def funnel_frame(response: dict[str, Any], *, timezone: str = "UTC") -> pd.DataFrame:
    return funnel_table(response, timezone=timezone).to_pandas(types_mapper=pd.ArrowDtype)


def event_frame(
    response: dict[str, Any], request: dict[str, Any] | None = None, *, timezone: str = "UTC"
) -> pd.DataFrame:
    return event_table(response, request, timezone=timezone).to_pandas(types_mapper=pd.ArrowDtype)
