"""CohortExportToParquetOperator: a cohort's users as one typed Parquet object."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.core.identity import COHORT_FILE, cohort_identity
from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.operators.intervals import covered_days
from airflow_provider_analytics.operators.output import AnalyticsOutputOperator

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pyarrow as pa
    from airflow.sdk import Context

    from airflow_provider_analytics.client.validation import CohortQuery


class _CohortOperator(AnalyticsOutputOperator):
    """What a cohort export and its shard steps take: the cohort, the destination and the
    export's settings (the shard steps of one export are given the same values).

    :param cohort_code: the cohort to export (templated).
    :param destination: object URI (``file:///...``, ``s3://conn_id@bucket/...``), or a prefix
        ending in ``/`` that gets ``cohort_code=<code>/dt=<day>/users.parquet``, ``<day>``
        being the first day the run covers by the day rule of ``operators/intervals.py``, so
        that many cohorts share one prefix (templated). The file records its cohort; an object
        holding another cohort is refused, never replaced.
    :param iceberg_table: instead of ``destination``, the Iceberg table ``namespace.table``;
        its rows carry ``cohort_code`` and each run replaces its cohort's day (``cohort_code``,
        ``dt``) in one commit, so that many cohorts share one table (templated).
    :param properties: user property ids and ``tag.<code>`` keys in column order (templated;
        must hold the ``id_property``); default: the visible properties of the tracking plan.
    :param limit: export at most this many users (templated).
    :param timezone: the project's timezone for datetime values; default: the connection's
        ``timezone`` extra, else UTC (templated).
    :param schema_overrides: column -> Arrow type or type name (a plan data type,
        ``double``, ``int64`` or ``decimal``), for the exceptions to the default types (a
        ``number`` column is int64, or double when the export holds a decimal); a column is
        named by its id (a tag by ``tag.<code>`` or its bare code) or by its name in the file,
        once (two keys naming one column are refused).
    :param column_names: ``warehouse`` (default) writes names that load unquoted into DuckDB,
        PostgreSQL, BigQuery, Snowflake and Spark (``city``, ``tag_tag_rfm``,
        ``register_time``; at most 63 characters), refusing two ids that would share one
        before any request; ``ids`` writes the platform's ids (``$city``, ``tag.tag_rfm``).
        Each field keeps its id in the Parquet field metadata (``analytics.id``); an Iceberg
        table gets the same names (templated).
    :param schema_contract: what a day may change in the destination's columns (the newest
        earlier day's, or the Iceberg table's): ``evolve`` (default) writes added and removed
        columns; ``freeze`` refuses any change by name before the cohort is asked for;
        ``discard_new`` writes the destination's columns only, naming the others in the XCom's
        ``discarded_columns`` (the shard steps: in the plan step's log). A changed type is
        refused under each unless ``schema_overrides`` sets it under ``evolve``; a first day
        is written as it is.
    :param attempts: whole-export attempts on cut streams, transport faults and short counts
        (a shard step: tries of a shard whose pages fail, past the client's own retries).
    :param page_size: users per page in ``pages`` mode, at most 10,000 (default 5,000: a page is
        held whole while it is decoded, so smaller pages keep a worker's memory lower).
    :param shard_rows: users per shard in ``pages`` mode.
    :param id_property: the property that tells users apart in ``pages`` mode (no user may be
        in two shards): ``distinct_id`` by default; when ``properties`` are given it must be
        one of them, checked before any request.
    :param consistency: what ``pages`` mode reads again before publishing: ``first_pages``
        (default: the first page of every shard, one call each) or ``strict`` (every page,
        ids only, one call each), which also finds users exchanged inside a shard that was
        already read (see the cohort shards page).
    :param staging: where an Iceberg export in ``pages`` mode keeps its parts (an
        object-storage URI every worker reaches); default: the worker's temporary space. A
        Parquet export keeps them beside the destination.
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

    def rendered_query(self) -> CohortQuery:
        """The rendered cohort code, limit and properties, checked as they are by the client's
        rules, never coerced (``limit=True`` or ``1.9`` would export one user and succeed)."""
        from airflow_provider_analytics.client.validation import cohort_query

        return cohort_query(self.cohort_code, limit=self.limit, properties=self.properties)

    def lineage_input_name(self) -> str:
        return f"cohort/{self.cohort_code}"


class CohortExportToParquetOperator(_CohortOperator):
    """Stream a cohort's users (spec 4.13) into a Parquet object, typed from the tracking plan.

    Memory stays flat whatever the cohort's size; the row count is checked against the cohort's
    size and a cut or short stream is retried from the start; the object appears at
    ``destination`` only when complete and a rerun replaces it. The destination's Asset (the
    untemplated prefix) is declared as an outlet unless ``outlets`` are given.

    :param compression: Parquet codec, zstd by default.
    :param row_group_rows: rows per Parquet row group.
    :param progress_interval: seconds between progress lines (rows, MB received, rows/s, MB/s,
        percentage and time left); default: the connection's ``progress_interval`` extra,
        else 10.
    :param mode: ``auto`` (default) streams a cohort of up to a million rows (the stream's
        documented range) and reads a larger one in shards of the paged endpoint, as it does
        a smaller one whose stream was cut on every attempt (the log and the XCom's
        ``fallback`` say so); ``stream`` or ``pages`` choose (templated). In ``pages`` mode
        the shards are checked together (rows equal the cohort's count, the count unchanged,
        no user twice, pages read again hold the same users) and published at once; a try
        that was killed resumes from the shards it finished when its settings make the same
        plan, and starts again otherwise.
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
        from airflow_provider_analytics.operators.lineage import export_origins

        query = self.rendered_query()
        day = covered_days(context).partition
        destination = self.output_destination(
            cohort_identity(query.cohort_code), staging=self.staging
        )
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
            timezone=self.timezone or self.hook.project_timezone,
            schema_overrides=self.schema_overrides,
            column_names=self.column_names,
            settings=self.settings,
        )
        self.publish_output(
            context,
            destination,
            [day],
            [COHORT_FILE],
            {COHORT_FILE: export_origins(summary)},
            rows=summary["rows"],
            cohort_code=query.cohort_code,
        )
        return summary
