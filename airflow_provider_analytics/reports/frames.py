"""Funnel and event analysis responses as report tables for Parquet, Iceberg and warehouses.

The entry points the report jobs use. Everything here is pure (no Airflow, no HTTP) and
stays in Arrow: a decoded response goes in, one :class:`pyarrow.Table` per grain comes out,
with the columns and types documented in ``docs/report_tables.md``. Where DataFrames are
wanted (a notebook), :func:`as_dataframes` gives each table as one, without casts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.core.errors import AnalyticsConfigurationError
from airflow_provider_analytics.reports.event_frame import event_schema, event_table
from airflow_provider_analytics.reports.funnel_frame import funnel_table
from airflow_provider_analytics.reports.grains import EVENT_GRAINS, FUNNEL_GRAINS, cut_grains
from airflow_provider_analytics.reports.schemas import EVENT_SCHEMA, FUNNEL_SCHEMA

if TYPE_CHECKING:
    from collections.abc import Mapping

    import pandas as pd
    import pyarrow as pa

__all__ = [
    "EVENT_GRAINS",
    "EVENT_SCHEMA",
    "FUNNEL_GRAINS",
    "FUNNEL_SCHEMA",
    "as_dataframes",
    "event_schema",
    "event_table",
    "event_tables",
    "funnel_table",
    "funnel_tables",
]


def funnel_tables(response: Mapping[str, Any], *, timezone: str = "UTC") -> dict[str, pa.Table]:
    """A funnel response as its report tables, by name (see :data:`FUNNEL_GRAINS`).

    :param response: the decoded JSON body of ``POST /uba/api/funnels/analyze``.
    :param timezone: the project's time zone, in which the platform writes date-times.
    """
    return cut_grains(funnel_table(response, timezone=timezone), FUNNEL_GRAINS)


def event_tables(
    response: Mapping[str, Any],
    request: Mapping[str, Any] | None = None,
    *,
    timezone: str = "UTC",
) -> dict[str, pa.Table]:
    """An event response as its report tables, by name (see :data:`EVENT_GRAINS`).

    :param response: the decoded JSON body of ``POST /uba/api/events/analyze``.
    :param request: the body that was posted (exact measure columns, data-independent schema).
    :param timezone: the project's time zone, in which the platform writes date-times.
    """
    return cut_grains(event_table(response, request, timezone=timezone), EVENT_GRAINS)


def as_dataframes(tables: Mapping[str, pa.Table]) -> dict[str, pd.DataFrame]:
    """Report tables as pandas DataFrames, by name, for notebooks.

    Every column keeps its Arrow type (``pandas.ArrowDtype``: ``int64[pyarrow]``,
    ``date32[day][pyarrow]``, ``timestamp[us, tz=UTC][pyarrow]``...), so nulls stay nulls,
    counts stay integers and no column is ``object``. Needs pandas (``pip install ".[pandas]"``
    from a clone of the provider, or ``pip install pandas``)::

        tables = funnel_tables(client.analyze_funnel(request))
        frames = as_dataframes(tables)
        frames["funnel"].head()

    :param tables: what :func:`funnel_tables` or :func:`event_tables` returned.
    :raises AnalyticsConfigurationError: when pandas is not installed.
    """
    try:
        import pandas as pd
    except ImportError:
        raise AnalyticsConfigurationError(
            'as_dataframes needs pandas: pip install ".[pandas]" from a clone of the provider, '
            "or pip install pandas"
        ) from None
    return {name: table.to_pandas(types_mapper=pd.ArrowDtype) for name, table in tables.items()}
