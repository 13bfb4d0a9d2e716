"""Funnel and event analysis responses as report tables for Parquet, Iceberg and warehouses.

The entry points the report jobs use. Everything here is pure (no Airflow, no HTTP) and
stays in Arrow: a decoded response goes in, one :class:`pyarrow.Table` per grain comes out,
with the columns and types documented in ``docs/report_tables.md``. Where a DataFrame is
wanted, ``table.to_pandas(types_mapper=pandas.ArrowDtype)`` gives one without casts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.tabular.event_frame import event_schema, event_table
from airflow_provider_analytics.tabular.funnel_frame import funnel_table
from airflow_provider_analytics.tabular.grains import EVENT_GRAINS, FUNNEL_GRAINS, cut_grains
from airflow_provider_analytics.tabular.schemas import EVENT_SCHEMA, FUNNEL_SCHEMA

if TYPE_CHECKING:
    from collections.abc import Mapping

    import pyarrow as pa

__all__ = [
    "EVENT_GRAINS",
    "EVENT_SCHEMA",
    "FUNNEL_GRAINS",
    "FUNNEL_SCHEMA",
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
