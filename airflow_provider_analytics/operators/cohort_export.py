"""CohortExportToParquetOperator: a cohort's users as one typed Parquet object."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.jobs.cohort_export import ExportSettings, export_cohort_to_parquet
from airflow_provider_analytics.operators.intervals import covered_days
from airflow_provider_analytics.operators.output import AnalyticsOutputOperator
from airflow_provider_analytics.operators.paths import output_path

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pyarrow as pa
    from airflow.sdk import Context


class CohortExportToParquetOperator(AnalyticsOutputOperator):
    """Stream a cohort's users (spec 4.13) into a Parquet object, typed from the tracking plan.

    Memory stays flat whatever the cohort's size; the row count is checked against the cohort's
    size and a cut or short stream is retried from the start; the object appears at
    ``destination`` only when complete and a rerun replaces it. The destination's Asset (the
    untemplated prefix) is declared as an outlet unless ``outlets`` are given.

    :param cohort_code: the cohort to export (templated).
    :param destination: object URI (``file:///...``, ``s3://conn_id@bucket/...``), or a prefix
        ending in ``/`` that gets ``cohort=<code>/dt=<day>/users.parquet``, ``<day>`` being the
        first day the run covers by the day rule of ``operators/intervals.py`` (templated).
    :param properties: user property ids and ``tag.<code>`` keys in column order (templated);
        default: the visible properties of the tracking plan.
    :param limit: export at most this many users (templated).
    :param timezone: the project's timezone for datetime values; default: the connection's
        ``timezone`` extra, else UTC (templated).
    :param schema_overrides: column -> Arrow type or plan data type.
    :param compression: Parquet codec, zstd by default.
    :param row_group_rows: rows per Parquet row group.
    :param attempts: whole-export attempts on cut streams, transport faults and short counts.
    """

    template_fields: Sequence[str] = (
        "analytics_conn_id",
        "cohort_code",
        "destination",
        "properties",
        "limit",
        "timezone",
    )
    ui_color = "#d9ecf2"

    def __init__(
        self,
        *,
        cohort_code: str,
        destination: str,
        properties: Sequence[str] | None = None,
        limit: int | None = None,
        timezone: str | None = None,
        schema_overrides: Mapping[str, pa.DataType | str] | None = None,
        compression: str = "zstd",
        row_group_rows: int = ExportSettings.row_group_rows,
        attempts: int = ExportSettings.attempts,
        **kwargs: Any,
    ) -> None:
        super().__init__(destination=destination, **kwargs)
        self.cohort_code = cohort_code
        self.properties = properties
        self.limit = limit
        self.timezone = timezone
        self.schema_overrides = schema_overrides
        self.settings = ExportSettings(
            compression=compression, row_group_rows=row_group_rows, attempts=attempts
        )

    def execute(self, context: Context) -> dict[str, Any]:
        path = output_path(
            self.destination,
            {"cohort": self.cohort_code, "dt": covered_days(context).partition},
            "users.parquet",
        )
        result = export_cohort_to_parquet(
            self.hook.get_conn(),
            self.cohort_code,
            path,
            properties=list(self.properties) if self.properties is not None else None,
            limit=int(self.limit) if self.limit is not None else None,
            timezone=self.timezone or self.hook.project_timezone,
            schema_overrides=self.schema_overrides,
            settings=self.settings,
        )
        self.publish_output(context, path, rows=result.rows, cohort_code=self.cohort_code)
        return result.as_dict()

    def lineage_input_name(self) -> str:
        return f"cohort/{self.cohort_code}"
