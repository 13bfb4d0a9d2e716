"""CohortExportToParquetOperator: a cohort's users as one typed Parquet object."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.identity import COHORT_FILE, cohort_identity
from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.operators.intervals import covered_days
from airflow_provider_analytics.operators.output import AnalyticsOutputOperator

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pyarrow as pa
    from airflow.sdk import Context

    from airflow_provider_analytics.client.validation import CohortQuery
    from airflow_provider_analytics.output.destination import Destination


class _CohortOperator(AnalyticsOutputOperator):
    """What a cohort export and its shard steps take (the shard steps of one export are given
    the same values); ``docs/operators/cohort_export.md`` and ``cohort_shards.md`` say more.

    :param cohort_code: the cohort to export (templated).
    :param destination: object URI, or a prefix ending in ``/`` that gets
        ``cohort_code=<code>/dt=<day>/users.parquet``; an object holding another cohort is
        refused, never replaced (templated).
    :param iceberg_table: instead of ``destination``, the Iceberg table ``namespace.table``
        whose cohort's day each run replaces in one commit (templated).
    :param properties: user property ids and ``tag.<code>`` keys in column order; default: the
        tracking plan's visible ones (templated).
    :param limit: export at most this many users (templated).
    :param timezone: for datetime values; default: the connection's, else UTC (templated).
    :param schema_overrides: column -> Arrow type or type name, for the exceptions to the
        default types (``docs/output_tables.md``).
    :param column_names: ``warehouse`` (default: names that load unquoted into warehouses) or
        ``ids`` (the platform's ids) (templated).
    :param schema_contract: what a day may change in the destination's columns: ``evolve``
        (default), ``freeze`` or ``discard_new`` (``docs/output_tables.md``).
    :param attempts: whole-export attempts on cut streams, transport faults and short counts
        (a shard step: tries of a shard whose pages fail).
    :param page_size: users per page in ``pages`` mode, at most 10,000 (default 5,000).
    :param shard_rows: users per shard in ``pages`` mode.
    :param id_property: the property that tells users apart in ``pages`` mode (default
        ``distinct_id``; one of ``properties`` when they are given).
    :param consistency: what ``pages`` mode reads again before publishing: ``first_pages``
        (default) or ``strict`` (every page, ids only).
    :param staging: where an Iceberg export in ``pages`` mode keeps its parts (an
        object-storage URI every worker reaches); default: the worker's private folder.
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
        staging: str | None = None,
        properties: Sequence[str] | None = None,
        limit: int | None = None,
        timezone: str | None = None,
        schema_overrides: Mapping[str, pa.DataType | str] | None = None,
        column_names: str = "warehouse",
        schema_contract: str = ExportSettings.schema_contract,
        page_size: int = 5_000,
        shard_rows: int = 200_000,
        attempts: int = ExportSettings.attempts,
        id_property: str = "distinct_id",
        consistency: str = "first_pages",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.cohort_code = cohort_code
        self.staging = staging
        self.properties = properties
        self.limit = limit
        self.timezone = timezone
        self.schema_overrides = schema_overrides
        self.column_names = column_names
        self.page_size = page_size
        self.shard_rows = shard_rows
        self.settings = ExportSettings(attempts=attempts, schema_contract=schema_contract)
        self.id_property = id_property
        self.consistency = consistency

    def day_target(self, context: Context) -> tuple[CohortQuery, Destination, str]:
        """The checked request, where it goes, and the run's day (the partition it writes)."""
        from airflow_provider_analytics.client.validation import cohort_query

        # rendered values checked as they are, never coerced (limit=True would export one user)
        query = cohort_query(self.cohort_code, limit=self.limit, properties=self.properties)
        destination = self.output_destination(
            cohort_identity(query.cohort_code), staging=self.staging
        )
        return query, destination, covered_days(context).partition

    @property
    def export_timezone(self) -> str | None:
        """The zone the export reads dates in: the operator's, else the project's (None: UTC)."""
        if self.timezone is None:
            return self.hook.project_timezone
        return rules.time_zone(self.timezone)  # one rendered "" is refused, not the default

    def publish_day(
        self,
        context: Context,
        destination: Destination,
        day: str,
        code: str,
        summary: dict[str, Any],
    ) -> dict[str, Any]:
        """Record cohort ``code``'s day written (asset event, lineage); returns ``summary``."""
        from airflow_provider_analytics.operators.lineage import export_origins

        origins = {COHORT_FILE: export_origins(summary)}
        self.publish_output(
            context,
            destination,
            [day],
            [COHORT_FILE],
            origins,
            rows=summary["rows"],
            cohort_code=code,
        )
        return summary

    def lineage_input_name(self) -> str:
        return f"cohort/{self.cohort_code}"


class CohortExportToParquetOperator(_CohortOperator):
    """Stream a cohort's users (spec 4.13) into a Parquet object, typed from the tracking plan,
    in flat memory; ``docs/operators/cohort_export.md`` says how its size is checked, a cut
    stream retried and the object published whole, and which Asset it declares.

    :param compression: Parquet codec, zstd by default.
    :param row_group_rows: rows per Parquet row group.
    :param progress_interval: seconds between progress lines; default: the connection's
        ``progress_interval`` extra, else 10.
    :param mode: ``auto`` (default: streams up to a million rows, reads a larger cohort, or one
        whose stream was cut on every attempt, in shards of the paged endpoint), ``stream`` or
        ``pages`` (templated).
    :param max_parallel_shards: shards this task reads at once (one connection each).
    """

    template_fields: Sequence[str] = (*_CohortOperator.template_fields, "mode")

    def __init__(
        self,
        *,
        compression: str = "zstd",
        row_group_rows: int = ExportSettings.row_group_rows,
        progress_interval: float | None = None,
        mode: str = "auto",
        max_parallel_shards: int = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.mode = mode
        self.max_parallel_shards = max_parallel_shards
        self.settings = replace(
            self.settings,
            compression=compression,
            row_group_rows=row_group_rows,
            progress_interval=progress_interval,
        )

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_provider_analytics.export.cohort_day import export_cohort_day

        query, destination, day = self.day_target(context)
        summary = export_cohort_day(
            self.hook.get_conn(),
            query,
            destination,
            day,
            mode=self.mode,
            page_size=self.page_size,
            shard_rows=self.shard_rows,
            max_parallel_shards=self.max_parallel_shards,
            id_property=self.id_property,
            consistency=self.consistency,
            timezone=self.export_timezone,
            schema_overrides=self.schema_overrides,
            column_names=self.column_names,
            settings=self.settings,
        )
        return self.publish_day(context, destination, day, query.cohort_code, summary)
