"""Funnel and event analysis responses as report tables, one :class:`pyarrow.Table` per grain
(a :class:`Grain`), with the columns and types of ``docs/report_tables.md``; pure (no Airflow,
no HTTP). A response mixes grains (overall and split values, per day and over the whole range),
where a naive ``SUM`` counts things twice, so each grain becomes a table of its own.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_analytics.core.errors import AnalyticsConfigurationError
from airflow_provider_analytics.reports.event_frame import event_schema, event_table
from airflow_provider_analytics.reports.funnel_frame import funnel_table
from airflow_provider_analytics.reports.schemas import EVENT_SCHEMA, FUNNEL_SCHEMA

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pandas as pd

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


@dataclass(frozen=True)
class Grain:
    """One report table cut from a flattened analysis: its ``name`` (Parquet object stem,
    Iceberg table suffix), what one row stands for, the ``flags`` its rows of the flattened
    table have, and the flattened columns it drops: the flags, and ``constant`` dimensions."""

    name: str
    grain: str
    flags: Mapping[str, bool] = field(hash=False)
    constant: tuple[str, ...] = ()

    @property
    def dropped(self) -> tuple[str, ...]:
        return (*self.flags, *self.constant)

    def schema(self, flattened: pa.Schema) -> pa.Schema:
        return pa.schema([field for field in flattened if field.name not in self.dropped])

    def cut(self, flattened: pa.Table) -> pa.Table:
        rows = [pc.equal(flattened.column(name), value) for name, value in self.flags.items()]
        return flattened.filter(functools.reduce(pc.and_, rows)).drop_columns(list(self.dropped))


_SPLIT: Final = ("by_field", "by_value")

FUNNEL_GRAINS: Final = (
    Grain(
        "funnel",
        "one row per (query window, date, step), all users together",
        {"is_overall": True, "is_all_dates": False},
        _SPLIT,
    ),
    Grain(
        "funnel_totals",
        "one row per (query window, step), all users together, over the whole window",
        {"is_overall": True, "is_all_dates": True},
        (*_SPLIT, "date"),
    ),
    Grain(
        "funnel_by_value",
        "one row per (query window, split value, date, step)",
        {"is_overall": False, "is_all_dates": False},
    ),
    Grain(
        "funnel_by_value_totals",
        "one row per (query window, split value, step), over the whole window",
        {"is_overall": False, "is_all_dates": True},
        ("date",),
    ),
)
"""The funnel report's tables; the first is the main one."""

EVENT_GRAINS: Final = (
    Grain(
        "events", "one row per (query window, split values, measure, period)", {"is_total": False}
    ),
    Grain(
        "events_totals",
        "one row per (query window, split values, measure), over the whole window",
        {"is_total": True},
        ("period", "period_start", "date"),
    ),
)
"""The event report's tables; the first is the main one."""


def cut_grains(flattened: pa.Table, grains: Sequence[Grain]) -> dict[str, pa.Table]:
    return {grain.name: grain.cut(flattened) for grain in grains}


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
    """Report tables as pandas DataFrames, by name, for notebooks
    (``as_dataframes(funnel_tables(response))["funnel"].head()``).

    Every column keeps its Arrow type (``pandas.ArrowDtype``), so nulls stay nulls, counts stay
    integers and no column is ``object``. Needs pandas.

    :param tables: what :func:`funnel_tables` or :func:`event_tables` returned.
    """
    try:
        import pandas as pd
    except ImportError:
        raise AnalyticsConfigurationError(
            'as_dataframes needs pandas: pip install ".[pandas]" from a clone of the provider, '
            "or pip install pandas"
        ) from None
    return {name: table.to_pandas(types_mapper=pd.ArrowDtype) for name, table in tables.items()}
