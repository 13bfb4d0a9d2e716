"""FunnelReportOperator and EventReportOperator: analyses as report tables, one grain each.

The jobs (and with them pyarrow) are imported when a task runs, not when a DAG file is parsed.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, ClassVar

from airflow_provider_analytics.operators.intervals import covered_days
from airflow_provider_analytics.operators.output import (
    AnalyticsOutputOperator,
    LineageTarget,
    iceberg_table_uri,
    object_target,
)
from airflow_provider_analytics.operators.paths import table_paths

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow.sdk import Context

    from airflow_provider_analytics.jobs.reports import ReportKind, TableWriter


class _AnalysisReportOperator(AnalyticsOutputOperator):
    """Run one analysis over the data interval and write its report tables.

    Each grain is a table of its own (``docs/report_tables.md``): the main table
    (``funnel``, ``events``) and the others (``funnel_totals``, ``events_totals``, ...).

    The public subclasses' docstrings share one parameter text (:func:`_report_doc`), each
    naming its own analysis.
    """

    report_name: ClassVar[str]
    template_fields: Sequence[str] = (
        "analytics_conn_id",
        "request",
        "destination",
        "iceberg_table",
        "timezone",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {"request": "json"}

    def __init__(
        self,
        *,
        request: Mapping[str, Any],
        destination: str | None = None,
        window_days: int | None = None,
        compression: str = "zstd",
        timezone: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(destination=destination, **kwargs)
        self.request = request
        self.window_days = window_days
        self.compression = compression
        self.timezone = timezone

    @property
    def kind(self) -> ReportKind:
        from airflow_provider_analytics.jobs.reports import EVENTS, FUNNEL

        return FUNNEL if self.report_name == FUNNEL.name else EVENTS

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_provider_analytics.jobs.reports import run_report

        body = dict(self.request)
        days = covered_days(context)
        body.setdefault("fromDate", days.dates[0])
        body.setdefault("toDate", days.dates[1])
        writer, output_uri, written = self._writer(days.partition)
        result = run_report(
            self.kind,
            self.hook.get_conn(),
            body,
            writer,
            window_days=self.window_days,
            timezone=self.timezone or self.hook.project_timezone,
        )
        self.log.info(
            "%s report: %d rows to %s; %s",
            self.report_name,
            result.rows,
            result.uri,
            result.headline,
        )
        summary = result.as_dict()
        if self.iceberg_table:
            # the sink names tables namespace.table; assets and XComs name them by URI
            summary["uri"] = output_uri
            for table in summary["tables"].values():
                table["uri"] = iceberg_table_uri(self.iceberg_conn_id, table["uri"])
        self.publish_output(
            context,
            output_uri,
            written,
            rows=result.rows,
            report=self.report_name,
            tables={name: table["uri"] for name, table in summary["tables"].items()},
        )
        return summary

    def _writer(self, day: str) -> tuple[TableWriter, str, list[LineageTarget]]:
        """Where the tables go, the URI that names the main one, and every table's lineage
        name."""
        if self.iceberg_table:
            from airflow_provider_analytics.sinks.iceberg import IcebergTables

            catalog, uri = self.iceberg_catalog()
            tables = IcebergTables(
                catalog, self.iceberg_table, self.report_name, dt.date.fromisoformat(day)
            )
            grains = [tables.identifier_for(grain.name) for grain in self.kind.grains]
            return tables, uri, self.iceberg_targets(grains)
        from airflow_provider_analytics.sinks.parquet import ParquetTables

        names = [grain.name for grain in self.kind.grains]
        paths = table_paths(self.destination, names, {"dt": day}, self.allowed_roots())
        written = [object_target(path) for path in paths.values()]
        return ParquetTables(paths, compression=self.compression), str(paths[names[0]]), written

    def lineage_input_name(self) -> str:
        return f"{self.report_name}_analysis"


_PARAMETERS = """
:param request: the {analysis} request body
    ({keys}; templated). ``fromDate``/``toDate`` default to the run's data interval.
    Checked before anything is sent.
:param destination: a prefix ending in ``/`` under which each table gets
    ``<table>/dt=<first day of the data interval>/<table>.parquet``, or the ``{main}``
    table's object URI, the other tables being its siblings (templated). Each object is
    written atomically; a rerun replaces them. The untemplated prefix is declared as the
    task's Asset unless ``outlets`` are given.
:param iceberg_table: instead of ``destination``, the ``{main}`` Iceberg table
    ``namespace.table`` (the other tables get the same suffixes); each run replaces its
    day's ``dt`` partition (the first day of the data interval) in every table.
:param iceberg_conn_id: the connection describing the Iceberg catalog.
:param window_days: split long ranges into windows of this many days (backfills); each
    row carries its window as ``query_from_date``/``query_to_date``.
:param compression: Parquet codec, zstd by default.
:param timezone: the project's time zone, in which the platform writes date-times;
    default: the connection's ``timezone`` extra, else UTC.
:param analytics_conn_id: id of the ``analytics`` connection (templated).
"""


def _report_doc(summary: str, *, analysis: str, keys: str, main: str) -> str:
    """A report operator's docstring: its own summary, then the parameters they share."""
    return summary + _PARAMETERS.format(analysis=analysis, keys=keys, main=main)


class FunnelReportOperator(_AnalysisReportOperator):
    __doc__ = _report_doc(
        """Funnel analysis (spec 4.16) as four tables: all users and split values, per day and
over the whole range, one row per step in each.

Columns include converted users, conversion rate (vs the previous step), completion rate
(vs the first step) and median seconds to the next step; the documentation's report tables
page lists them all. The XCom carries the overall conversion of the whole range.
""",
        analysis="funnel",
        keys="``steps``, ``crowds``, ``convertTime``, ...",
        main="funnel",
    )

    report_name = "funnel"
    ui_color = "#e8f1d4"


class EventReportOperator(_AnalysisReportOperator):
    __doc__ = _report_doc(
        """Event analysis (spec 4.17) as two tables: one row per split values, measure and period,
and the platform's totals over the whole range.

The XCom carries the total of each measure.
""",
        analysis="event analysis",
        keys="``measures``, ``crowds``, ``unit``, ``byFields``, ...",
        main="events",
    )

    report_name = "events"
    ui_color = "#f4e6d0"
