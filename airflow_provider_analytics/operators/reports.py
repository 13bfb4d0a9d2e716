"""FunnelReportOperator and EventReportOperator: analyses as report tables, one grain each;
the jobs (and pyarrow) are imported when a task runs, not when a DAG file is parsed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import ReportWrittenInPartError, bounded_repr
from airflow_provider_analytics.core.identity import report_identity
from airflow_provider_analytics.operators.intervals import covered_days
from airflow_provider_analytics.operators.output import AnalyticsOutputOperator

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow.sdk import Context

    from airflow_provider_analytics.client.analysis_requests import EventRequest, FunnelRequest
    from airflow_provider_analytics.reports.job import ReportKind

LOOKBACK_DAYS_MAX: Final = 366
"""The longest look-back window; re-pulling more than a year is a backfill."""


class _AnalysisReportOperator(AnalyticsOutputOperator):
    """Run one analysis over the data interval and write its report tables, one grain each
    (``docs/report_tables.md``): the main table (``funnel``, ``events``) and the others
    (``funnel_totals``, ``events_totals``, ...).

    :param destination: a prefix ending in ``/`` under which each table gets
        ``<table>/report_key=<key>/dt=<first day of the data interval>/<table>.parquet``, so
        that many reports share one prefix, or the main table's object URI, the other tables
        being its siblings (templated). Each object is written atomically and records its
        report key; a rerun replaces them, and an object holding another report is refused.
    :param iceberg_table: instead of ``destination``, the main Iceberg table
        ``namespace.table`` (the other tables get the same suffixes); its rows carry
        ``report_key``, and each run replaces its report's day (``report_key``, ``dt``) in every
        table, so that many reports share one table.
    :param report_key: the stable name of this report's rows in a shared table or prefix
        (templated; 1 to 64 letters, digits, ``_``, ``-``, ``.``). Default: the main table's
        name, ``_`` and 12 hex digits of a digest of the request without its dates, the same on
        every day. Give one to keep the key when the request changes.
    :param window_days: split long ranges into windows of this many days (backfills); each
        row carries its window as ``query_from_date``/``query_to_date``.
    :param lookback_days: late data: also re-pull the N days before the run's day (templated;
        default 0, at most 366), each queried on its own exactly as its own daily run queries
        it, replacing that day's ``dt`` partition, so no day is ever held twice. Needs a run
        whose report is one day and, for Parquet, a destination prefix. Every day is queried
        before the first is written. The XCom lists ``days_written`` (oldest first) and each
        re-pulled day's tables under ``repulled``. ``"2"``, ``True`` or ``1.5`` are refused.
    :param compression: Parquet codec, zstd by default.
    :param progress_interval: seconds between progress lines while the windows or days are
        queried; default: the connection's ``progress_interval`` extra, else 10.
    :param timezone: the project's time zone, in which the platform writes date-times;
        default: the connection's ``timezone`` extra, else UTC with a warning.
    """

    report_name: ClassVar[str]
    template_fields: Sequence[str] = (
        "analytics_conn_id",
        "request",
        "destination",
        "iceberg_table",
        "timezone",
        "lookback_days",
        "report_key",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {"request": "json"}

    def __init__(
        self,
        *,
        request: Mapping[str, Any] | FunnelRequest | EventRequest,
        window_days: int | None = None,
        lookback_days: int = 0,
        report_key: str | None = None,
        compression: str = "zstd",
        timezone: str | None = None,
        progress_interval: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        # a typed request becomes its body here: the dict Airflow renders and shows
        self.request = request
        if not isinstance(request, Mapping | str):
            from airflow_provider_analytics.client.analysis_requests import body_of

            self.request = body_of(request, self.report_name)
        self.window_days = window_days
        self.lookback_days = lookback_days
        self.report_key = report_key
        self.compression = compression
        self.timezone = timezone
        self.progress_interval = progress_interval

    @property
    def kind(self) -> ReportKind:
        from airflow_provider_analytics.reports.job import EVENTS, FUNNEL

        return FUNNEL if self.report_name == FUNNEL.name else EVENTS

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_provider_analytics.operators.lineage import report_origins
        from airflow_provider_analytics.reports.job import report_to_destination

        # rendered values are checked as they are, never coerced ("2" or True are refused)
        lookback_days = rules.integer(
            self.lookback_days, "lookback_days", minimum=0, maximum=LOOKBACK_DAYS_MAX
        )
        if self.window_days is not None:
            rules.integer(self.window_days, "window_days", minimum=0)
        if not isinstance(self.request, Mapping):  # a template renders text, unless native
            rules.fail("request", "must be a dict (or a typed request), not text", self.request)
        body = dict(self.request)
        days = covered_days(context)
        body.setdefault("fromDate", days.dates[0])
        body.setdefault("toDate", days.dates[1])
        if lookback_days:
            if body["fromDate"] != days.partition or body["toDate"] != days.partition:
                rules.fail(
                    "lookback_days",
                    f"needs a run that reports the one day of its partition ({days.partition}), "
                    "so that each re-pulled day is written as its own run writes it; this run "
                    f"reports {bounded_repr(body['fromDate'], 40)}.."
                    f"{bounded_repr(body['toDate'], 40)} (a run covering several days, or a "
                    "request with dates of its own, cannot look back)",
                    lookback_days,
                )
            if not self.writes_iceberg and not self.destination.endswith("/"):
                rules.fail(
                    "lookback_days",
                    "needs a destination prefix ending in '/' (each re-pulled day is written to "
                    "its own dt=<day> partition; an object URI names one object)",
                    lookback_days,
                )
        written_days = [*days.before(lookback_days), days.partition]
        # the request's own check first: the key is the digest of the request as sent
        identity = report_identity(self.report_name, self.kind.validate(body), self.report_key)
        destination = self.output_destination(identity, compression=self.compression)
        names = [grain.name for grain in self.kind.grains]
        try:
            summary = report_to_destination(
                self.kind,
                self.hook.get_conn(),
                body,
                destination,
                written_days,
                window_days=self.window_days,
                timezone=self.timezone or self.hook.project_timezone,  # None: UTC, with a warning
                progress_interval=self.progress_interval,
            )
        except ReportWrittenInPartError as error:  # the days replaced are read downstream
            self.publish_lineage(
                destination, error.replaced, names, report_origins(self.kind, body)
            )
            raise
        summary["lookback_days"] = lookback_days
        self.log.info(
            "%s report %s: %d rows to %s; %s; days written: %s",
            self.report_name,
            identity.value,
            summary["rows"],
            summary["uri"],
            summary["headline"],
            ", ".join(written_days),
        )
        self.publish_output(
            context,
            destination,
            written_days,
            names,
            report_origins(self.kind, body),
            rows=summary["rows"],
            report=self.report_name,
            report_key=identity.value,
            tables={name: table["uri"] for name, table in summary["tables"].items()},
            days_written=written_days,
        )
        return summary

    def lineage_input_name(self) -> str:
        return f"{self.report_name}_analysis"


class FunnelReportOperator(_AnalysisReportOperator):
    """Funnel analysis (spec 4.16) as four tables, one row per step in each
    (``docs/report_tables.md``); the XCom carries the overall conversion of the whole range.

    :param request: a :class:`~airflow_provider_analytics.client.analysis_requests.FunnelRequest`
        or its body as a dict (``steps``, ``crowds``, ``convertTime``, ...; templated);
        ``fromDate``/``toDate`` default to the run's covered days. Checked before anything is
        sent.
    """

    report_name = "funnel"
    ui_color = "#e8f1d4"


class EventReportOperator(_AnalysisReportOperator):
    """Event analysis (spec 4.17) as two tables (``docs/report_tables.md``); the XCom carries
    the total of each measure.

    :param request: an :class:`~airflow_provider_analytics.client.analysis_requests.EventRequest`
        or its body as a dict (``measures``, ``crowds``, ``unit``, ``byFields``, ...;
        templated); ``fromDate``/``toDate`` default to the run's covered days. Checked before
        anything is sent.
    """

    report_name = "events"
    ui_color = "#f4e6d0"
