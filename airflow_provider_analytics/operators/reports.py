"""FunnelReportOperator and EventReportOperator: analyses as tidy Parquet tables."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from airflow_provider_analytics.jobs.reports import EVENTS, FUNNEL, ReportKind, run_report
from airflow_provider_analytics.operators.intervals import covered_days
from airflow_provider_analytics.operators.output import AnalyticsOutputOperator
from airflow_provider_analytics.operators.paths import output_path

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow.sdk import Context


class _AnalysisReportOperator(AnalyticsOutputOperator):
    """Run one analysis over the days the run covers write its tidy table as Parquet.

    :param request: the analysis request body (templated); ``fromDate``/``toDate`` default to
        the days the run covers (the day rule, ``operators/intervals.py``). Validated before
        anything is sent.
    :param destination: object URI, or a prefix ending in ``/`` that gets
        ``dt=<first day the run covers>/<report>.parquet`` (templated). Written
        atomically; a rerun replaces it. Its untemplated prefix is declared as the task's Asset
        unless ``outlets`` are given.
    :param window_days: split long ranges into windows of this many days (backfills).
    :param compression: Parquet codec, zstd by default.
    """

    kind: ClassVar[ReportKind]
    template_fields: Sequence[str] = ("analytics_conn_id", "request", "destination")
    template_fields_renderers: ClassVar[dict[str, str]] = {"request": "json"}

    def __init__(
        self,
        *,
        request: Mapping[str, Any],
        destination: str,
        window_days: int | None = None,
        compression: str = "zstd",
        **kwargs: Any,
    ) -> None:
        super().__init__(destination=destination, **kwargs)
        self.request = request
        self.window_days = window_days
        self.compression = compression

    def execute(self, context: Context) -> dict[str, Any]:
        body = dict(self.request)
        days = covered_days(context)
        body.setdefault("fromDate", days.dates[0])
        body.setdefault("toDate", days.dates[1])
        path = output_path(self.destination, {"dt": days.partition}, f"{self.kind.name}.parquet")
        result = run_report(
            self.kind,
            self.hook.get_conn(),
            body,
            path,
            window_days=self.window_days,
            compression=self.compression,
        )
        self.log.info(
            "%s report: %d rows to %s; %s", self.kind.name, result.rows, path, result.headline
        )
        self.publish_output(context, path, rows=result.rows, report=self.kind.name)
        return result.as_dict()

    def lineage_input_name(self) -> str:
        return f"{self.kind.name}_analysis"


class FunnelReportOperator(_AnalysisReportOperator):
    """Funnel analysis (spec 4.16) as one row per split value, date and step.

    Columns include converted users, conversion rate (vs the previous step), completion rate
    (vs the first step) and median seconds to the next step; see the README for the table.
    The XCom carries the overall conversion of the whole range.
    """

    kind = FUNNEL
    ui_color = "#e8f1d4"


class EventReportOperator(_AnalysisReportOperator):
    """Event analysis (spec 4.17) as one row per split values, measure and period.

    Each row's range total is kept as rows flagged ``is_total``. The XCom carries the total
    of each measure.
    """

    kind = EVENTS
    ui_color = "#f4e6d0"
