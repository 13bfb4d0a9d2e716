"""Export a cohort's users to one Parquet object: streamed, typed, verified, atomic.

The work behind ``CohortExportToParquetOperator``, usable without Airflow. Memory stays flat:
the body is read in chunks, decoded in blocks of whole lines and written in bounded row groups;
nothing holds the whole cohort. The cohort's size is read first, and a stream that delivers a
different number of rows, breaks, or ends inside a line is a failed attempt: the temporary
object is discarded and the export starts again, up to ``attempts`` times. The destination only
ever holds a complete file.
"""

from __future__ import annotations

import functools
import logging
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_analytics.client.validation import CohortQuery, cohort_query
from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.column_names import (
    ID_METADATA_KEY,
    ColumnNames,
    column_name_map,
    column_names_setting,
)
from airflow_provider_analytics.core.errors import (
    AnalyticsError,
    ExportDataError,
    ExportIncompleteError,
)
from airflow_provider_analytics.core.ndjson import iter_counted_blocks
from airflow_provider_analytics.core.pipeline import map_ahead
from airflow_provider_analytics.core.progress import (
    progress_interval,
    rate_text,
)
from airflow_provider_analytics.core.retry import RetryPolicy
from airflow_provider_analytics.export.arrow_pool import POOLS, arrow_memory_pool
from airflow_provider_analytics.export.decoder import BlockDecoder, ParsedBlock
from airflow_provider_analytics.export.schema import (
    CONTRACTS,
    ExportSchema,
    check_override_keys,
    contracted,
    default_properties,
    export_schema,
)
from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.output.parquet import (
    StreamOpener,
    parquet_compression,
    parquet_stream,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from airflow_provider_analytics.client import AnalyticsClient
    from airflow_provider_analytics.output.storage import StoragePath

log = logging.getLogger(__name__)

_POSITIVE_SETTINGS = (
    "row_group_rows",
    "row_group_bytes",
    "block_bytes",
    "max_line_bytes",
    "chunk_bytes",
)


@dataclass
class ExportResult:
    """What an export wrote; small and JSON-able (the operator's XCom)."""

    uri: str
    cohort_code: str
    rows: int
    expected_rows: int
    bytes_written: int
    columns: list[str]
    seconds: float
    rows_per_second: float
    masked_values: int
    attempts: int
    column_origins: dict[str, str] = field(default_factory=dict)
    """Per column (by its name in the file): where its type came from."""
    unexpected_keys: dict[str, int] = field(default_factory=dict)
    """Per record key the export did not ask for: how many records held it (not written;
    logged once per key; the first 100 keys, secrets in their names masked)."""
    unexpected_keys_unlisted: int = 0
    """How many times a record held a key not asked for beyond those in ``unexpected_keys``."""
    column_ids: dict[str, str] = field(default_factory=dict)
    """Per column (by its name in the file): the platform id it holds (also in the Parquet
    field metadata, key ``analytics.id``)."""
    discarded_columns: list[str] = field(default_factory=list)
    """The plan's columns the destination lacks, left out by ``schema_contract="discard_new"``."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PreparedExport:
    """An export's checked request (its properties known), columns and settings."""

    query: CohortQuery
    schema: ExportSchema
    settings: ExportSettings


def prepare_export(
    client: AnalyticsClient,
    cohort_code: str | CohortQuery,
    *,
    properties: Sequence[str] | None = None,
    limit: int | None = None,
    timezone: str | None = None,
    schema_overrides: Mapping[str, pa.DataType | str] | None = None,
    column_names: ColumnNames | str = ColumnNames.WAREHOUSE,
    settings: ExportSettings | None = None,
    destination_schema: pa.Schema | None = None,
    from_plan: bool = False,
    earlier_types: Mapping[str, pa.DataType] | None = None,
) -> PreparedExport:
    """Check every argument (before the first request), list the plan, and decide the columns:
    what the stream and the paged shards (:mod:`~airflow_provider_analytics.export.shards`)
    share. The arguments are :func:`export_cohort_to_parquet`'s; ``from_plan``: the columns are
    decided again from a recorded shard plan (:func:`~.schema.export_schema`)."""
    if earlier_types is not None:
        destination_schema = _deprecated_earlier_types(earlier_types, destination_schema)
    settings = ExportSettings() if settings is None else settings
    if not isinstance(settings, ExportSettings):
        rules.fail("settings", "must be an ExportSettings", settings)
    query = cohort_query(cohort_code, limit=limit, properties=properties)
    naming = column_names_setting(column_names)
    if query.properties is not None:
        column_name_map(query.properties, naming)
    check_override_keys(schema_overrides, naming)
    rules.one_of(settings.schema_contract, "schema_contract", CONTRACTS)
    rules.count(settings.attempts, "attempts")
    for name in _POSITIVE_SETTINGS:  # a chunk of 0 reads no body; text fails mid-stream
        rules.positive_int(getattr(settings, name), name)
    # each thread holds a block in flight: a million held the whole cohort
    rules.integer(settings.parse_threads, "parse_threads", minimum=1, maximum=64)
    # a day at most: a longer wait is an Airflow retry's (time.sleep overflows near 1e300)
    if not 0 <= rules.number(settings.retry_delay, "retry_delay") <= 86_400:
        rules.fail("retry_delay", "must be 0 to 86400 seconds", settings.retry_delay)
    rules.one_of(settings.memory_pool, "memory_pool", POOLS)
    parquet_compression(settings.compression)
    if settings.progress_interval is not None:  # checked now, used by the client's progress
        progress_interval(settings.progress_interval)
    zone_unset = timezone is None
    timezone = rules.time_zone("UTC" if timezone is None else timezone)

    plan = client.list_user_properties()
    if query.properties is None:
        query = query.with_properties(default_properties(plan))
    planned = export_schema(
        query.properties or (),
        plan,
        timezone=timezone,
        overrides=schema_overrides,
        column_names=naming,
        earlier=destination_schema,
        from_plan=from_plan,
    )
    schema = contracted(planned, destination_schema, settings.schema_contract)
    if schema.discarded:  # not asked for: neither the stream nor the pages send them
        log.warning("columns the destination lacks, not written: %s", list(schema.discarded))
        named = zip(query.properties or (), planned.columns, strict=True)
        query = query.with_properties(
            [p for p, c in named if c.written_name not in schema.discarded]
        )
    datetimes = [c.written_name for c in schema.columns if pa.types.is_timestamp(c.arrow_type)]
    if zone_unset and datetimes:  # every value would be off by the platform's offset
        log.warning(
            "no timezone is set (connection extra 'timezone', or the operator's 'timezone'): "
            "the datetime columns %s are read as UTC. A platform in another zone writes its "
            "local time (Asia/Shanghai: 8 hours ahead), and every value would be off by that "
            "much; set the project's timezone to read them exactly",
            ", ".join(datetimes),
        )
    return PreparedExport(query, schema, settings)


def _deprecated_earlier_types(
    earlier_types: Mapping[str, pa.DataType], destination_schema: pa.Schema | None
) -> pa.Schema:
    """0.2.0's ``earlier_types`` as the destination's columns it described (each named and
    identified by its key), for one release; the warning names the first caller outside the
    package, whichever public function took it."""
    level, frame = 2, sys._getframe(1)
    while frame.f_back and frame.f_globals.get("__name__", "").startswith(
        __name__.partition(".")[0] + "."
    ):
        level, frame = level + 1, frame.f_back
    warnings.warn(
        "earlier_types= is deprecated; give the destination's columns as destination_schema= "
        "(a pyarrow.Schema whose fields carry their id in the 'analytics.id' metadata)",
        DeprecationWarning,
        stacklevel=level,
    )
    if destination_schema is not None:
        rules.fail("earlier_types", "must not be given with destination_schema")
    fields = [
        pa.field(key, kind, metadata={ID_METADATA_KEY: key}) for key, kind in earlier_types.items()
    ]
    return pa.schema(fields)


def export_cohort_to_parquet(
    client: AnalyticsClient,
    cohort_code: str | CohortQuery,
    destination: StoragePath,
    *,
    properties: Sequence[str] | None = None,
    limit: int | None = None,
    timezone: str | None = None,
    schema_overrides: Mapping[str, pa.DataType | str] | None = None,
    column_names: ColumnNames | str = ColumnNames.WAREHOUSE,
    settings: ExportSettings | None = None,
    sleep: Callable[[float], None] = time.sleep,
    destination_schema: pa.Schema | None = None,
    file_metadata: Mapping[str, str] | None = None,
    earlier_types: Mapping[str, pa.DataType] | None = None,
) -> ExportResult:
    """Export ``cohort_code``'s users to ``destination`` as Parquet and return what was written.

    Every argument is checked before the first request. Column names two properties would
    share under ``column_names="warehouse"`` are refused then too when ``properties`` are given;
    when they are not, the columns are the plan's, known after its listing (the first request)
    and checked before the cohort's size is asked for or the export opened.

    :param client: the API client.
    :param cohort_code: the cohort to export, or a
        :class:`~airflow_provider_analytics.client.validation.CohortQuery` (checked already,
        holding the limit and properties).
    :param destination: the Parquet object to (re)place, e.g. an ``ObjectStoragePath``.
    :param properties: user property ids and ``tag.<code>`` keys, in column order; default: the
        visible properties of the tracking plan, in the plan's order.
    :param limit: export at most this many users.
    :param timezone: the project's timezone, in which datetime values are read; ``None`` (not
        set) reads UTC and logs a warning when the export has datetime columns.
    :param schema_overrides: column -> Arrow type or type name (a plan data type,
        ``double``, ``int64`` or ``decimal``), for the exceptions to the default types (a
        ``number`` column is int64, or double when the export holds a decimal); a column is
        named by its id (a tag by ``tag.<code>`` or its bare code) or by its name in the file,
        once (two keys naming one column are refused).
    :param column_names: ``warehouse`` (default: ``city``, ``tag_tag_rfm``, names that load
        unquoted into warehouses; :mod:`~airflow_provider_analytics.core.column_names`) or
        ``ids`` (``$city``, ``tag.tag_rfm``).
        Each Parquet field keeps its id in its metadata (``analytics.id``) either way.
    :param settings: write and retry settings.
    :param destination_schema: the columns the destination holds already (an earlier day's
        file: :func:`~airflow_provider_analytics.output.parquet_destination.earlier_schema`):
        a ``number`` column keeps its int64 or double type there, and ``settings.
        schema_contract`` decides what else may differ; ``None``: nothing to meet.
    :param sleep: waits between attempts (injectable for tests).
    :param file_metadata: key-value metadata the Parquet file records (its identity).
    :param earlier_types: deprecated (0.2.0's name), use ``destination_schema``: column id or
        name -> the int64 or double type an earlier day holds a ``number`` column with.
    """
    started = time.monotonic()
    if isinstance(destination, str) or not callable(getattr(destination, "open", None)):
        rules.fail("destination", "must be a path such as ObjectStoragePath(...)", destination)
    if file_metadata:  # the file records it as UTF-8 text
        try:
            pa.schema([]).with_metadata(file_metadata)
        except (TypeError, ValueError):
            rules.fail("file_metadata", "must map text keys to text values", file_metadata)
    prepared = prepare_export(
        client,
        cohort_code,
        properties=properties,
        limit=limit,
        timezone=timezone,
        schema_overrides=schema_overrides,
        column_names=column_names,
        settings=settings,
        destination_schema=destination_schema,
        earlier_types=earlier_types,
    )
    return export_prepared(
        client, prepared, destination, sleep=sleep, file_metadata=file_metadata, started=started
    )


def export_prepared(
    client: AnalyticsClient,
    prepared: PreparedExport,
    destination: StoragePath | str,
    *,
    sleep: Callable[[float], None] = time.sleep,
    file_metadata: Mapping[str, str] | None = None,
    started: float | None = None,
    open_stream: StreamOpener | None = None,
    count: int | None = None,
) -> ExportResult:
    """The streamed export of :func:`export_cohort_to_parquet` once its arguments are checked
    and its columns decided (:func:`prepare_export`): the cohort's size, the stream, the file.

    :param destination: the Parquet object written, or (with ``open_stream``) what names the
        output in messages.
    :param started: ``time.monotonic()`` when the export's work began (default: now).
    :param open_stream: opens what the rows are written to (an Iceberg day's data files);
        by default the Parquet object ``destination``.
    :param count: the cohort's size when the caller has just asked for it (one count call
        per export); ``None`` asks for it here.
    """
    started = time.monotonic() if started is None else started
    query, schema, settings = prepared.query, prepared.schema, prepared.settings
    if count is None:
        count = int(client.get_cohort_users(query.sizing())["count"])
    expected = count if query.limit is None else min(query.limit, count)
    log.info(
        "exporting cohort %s: %d users, %d columns, to %s",
        query.cohort_code,
        expected,
        len(schema.columns),
        destination,
    )

    cohort = f"cohort {query.cohort_code!r}"
    if open_stream is None:
        assert not isinstance(destination, str)  # an object, when no opener is given
        open_stream = functools.partial(parquet_stream, destination)
    arrow_schema = schema.arrow_schema
    if file_metadata:  # the file records it
        arrow_schema = arrow_schema.with_metadata(
            {**(arrow_schema.metadata or {}), **file_metadata}
        )

    def attempt() -> tuple[int, BlockDecoder]:
        """Stream, decode, write, verify the count, commit; returns the bytes and the decoder."""
        decoder = BlockDecoder(schema, secrets=client.config.secrets())
        progress = client.progress(
            f"cohort {query.cohort_code}",
            total=expected,
            interval=settings.progress_interval,
            size_label="received",
        )
        with open_stream(
            arrow_schema,
            compression=settings.compression,
            row_group_rows=settings.row_group_rows,
            row_group_bytes=settings.row_group_bytes,
            prepare=decoder.complete,  # datetimes and counts once a row group, while it is written
            widen=decoder.widen,  # a number column that turns out to hold decimals
            subject=cohort,
        ) as parquet:
            export = client.export_cohort_users(query, progress=False)
            lines = iter_counted_blocks(
                export.iter_bytes(settings.chunk_bytes),
                settings.block_bytes,
                max_line_bytes=settings.max_line_bytes,
            )

            def parse(counted: tuple[bytes, int]) -> ParsedBlock:
                return decoder.parse(*counted)

            # the blocks are read in this thread, between two results: while it reads or
            # finishes, the parse workers hold the next blocks, and the kernel's socket buffer
            # the next bytes. A thread of its own reading ahead cost a 1M-user export ~0.1 CPU
            # s (GIL hand-offs) and 4 MiB, and saved no wall time
            with export:
                try:
                    for (block, _), parsed in map_ahead(parse, lines, settings.parse_threads):
                        parquet.add(decoder.finish(block, parsed))
                        progress.update(decoder.rows, export.bytes_read)
                except AnalyticsError as error:
                    # values are checked once per row group: one delivered before a cut stream
                    # or a damaged line fails the export by name (another attempt would not help)
                    if error.transient:
                        try:
                            parquet.flush()
                        except ExportDataError as refused:
                            raise refused from error
                        except Exception:  # ``error`` is what is raised
                            pass
                    raise
                finally:
                    progress.close()
            parquet.flush()  # values are checked per row group: a refusal wins over the count
            if decoder.rows != expected:
                raise ExportIncompleteError(
                    f"{cohort}: expected {expected} rows but the export delivered {decoder.rows}"
                )
        return parquet.bytes_written, decoder

    # every attempt through the retry engine, on the errors that say they are transient
    policy = RetryPolicy.doubling(settings.attempts, settings.retry_delay)
    engine = policy.retrying(f"cohort {query.cohort_code}", sleep=sleep, logger=log)
    try:
        with arrow_memory_pool(settings.memory_pool):
            bytes_written, decoder = engine(attempt)
    except AnalyticsError as error:
        if not error.transient:
            raise
        raise ExportIncompleteError(
            f"{cohort}: export failed after {engine.statistics['attempt_number']} attempts, "
            f"nothing written to {destination}; last error: {error}"
        ) from error
    rows = decoder.rows
    seconds = time.monotonic() - started
    log.info(
        "cohort %s: wrote %d rows, %.1f MB in %.1f s to %s (%s)",
        query.cohort_code,
        rows,
        bytes_written / 1e6,
        seconds,
        destination,
        rate_text(rows, bytes_written, seconds),
    )
    return ExportResult(
        uri=str(destination),
        cohort_code=query.cohort_code,
        rows=rows,
        expected_rows=expected,
        bytes_written=bytes_written,
        columns=schema.written_names,
        seconds=round(seconds, 3),
        rows_per_second=round(rows / seconds, 1) if seconds > 0 else float(rows),
        masked_values=decoder.masked_values,
        attempts=engine.statistics["attempt_number"],
        unexpected_keys=dict(decoder.unexpected_keys),
        unexpected_keys_unlisted=decoder.keys.unlisted,
        **schema.described,
    )
