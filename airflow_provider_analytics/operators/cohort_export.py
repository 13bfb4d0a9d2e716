"""CohortExportToParquetOperator: a cohort's users as one typed Parquet object."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.sdk import ObjectStoragePath

from airflow_provider_analytics.client.validation import CohortQuery, cohort_query
from airflow_provider_analytics.jobs.export_settings import ExportSettings
from airflow_provider_analytics.operators.intervals import covered_days
from airflow_provider_analytics.operators.output import AnalyticsOutputOperator, object_target
from airflow_provider_analytics.operators.paths import output_path, partition_value

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pyarrow as pa
    from airflow.sdk import Context

    from airflow_provider_analytics.jobs.cohort_export import ExportResult


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
    :param iceberg_table: instead of ``destination``, the Iceberg table ``namespace.table``
        whose ``dt`` partition for that day is replaced in one commit (templated).
    :param iceberg_conn_id: the connection describing the Iceberg catalog.
    :param properties: user property ids and ``tag.<code>`` keys in column order (templated);
        default: the visible properties of the tracking plan.
    :param limit: export at most this many users (templated).
    :param timezone: the project's timezone for datetime values; default: the connection's
        ``timezone`` extra, else UTC (templated).
    :param schema_overrides: column -> Arrow type or type name (a plan data type,
        ``double``, ``int64`` or ``decimal``), for the exceptions to the default types (a
        ``number`` column is int64, or double when the export holds a decimal); a column is
        named by its id (a tag by ``tag.<code>`` or its bare code) or by its name in the file,
        once (two keys naming one column are refused).
    :param column_names: ``ids`` (default) writes the platform's ids as column names
        (``$city``, ``tag.tag_rfm``); ``warehouse`` writes names of ASCII letters, digits and
        ``_`` (``city``, ``tag_tag_rfm``), refusing two ids that would share one before any
        request. Each field keeps its id in the Parquet field metadata (``analytics.id``); an
        Iceberg table gets the same names (templated).
    :param compression: Parquet codec, zstd by default.
    :param row_group_rows: rows per Parquet row group.
    :param attempts: whole-export attempts on cut streams, transport faults and short counts.
    :param progress_interval: seconds between progress lines (rows, MB received, rows/s, MB/s,
        percentage and time left); default: the connection's ``progress_interval`` extra,
        else 10.
    :param analytics_conn_id: id of the ``analytics`` connection (templated).
    """

    template_fields: Sequence[str] = (
        "analytics_conn_id",
        "cohort_code",
        "destination",
        "iceberg_table",
        "properties",
        "limit",
        "timezone",
        "column_names",
    )
    ui_color = "#d9ecf2"

    def __init__(
        self,
        *,
        cohort_code: str,
        destination: str | None = None,
        properties: Sequence[str] | None = None,
        limit: int | None = None,
        timezone: str | None = None,
        schema_overrides: Mapping[str, pa.DataType | str] | None = None,
        column_names: str = "ids",
        compression: str = "zstd",
        row_group_rows: int = ExportSettings.row_group_rows,
        attempts: int = ExportSettings.attempts,
        progress_interval: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(destination=destination, **kwargs)
        self.cohort_code = cohort_code
        self.properties = properties
        self.limit = limit
        self.timezone = timezone
        self.schema_overrides = schema_overrides
        self.column_names = column_names
        self.settings = ExportSettings(
            compression=compression,
            row_group_rows=row_group_rows,
            attempts=attempts,
            progress_interval=progress_interval,
        )

    def execute(self, context: Context) -> dict[str, Any]:
        query = self._query()
        if self.iceberg_table:
            return self._export_to_iceberg(context, query)
        from airflow_provider_analytics.jobs.earlier_types import earlier_number_types

        day = covered_days(context).partition
        path = output_path(
            self.destination,
            {"cohort": query.cohort_code, "dt": day},
            "users.parquet",
            self.allowed_roots(),
        )
        earlier = earlier_number_types(path.parent.parent, day, path.name)
        result = self._export(path, query, earlier)
        self.publish_output(
            context, path, [object_target(path)], rows=result.rows, cohort_code=query.cohort_code
        )
        return result.as_dict()

    def _query(self) -> CohortQuery:
        """The rendered cohort code, limit and properties, checked once by the client's rules
        (the code also as a partition value).

        Rendered values are checked as they are, never coerced: ``limit=True`` or ``1.9``
        would otherwise export one user and succeed.
        """
        query = cohort_query(self.cohort_code, limit=self.limit, properties=self.properties)
        partition_value(query.cohort_code, "cohort_code")
        return query

    def _export(
        self,
        path: ObjectStoragePath,
        query: CohortQuery,
        earlier_types: Mapping[str, pa.DataType] | None = None,
    ) -> ExportResult:
        """Run the export job into the Parquet object ``path``; ``number`` columns keep the
        types of ``earlier_types`` (the destination's earlier days)."""
        from airflow_provider_analytics.jobs.cohort_export import export_cohort_to_parquet

        return export_cohort_to_parquet(
            self.hook.get_conn(),
            query,
            path,
            timezone=self.timezone or self.hook.project_timezone,
            schema_overrides=self.schema_overrides,
            column_names=self.column_names,
            settings=self.settings,
            earlier_types=earlier_types,
        )

    def _export_to_iceberg(self, context: Context, query: CohortQuery) -> dict[str, Any]:
        """Export to a local Parquet file (verified, as usual), then replace the day's
        partition of ``iceberg_table`` with it in one commit."""
        from airflow_provider_analytics.sinks.iceberg import replace_day_from_parquet

        assert self.iceberg_table is not None
        catalog, uri = self.iceberg_catalog()
        with tempfile.TemporaryDirectory(prefix="cohort-export-") as directory:
            local = ObjectStoragePath((Path(directory) / "users.parquet").as_uri())
            result = self._export(local, query)
            committed = replace_day_from_parquet(
                catalog,
                self.iceberg_table,
                dt.date.fromisoformat(covered_days(context).partition),
                local.path,
            )
        self.publish_output(
            context,
            uri,
            self.iceberg_targets([str(self.iceberg_table)]),
            rows=result.rows,
            cohort_code=query.cohort_code,
        )
        return {**result.as_dict(), "uri": uri, "iceberg": committed}

    def lineage_input_name(self) -> str:
        return f"cohort/{self.cohort_code}"
