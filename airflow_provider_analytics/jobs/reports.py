"""Funnel and event reports: query, flatten to a tidy table, write one Parquet object.

The work behind ``FunnelReportOperator`` and ``EventReportOperator``, usable without Airflow.
A long date range can be split into windows of ``window_days`` so a year of history becomes a
series of modest queries; the windows' tables are concatenated, each row carrying the window it
came from (``query_from_date``, ``query_to_date``), because a funnel's ``$ALL`` column and an
event analysis' totals are per query.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_analytics.client import AnalyticsClient, AnalyticsProtocolError, rules
from airflow_provider_analytics.client.validation import (
    validate_event_request,
    validate_funnel_request,
)
from airflow_provider_analytics.storage import (
    StoragePath,
    parquet_compression,
    write_table_atomically,
)
from airflow_provider_analytics.tabular.frames import (
    FUNNEL_SCHEMA,
    event_frame,
    event_schema,
    funnel_frame,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    import pandas as pd

WINDOW_FIELDS = (pa.field("query_from_date", pa.date32()), pa.field("query_to_date", pa.date32()))


def date_windows(from_date: str, to_date: str, window_days: int | None) -> list[tuple[str, str]]:
    """Split an inclusive ``yyyy-MM-dd`` range into consecutive windows of ``window_days``.

    :param from_date: first day.
    :param to_date: last day (inclusive).
    :param window_days: days per window; None or 0 for one window.
    :raises AnalyticsValidationError: for a window that is not a whole number of days >= 0.
    """
    start, end = dt.date.fromisoformat(from_date), dt.date.fromisoformat(to_date)
    if window_days is not None:
        rules.integer(window_days, "window_days", minimum=0)
    if not window_days:
        return [(from_date, to_date)]
    windows = []
    while start <= end:
        stop = min(start + dt.timedelta(days=window_days - 1), end)
        windows.append((start.isoformat(), stop.isoformat()))
        start = stop + dt.timedelta(days=1)
    return windows


def _sum_where(table: pa.Table, mask: pa.ChunkedArray | pa.Array, column: str) -> float:
    total = pc.sum(table.filter(mask).column(column)).as_py()
    return float(total or 0)


def funnel_headline(table: pa.Table) -> dict[str, Any]:
    """Overall conversion (last step over first step) of the unsplit ``$ALL`` rows."""
    overall = pc.and_(table.column("is_overall"), table.column("is_all_dates"))
    steps = pc.max(table.column("step_number")).as_py() or 0
    first = _sum_where(
        table, pc.and_(overall, pc.equal(table.column("step_number"), 1)), "converted_users"
    )
    last = _sum_where(
        table, pc.and_(overall, pc.equal(table.column("step_number"), steps)), "converted_users"
    )
    return {
        "steps": steps,
        "first_step_users": int(first),
        "last_step_users": int(last),
        "overall_conversion": round(last / first, 6) if first else None,
    }


def event_headline(table: pa.Table) -> dict[str, Any]:
    """Per measure: the sum of the range totals over split values and windows."""
    totals = table.filter(table.column("is_total"))
    measures = []
    for index in sorted(set(table.column("measure_index").to_pylist())):
        rows = totals.filter(pc.equal(totals.column("measure_index"), index))
        labels = rows.column("measure_label").to_pylist() or [None]
        expressions = rows.column("measure_expression").to_pylist() or [None]
        aggregators = rows.column("measure_aggregator").to_pylist() or [None]
        measures.append(
            {
                "measure": labels[0],
                "expression": expressions[0],
                "aggregator": aggregators[0],
                "total": pc.sum(rows.column("value")).as_py(),
            }
        )
    return {"measures": measures}


@dataclass(frozen=True)
class ReportKind:
    """What differs between the funnel and the event report."""

    name: str
    validate: Callable[[Mapping[str, Any]], dict[str, Any]]
    analyze: Callable[[AnalyticsClient, dict[str, Any]], dict[str, Any]]
    flatten: Callable[[dict[str, Any], dict[str, Any]], pd.DataFrame]
    schema: Callable[[dict[str, Any]], pa.Schema]
    headline: Callable[[pa.Table], dict[str, Any]]

    def table_schema(self, request: dict[str, Any]) -> pa.Schema:
        schema = self.schema(request)
        for window_field in WINDOW_FIELDS:
            schema = schema.append(window_field)
        return schema


FUNNEL = ReportKind(
    name="funnel",
    validate=validate_funnel_request,
    analyze=AnalyticsClient.analyze_funnel,
    flatten=lambda response, request: funnel_frame(response),
    schema=lambda request: FUNNEL_SCHEMA,
    headline=funnel_headline,
)
EVENTS = ReportKind(
    name="events",
    validate=validate_event_request,
    analyze=AnalyticsClient.analyze_events,
    flatten=event_frame,
    schema=lambda request: event_schema(request),
    headline=event_headline,
)


@dataclass
class ReportResult:
    """What a report wrote; small and JSON-able (the operator's XCom)."""

    uri: str
    report: str
    rows: int
    windows: int
    from_date: str
    to_date: str
    bytes_written: int
    seconds: float
    headline: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def build_report_table(
    kind: ReportKind,
    client: AnalyticsClient,
    request: Mapping[str, Any],
    *,
    window_days: int | None = None,
) -> tuple[pa.Table, int]:
    """Validate, query window by window, flatten; returns the table and the window count.

    :param kind: :data:`FUNNEL` or :data:`EVENTS`.
    :param client: the API client.
    :param request: the analysis request body (spec 4.16 / 4.17) with fromDate and toDate.
    :param window_days: split the date range into windows of this many days.
    """
    body = kind.validate(request)
    schema = kind.table_schema(body)
    windows = date_windows(body["fromDate"], body["toDate"], window_days)
    tables = []
    for from_date, to_date in windows:
        response = kind.analyze(client, {**body, "fromDate": from_date, "toDate": to_date})
        try:
            frame = kind.flatten(response, body)
        except ValueError as error:  # the frames name what in the answer does not fit
            raise AnalyticsProtocolError(
                f"analyze_{kind.name}: the answer cannot be read as a report: {error}",
                operation=f"analyze_{kind.name}",
            ) from error
        table = pa.Table.from_pandas(frame, preserve_index=False)
        for window_field, day in zip(WINDOW_FIELDS, (from_date, to_date), strict=True):
            value = pa.scalar(dt.date.fromisoformat(day), pa.date32())
            table = table.append_column(window_field, pa.repeat(value, table.num_rows))
        tables.append(table.cast(schema))
    return pa.concat_tables(tables) if tables else schema.empty_table(), len(windows)


def run_report(
    kind: ReportKind,
    client: AnalyticsClient,
    request: Mapping[str, Any],
    destination: StoragePath,
    *,
    window_days: int | None = None,
    compression: str = "zstd",
) -> ReportResult:
    """Build the report table and write it atomically to ``destination`` (replacing it).

    :param kind: :data:`FUNNEL` or :data:`EVENTS`.
    :param client: the API client.
    :param request: the analysis request body with fromDate and toDate.
    :param destination: the Parquet object to (re)place.
    :param window_days: split the date range into windows of this many days.
    :param compression: Parquet codec.
    """
    parquet_compression(compression)
    started = time.monotonic()
    table, windows = build_report_table(kind, client, request, window_days=window_days)
    bytes_written = write_table_atomically(table, destination, compression=compression)
    return ReportResult(
        uri=str(destination),
        report=kind.name,
        rows=table.num_rows,
        windows=windows,
        from_date=str(request["fromDate"]),
        to_date=str(request["toDate"]),
        bytes_written=bytes_written,
        seconds=round(time.monotonic() - started, 3),
        headline=kind.headline(table),
    )
