"""Funnel and event reports: query, flatten, cut into one table per grain, write each; the work
behind ``FunnelReportOperator`` and ``EventReportOperator``, usable without Airflow.

A long range can be split into windows of ``window_days``; each row carries the window it came
from (``query_from_date``, ``query_to_date``), because a funnel's ``$ALL`` column and an event
analysis' totals are per query. :func:`run_report_days` makes one report per day instead (the
look-back window re-pulls past days with it, each the very report its own daily run wrote).
"""

from __future__ import annotations

import datetime as dt
import functools
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_analytics.client.analysis_requests import EventRequest, FunnelRequest
from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import AnalyticsUsageError, ReportWrittenInPartError
from airflow_provider_analytics.reports.frames import (
    EVENT_GRAINS,
    FUNNEL_GRAINS,
    FUNNEL_SCHEMA,
    Grain,
    cut_grains,
    event_schema,
    event_table,
    funnel_table,
)
from airflow_provider_analytics.reports.unset_timezone import clock_lead, warn_unset_timezone

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from airflow_provider_analytics.client import AnalyticsClient
    from airflow_provider_analytics.output.destination import Destination, TableWriter

WINDOW_FIELDS = (pa.field("query_from_date", pa.date32()), pa.field("query_to_date", pa.date32()))


def date_windows(from_date: str, to_date: str, window_days: int | None) -> list[tuple[str, str]]:
    """Split an inclusive ``yyyy-MM-dd`` range into consecutive windows of ``window_days``
    (None or 0: one window); a window that is not a whole number of days >= 0 is refused."""
    start, end = map(dt.date.fromisoformat, rules.date_range(from_date, to_date))
    if window_days is not None:
        rules.integer(window_days, "window_days", minimum=0)
    if not window_days:
        return [(from_date, to_date)]
    days = (end - start).days + 1
    last = dt.timedelta(days=min(window_days, days) - 1)  # within the range: no overflow
    starts = [start + dt.timedelta(n) for n in range(0, days, window_days)]
    return [(first.isoformat(), (first + min(last, end - first)).isoformat()) for first in starts]


def funnel_headline(tables: Mapping[str, pa.Table]) -> dict[str, Any]:
    """Overall conversion (last step over first step) of the whole range, all users."""
    totals = tables["funnel_totals"].select(["step_number", "converted_users"]).to_pydict()
    by_step: dict[int, int] = {}  # summed in Python: Arrow's int64 sum wraps around silently
    for step, users in zip(totals["step_number"], totals["converted_users"], strict=True):
        by_step[step] = by_step.get(step, 0) + users
    steps = max(by_step, default=0)
    first, last = (by_step.get(n) or 0 for n in (1, steps))
    return {
        "steps": steps,
        "first_step_users": first,
        "last_step_users": last,
        "overall_conversion": round(last / first, 6) if first else None,
    }


def event_headline(tables: Mapping[str, pa.Table]) -> dict[str, Any]:
    """Per measure: the sum of the range totals over split values and windows."""
    totals = tables["events_totals"]
    measures = []
    for index in sorted(set(totals.column("measure_index").to_pylist())):
        rows = totals.filter(pc.equal(totals.column("measure_index"), index))
        counted = rows.column("count").null_count < rows.num_rows
        numbers = [
            n for n in rows.column("count" if counted else "value").to_pylist() if n is not None
        ]
        measures.append(
            {
                "measure": rows.column("measure_label")[0].as_py(),
                "expression": rows.column("measure_expression")[0].as_py(),
                "aggregator": rows.column("measure_aggregator")[0].as_py(),
                "total": sum(numbers) if numbers else None,  # exact beyond int64
            }
        )
    return {"measures": measures}


@dataclass(frozen=True)
class ReportKind:
    """What differs between the funnel and the event report."""

    name: str
    validate: Callable[[Mapping[str, Any]], FunnelRequest | EventRequest]
    flatten: Callable[[Any, dict[str, Any], str], pa.Table]
    schema: Callable[[dict[str, Any]], pa.Schema]
    grains: Sequence[Grain]
    headline: Callable[[Mapping[str, pa.Table]], dict[str, Any]]


FUNNEL = ReportKind(
    name="funnel",
    validate=FunnelRequest.of,
    flatten=lambda answer, request, timezone: funnel_table(answer, timezone=timezone),
    schema=lambda request: FUNNEL_SCHEMA,
    grains=FUNNEL_GRAINS,
    headline=funnel_headline,
)
EVENTS = ReportKind(
    name="events",
    validate=EventRequest.of,
    flatten=lambda answer, request, timezone: event_table(answer, request, timezone=timezone),
    schema=event_schema,
    grains=EVENT_GRAINS,
    headline=event_headline,
)


@dataclass
class ReportResult:
    """What a report wrote, JSON-able (the operator's XCom): ``uri`` and ``rows`` are the main
    table's (the first grain), ``tables`` describes every table written, by name."""

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


def build_report_tables(
    kind: ReportKind,
    client: AnalyticsClient,
    request: Mapping[str, Any],
    *,
    window_days: int | None = None,
    timezone: str | None = None,
    progress_interval: float | None = None,
) -> tuple[dict[str, pa.Table], int]:
    """Check the request (before the first query), query window by window, flatten, cut into
    grains; returns the report tables by name and the window count.

    :param kind: :data:`FUNNEL` or :data:`EVENTS`.
    :param client: the API client.
    :param request: the analysis request body (spec 4.16 / 4.17) with fromDate and toDate.
    :param window_days: split the date range into windows of this many days.
    :param timezone: the project's time zone, in which the platform writes date-times;
        ``None`` reads UTC and logs a warning once (:mod:`.unset_timezone`).
    :param progress_interval: seconds between progress lines; default: the client's.
    """
    checked = kind.validate(request)
    body = checked.sent()
    windows = date_windows(body["fromDate"], body["toDate"], window_days)
    queried = _query(
        kind, client, [(checked, w) for w in windows], timezone, "windows", progress_interval
    )
    flattened = pa.concat_tables([table for table, _ in queried])
    return cut_grains(flattened, kind.grains), len(windows)


def _query(
    kind: ReportKind,
    client: AnalyticsClient,
    queries: Sequence[tuple[FunnelRequest | EventRequest, tuple[str, str]]],
    timezone: str | None,
    unit: str,
    progress_interval: float | None,
) -> list[tuple[pa.Table, float]]:
    """Each query (a checked request over a window) flattened, each row carrying its window,
    with the seconds it took. Without a timezone the answers are read as UTC and watched, to
    warn once all are read."""
    unset, lead = timezone is None, None
    timezone = "UTC" if timezone is None else rules.time_zone(timezone)
    progress = client.progress(
        f"{kind.name} report", total=len(queries), unit=unit, interval=progress_interval
    )
    done: list[tuple[pa.Table, float]] = []
    try:
        for checked, window in queries:
            started = time.monotonic()
            body = checked.sent()
            answer = client.analyze(checked.window(*window))
            if unset and lead is None:  # the first answer that shows a lead is the evidence
                lead = clock_lead(answer.answer.reportUpdateTime, answer.sent_at)
            table = kind.flatten(answer.answer, body, timezone)
            for window_field, day in zip(WINDOW_FIELDS, window, strict=True):
                value = pa.scalar(dt.date.fromisoformat(day), pa.date32())
                table = table.append_column(window_field, pa.repeat(value, table.num_rows))
            done.append((table, time.monotonic() - started))
            progress.update(len(done))
    finally:
        progress.close()
    if len(done) > 1:
        progress.finish(len(done))
    if unset:
        warn_unset_timezone(kind.name, lead)
    return done


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
    """Build the report tables (:func:`build_report_tables`, whose parameters these are) and
    hand each to ``writer`` (which replaces it).

    :param writer: where the tables go (Parquet objects, or an Iceberg destination's tables).
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
    days = (str(request["fromDate"]), str(request["toDate"]))
    return _written(kind, tables, writer, windows, days, time.monotonic() - started)


def _written(
    kind: ReportKind,
    tables: dict[str, pa.Table],
    writer: TableWriter,
    windows: int,
    days: tuple[str, str],
    taken: float,
) -> ReportResult:
    """Hand each table to ``writer`` and summarise what was written (``days``: the first and
    last day covered; ``taken``: the seconds the report's work took before its writes)."""
    started = time.monotonic()
    written = {name: writer.write_table(name, table) for name, table in tables.items()}
    main = written[kind.grains[0].name]
    seconds = round(taken + time.monotonic() - started, 3)
    headline = kind.headline(tables)
    return ReportResult(
        str(main["uri"]), kind.name, int(main["rows"]), windows, *days, seconds, headline, written
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
    """One report per day, in the order given: ``request`` over that day alone, its tables
    handed to ``writer_for(day)``; returns one result per day.

    Each day's tables are exactly those :func:`run_report` gives for that one day (one query),
    so a day re-pulled later holds the rows its own daily run would write, never a share of a
    wider query. Every request is checked and every day queried before the first write, so a
    refused request or a failed query writes nothing; a day listed twice is refused. A write
    that fails once earlier days were replaced raises :class:`ReportWrittenInPartError`,
    naming the days replaced and the days not.

    :param request: the analysis request body; its ``fromDate``/``toDate`` become each day.
    :param days: ``yyyy-MM-dd`` days, each written once.
    :param writer_for: the writer of a day's tables (e.g. Parquet objects under ``dt=<day>``).

    ``kind``, ``client``, ``timezone`` and ``progress_interval`` are :func:`build_report_tables`'s.
    """
    if len(set(days)) != len(days):
        raise AnalyticsUsageError(f"run_report_days: a day is listed twice in {list(days)}")
    queries = [
        (kind.validate({**request, "fromDate": day, "toDate": day}), (day, day)) for day in days
    ]
    queried = _query(kind, client, queries, timezone, "days", progress_interval)
    results: list[ReportResult] = []
    # each day's seconds: its query and its writes, not the other days' queries between them
    for day, (table, taken) in zip(days, queried, strict=True):
        try:
            tables = cut_grains(table, kind.grains)
            results.append(_written(kind, tables, writer_for(day), 1, (day, day), taken))
        except Exception as error:  # the days before it stay replaced: say which
            if not results:
                raise
            done = len(results)
            raise ReportWrittenInPartError(list(days[:done]), list(days[done:]), error) from error
    return results


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
    """Write a report's tables to ``destination`` for each of ``days`` (the run's own day
    last): with one day, the request's own range (in ``window_days`` windows); with more (a
    look-back), each day alone (:func:`run_report_days`). Every place written is checked before
    the first request. Returns the XCom: the run's own day's :class:`ReportResult`,
    ``seconds`` over all days, ``days_written`` and each re-pulled day's tables (``repulled``).
    """
    names = [grain.name for grain in kind.grains]
    destination.check(days, names)
    options: dict[str, Any] = {"timezone": timezone, "progress_interval": progress_interval}
    writer_for = functools.partial(destination.report_tables, names=names)
    if len(days) > 1:
        results = run_report_days(kind, client, request, days, writer_for, **options)
    else:
        writer = writer_for(days[0])
        results = [run_report(kind, client, request, writer, window_days=window_days, **options)]
    *repulled, own = results
    return {
        **own.as_dict(),
        "seconds": round(sum(result.seconds for result in results), 3),
        destination.identity.column: destination.identity.value,
        "days_written": list(days),
        "repulled": {
            result.from_date: {key: getattr(result, key) for key in ("rows", "headline", "tables")}
            for result in repulled
        },
    }
