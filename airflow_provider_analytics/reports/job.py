"""Funnel and event reports: query, flatten, cut into one table per grain, write each.

The work behind ``FunnelReportOperator`` and ``EventReportOperator``, usable without Airflow.
A long date range can be split into windows of ``window_days`` so a year of history becomes a
series of modest queries; the windows' tables are concatenated, each row carrying the window it
came from (``query_from_date``, ``query_to_date``), because a funnel's ``$ALL`` column and an
event analysis' totals are per query. Everything stays in Arrow; the tables go to a
:class:`~airflow_provider_analytics.output.destination.TableWriter` (Parquet objects, or
Iceberg tables).

:func:`run_report_days` makes one report per day instead, each day's tables going to a writer
of their own: the look-back window (``lookback_days``) re-pulls past days with it, each one the
very report its own daily run wrote.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_analytics.client import AnalyticsClient
from airflow_provider_analytics.client.analysis_requests import EventRequest, FunnelRequest
from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import AnalyticsUsageError
from airflow_provider_analytics.reports.frames import (
    EVENT_GRAINS,
    FUNNEL_GRAINS,
    FUNNEL_SCHEMA,
    event_schema,
    event_table,
    funnel_table,
)
from airflow_provider_analytics.reports.grains import Grain, cut_grains
from airflow_provider_analytics.reports.unset_timezone import UnsetTimezone

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from airflow_provider_analytics.client.api import AnalysisAnswer
    from airflow_provider_analytics.core.progress import Progress
    from airflow_provider_analytics.output.destination import Destination, TableWriter

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


def funnel_headline(tables: Mapping[str, pa.Table]) -> dict[str, Any]:
    """Overall conversion (last step over first step) of the whole range, all users together."""
    totals = tables["funnel_totals"]
    steps = pc.max(totals.column("step_number")).as_py() or 0
    first = _sum_where(totals, pc.equal(totals.column("step_number"), 1), "converted_users")
    last = _sum_where(totals, pc.equal(totals.column("step_number"), steps), "converted_users")
    return {
        "steps": steps,
        "first_step_users": int(first),
        "last_step_users": int(last),
        "overall_conversion": round(last / first, 6) if first else None,
    }


def event_headline(tables: Mapping[str, pa.Table]) -> dict[str, Any]:
    """Per measure: the sum of the range totals over split values and windows."""
    totals = tables["events_totals"]
    measures = []
    for index in sorted(set(totals.column("measure_index").to_pylist())):
        rows = totals.filter(pc.equal(totals.column("measure_index"), index))
        counted = rows.column("count").null_count < rows.num_rows
        measures.append(
            {
                "measure": rows.column("measure_label")[0].as_py(),
                "expression": rows.column("measure_expression")[0].as_py(),
                "aggregator": rows.column("measure_aggregator")[0].as_py(),
                "total": pc.sum(rows.column("count" if counted else "value")).as_py(),
            }
        )
    return {"measures": measures}


@dataclass(frozen=True)
class ReportKind:
    """What differs between the funnel and the event report."""

    name: str
    validate: Callable[[Mapping[str, Any]], FunnelRequest | EventRequest]
    analyze: Callable[[AnalyticsClient, FunnelRequest | EventRequest], AnalysisAnswer]
    flatten: Callable[[Any, dict[str, Any], str], pa.Table]
    schema: Callable[[dict[str, Any]], pa.Schema]
    grains: Sequence[Grain]
    headline: Callable[[Mapping[str, pa.Table]], dict[str, Any]]

    def flattened_schema(self, request: dict[str, Any]) -> pa.Schema:
        """The flattened table's columns for this request, with the query window's."""
        schema = self.schema(request)
        for window_field in WINDOW_FIELDS:
            schema = schema.append(window_field)
        return schema


FUNNEL = ReportKind(
    name="funnel",
    validate=FunnelRequest.of,
    analyze=AnalyticsClient.analyze,
    flatten=lambda answer, request, timezone: funnel_table(answer, timezone=timezone),
    schema=lambda request: FUNNEL_SCHEMA,
    grains=FUNNEL_GRAINS,
    headline=funnel_headline,
)
EVENTS = ReportKind(
    name="events",
    validate=EventRequest.of,
    analyze=AnalyticsClient.analyze,
    flatten=lambda answer, request, timezone: event_table(answer, request, timezone=timezone),
    schema=lambda request: event_schema(request),
    grains=EVENT_GRAINS,
    headline=event_headline,
)


@dataclass
class ReportResult:
    """What a report wrote; small and JSON-able (the operator's XCom).

    ``uri`` and ``rows`` are the main table's (the first grain); ``tables`` describes every
    table written, by name.
    """

    uri: str
    report: str
    rows: int
    windows: int
    from_date: str
    to_date: str
    seconds: float
    headline: dict[str, Any]
    tables: dict[str, dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _progress(
    client: AnalyticsClient, kind: ReportKind, total: int, unit: str, interval: float | None
) -> Progress:
    """The progress of a report's queries, made before the first query (which checks
    ``interval``); the final line comes when there was more than one query."""
    return client.progress(f"{kind.name} report", total=total, unit=unit, interval=interval)


def _queried(progress: Progress, done: int) -> None:
    """The queries succeeded: the final line for several, nothing more for one."""
    if done > 1:
        progress.finish(done)


def build_report_tables(
    kind: ReportKind,
    client: AnalyticsClient,
    request: Mapping[str, Any],
    *,
    window_days: int | None = None,
    timezone: str | None = None,
    progress_interval: float | None = None,
) -> tuple[dict[str, pa.Table], int]:
    """Check the request (once, by the client's rules, before the first query), query window by
    window, flatten, cut into grains.

    Returns the report tables by name and the window count.

    :param kind: :data:`FUNNEL` or :data:`EVENTS`.
    :param client: the API client.
    :param request: the analysis request body (spec 4.16 / 4.17) with fromDate and toDate.
    :param window_days: split the date range into windows of this many days.
    :param timezone: the project's time zone, in which the platform writes date-times;
        ``None`` (not set) reads UTC and logs a warning once (:mod:`.unset_timezone`).
    :param progress_interval: seconds between progress lines (windows done, the rate, the
        time left); default: the client's.
    """
    checked = kind.validate(request)
    body = checked.sent()
    timezone, unset = _zone(timezone, kind)
    schema = kind.flattened_schema(body)
    windows = date_windows(body["fromDate"], body["toDate"], window_days)
    progress = _progress(client, kind, len(windows), "windows", progress_interval)
    tables = []
    try:
        for from_date, to_date in windows:
            table = _window_table(
                kind, client, checked, (from_date, to_date), (timezone, unset), schema, body
            )
            tables.append(table)
            progress.update(len(tables))
    finally:
        progress.close()
    _queried(progress, len(tables))
    if unset is not None:
        unset.warn()
    flattened = pa.concat_tables(tables) if tables else schema.empty_table()
    return cut_grains(flattened, kind.grains), len(windows)


def _zone(timezone: str | None, kind: ReportKind) -> tuple[str, UnsetTimezone | None]:
    """The zone to read date-times in, and the watcher of the answers when none is set."""
    if timezone is None:
        return "UTC", UnsetTimezone(kind.name)
    return rules.time_zone(timezone), None


def _window_table(
    kind: ReportKind,
    client: AnalyticsClient,
    checked: FunnelRequest | EventRequest,
    window: tuple[str, str],
    zone: tuple[str, UnsetTimezone | None],
    schema: pa.Schema,
    body: dict[str, Any],
) -> pa.Table:
    """One query over a ``window`` (first and last day) of ``checked``, flattened, each row
    carrying the window; ``zone`` is the time zone and, when none is set, the watcher of
    the answers."""
    timezone, unset = zone
    answer = kind.analyze(client, checked.window(*window))
    if unset is not None:
        unset.observe(answer)
    table = kind.flatten(answer.answer, body, timezone)
    for window_field, day in zip(WINDOW_FIELDS, window, strict=True):
        value = pa.scalar(dt.date.fromisoformat(day), pa.date32())
        table = table.append_column(window_field, pa.repeat(value, table.num_rows))
    return table.cast(schema)


def run_report(
    kind: ReportKind,
    client: AnalyticsClient,
    request: Mapping[str, Any],
    writer: TableWriter,
    *,
    window_days: int | None = None,
    timezone: str | None = None,
    progress_interval: float | None = None,
) -> ReportResult:
    """Build the report tables and hand each to ``writer`` (which replaces it).

    :param kind: :data:`FUNNEL` or :data:`EVENTS`.
    :param client: the API client.
    :param request: the analysis request body with fromDate and toDate.
    :param writer: where the tables go
        (:class:`~airflow_provider_analytics.output.parquet.ParquetTables` or
        an Iceberg destination's tables).
    :param window_days: split the date range into windows of this many days.
    :param timezone: the project's time zone, in which the platform writes date-times;
        ``None`` (not set) reads UTC and logs a warning once.
    :param progress_interval: seconds between progress lines; default: the client's.
    """
    started = time.monotonic()
    tables, windows = build_report_tables(
        kind,
        client,
        request,
        window_days=window_days,
        timezone=timezone,
        progress_interval=progress_interval,
    )
    return _written(
        kind, tables, writer, windows, (str(request["fromDate"]), str(request["toDate"])), started
    )


def _written(
    kind: ReportKind,
    tables: dict[str, pa.Table],
    writer: TableWriter,
    windows: int,
    days: tuple[str, str],
    started: float,
) -> ReportResult:
    """Hand each table to ``writer`` and summarise what was written.

    :param days: the first and last day the report covers.
    :param started: ``time.monotonic()`` when the report's work began.
    """
    written = {name: writer.write_table(name, table) for name, table in tables.items()}
    main = written[kind.grains[0].name]
    return ReportResult(
        uri=str(main["uri"]),
        report=kind.name,
        rows=int(main["rows"]),
        windows=windows,
        from_date=days[0],
        to_date=days[1],
        seconds=round(time.monotonic() - started, 3),
        headline=kind.headline(tables),
        tables=written,
    )


def run_report_days(
    kind: ReportKind,
    client: AnalyticsClient,
    request: Mapping[str, Any],
    days: Sequence[str],
    writer_for: Callable[[str], TableWriter],
    *,
    timezone: str | None = None,
    progress_interval: float | None = None,
) -> list[ReportResult]:
    """One report per day: ``request`` over that day alone (``fromDate`` = ``toDate`` = the
    day), its tables handed to ``writer_for(day)``.

    Each day's tables are exactly those :func:`run_report` gives for a request over that one
    day: one query, so a funnel's ``$ALL`` column and an event analysis' totals are the day's,
    and ``query_from_date`` = ``query_to_date`` = the day. This is how a look-back run
    re-pulls past days: a day re-pulled later holds the rows its own daily run would write
    now, never a share of a wider query.

    Every day's request is checked before the first query, and every day is queried before
    the first write, so a refused request or a failed query writes nothing. The days are
    then written in the order given, each day's tables replacing that day's (atomically per
    table, as the writer does).

    :param kind: :data:`FUNNEL` or :data:`EVENTS`.
    :param client: the API client.
    :param request: the analysis request body; its ``fromDate``/``toDate``, if any, are
        replaced by each day.
    :param days: ``yyyy-MM-dd`` days, each written once, in this order.
    :param writer_for: the writer of a day's tables (e.g. Parquet objects under ``dt=<day>``).
    :param timezone: the project's time zone, in which the platform writes date-times;
        ``None`` (not set) reads UTC and logs a warning once.
    :param progress_interval: seconds between progress lines (days queried, the rate, the
        time left); default: the client's.
    :return: one result per day, in the order of ``days``.
    :raises AnalyticsUsageError: for a day listed twice (a day is written once), before any
        query.
    """
    if len(set(days)) != len(days):
        raise AnalyticsUsageError(f"run_report_days: a day is listed twice in {list(days)}")
    timezone, unset = _zone(timezone, kind)
    checked = [kind.validate({**request, "fromDate": day, "toDate": day}) for day in days]
    built = []
    progress = _progress(client, kind, len(days), "days", progress_interval)
    try:
        for day, day_request in zip(days, checked, strict=True):
            started = time.monotonic()
            body = day_request.sent()
            schema = kind.flattened_schema(body)
            flattened = _window_table(
                kind, client, day_request, (day, day), (timezone, unset), schema, body
            )
            built.append((day, cut_grains(flattened, kind.grains), time.monotonic() - started))
            progress.update(len(built))
    finally:
        progress.close()
    _queried(progress, len(built))
    if unset is not None:
        unset.warn()
    # each day's seconds: its query and its writes, not the other days' queries between them
    return [
        _written(kind, tables, writer_for(day), 1, (day, day), time.monotonic() - seconds)
        for day, tables, seconds in built
    ]


def report_to_destination(
    kind: ReportKind,
    client: AnalyticsClient,
    request: Mapping[str, Any],
    destination: Destination,
    days: Sequence[str],
    *,
    window_days: int | None = None,
    timezone: str | None = None,
    progress_interval: float | None = None,
) -> dict[str, Any]:
    """Write a report's tables to ``destination`` for each of ``days`` (the run's own day last).

    With one day, the request's own range is reported (split into ``window_days`` windows) and
    written to that day; with more (a look-back), each day is reported alone
    (:func:`run_report_days`). Every place written is checked before the first request.
    ``timezone`` and ``progress_interval`` are :func:`run_report`'s.

    :return: the XCom: the run's own day as :class:`ReportResult` describes it, ``seconds``
        over all days, ``days_written`` and each re-pulled day's tables under ``repulled``.
    """
    names = [grain.name for grain in kind.grains]
    destination.check(days, names)
    if len(days) > 1:
        results = run_report_days(
            kind,
            client,
            request,
            days,
            lambda day: destination.report_tables(day, names),
            timezone=timezone,
            progress_interval=progress_interval,
        )
    else:
        writer = destination.report_tables(days[0], names)
        results = [
            run_report(
                kind,
                client,
                request,
                writer,
                window_days=window_days,
                timezone=timezone,
                progress_interval=progress_interval,
            )
        ]
    summary = results[-1].as_dict()
    summary["uri"] = destination.uri(days[-1], names)
    summary["seconds"] = round(sum(result.seconds for result in results), 3)
    summary[destination.identity.column] = destination.identity.value
    summary["days_written"] = list(days)
    summary["repulled"] = {
        result.from_date: {
            "rows": result.rows,
            "headline": result.headline,
            "tables": result.tables,
        }
        for result in results[:-1]
    }
    return summary
