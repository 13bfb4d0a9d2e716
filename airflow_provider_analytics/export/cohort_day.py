"""A cohort's day into a destination: streamed, or read in shards
(:mod:`~airflow_provider_analytics.export.shards`), and published as the destination does it
(in place for object storage, one commit for Iceberg); nothing is published when the export
fails. ``mode="auto"`` is explained in ``docs/operators/cohort_shards.md``.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.client.validation import CohortQuery, cohort_query
from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import (
    AnalyticsServerError,
    AnalyticsStreamError,
    CohortChangedError,
    ExportIncompleteError,
    ShardStagingError,
)
from airflow_provider_analytics.core.heap import trim_heap
from airflow_provider_analytics.core.identity import COHORT_FILE
from airflow_provider_analytics.export import shards as shards
from airflow_provider_analytics.export.arrow_pool import arrow_memory_pool
from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.export.stream import (
    PreparedExport,
    export_prepared,
    prepare_export,
)

if TYPE_CHECKING:
    from airflow_provider_analytics.client import AnalyticsClient
    from airflow_provider_analytics.output.destination import Destination

log = logging.getLogger(__name__)

STREAM_CUT = (AnalyticsStreamError, AnalyticsServerError, ExportIncompleteError)
"""A stream's last attempt cut on its way (``mode="auto"`` then reads pages); a platform that
cannot be reached at all is not a cut: the pages would not reach it either."""


def export_cohort_day(
    client: AnalyticsClient,
    query: str | CohortQuery,
    destination: Destination,
    day: str,
    *,
    mode: str = "auto",
    page_size: int = shards.PAGE_SIZE,
    shard_rows: int = shards.SHARD_ROWS,
    max_parallel_shards: int = 1,
    id_property: str = shards.ID_PROPERTY,
    consistency: str = "first_pages",
    **export: Any,
) -> dict[str, Any]:
    """Export ``query``'s cohort as ``day``'s rows of ``destination``; return the XCom.

    :param mode: ``auto`` (pages above a million rows, or when every stream attempt was cut),
        ``stream`` or ``pages``.
    :param page_size: users per page in ``pages`` mode (at most 10,000).
    :param shard_rows: users per shard in ``pages`` mode.
    :param max_parallel_shards: shards read at once by this process (one connection each).
    :param id_property: the property that tells users apart in ``pages`` mode.
    :param consistency: what publication reads again: ``first_pages`` or ``strict``.
    :param export: the settings of ``export_cohort_to_parquet`` (``timezone``, ...).
    :return: what was written, its ``uri``, ``mode``, what the publication did, each column's
        platform id, and ``fallback`` when a stream cut every time was read in pages.
    """
    query = cohort_query(query)  # a cohort code, or a checked request
    if not callable(getattr(destination, "cohort_file", None)):
        rules.fail("destination", "must be a ParquetDestination or IcebergDestination", destination)
    rules.one_of(mode, "mode", shards.MODES)
    shards.shard_pages(page_size, shard_rows)
    rules.integer(max_parallel_shards, "max_parallel_shards", minimum=1)
    rules.one_of(consistency, "consistency", shards.CONSISTENCY)
    shards.check_id_property(id_property, query.properties if mode == "pages" else None)
    destination.check([day], [COHORT_FILE])
    held = destination.held_schema(day)
    # every argument is checked by now, before the first request (the plan's listing)
    prepared = prepare_export(client, query, destination_schema=held, **export)
    count: int | None = None
    fallback: str | None = None
    pageable = False  # may a stream cut every time be read in pages instead
    if mode == "auto":
        count = shards.cohort_count(client, prepared.query)
        rows = count if query.limit is None else min(query.limit, count)
        mode = "stream" if rows <= shards.STREAM_ROWS_MAX else "pages"
        pageable = id_property in (prepared.query.properties or ())
    if mode == "stream":
        try:
            with destination.cohort_file(day) as target:
                result = export_prepared(
                    client,
                    prepared,
                    target.path,
                    file_metadata=target.metadata,
                    open_stream=target.stream,
                    count=count,
                )
            return {**result.as_dict(), "uri": target.uri, "mode": "stream", **target.published}
        except ExportIncompleteError as failed:
            cut = failed.__cause__ or failed
            if not (pageable and isinstance(cut, STREAM_CUT)):
                raise
            log.warning(
                "cohort %s: the stream failed every attempt (%s); reading it in pages instead",
                query.cohort_code,
                cut,
            )
            fallback = f"stream failed: {cut}"
    started = time.monotonic()
    plan, reader = start_shards(
        client, prepared, destination, day, page_size, shard_rows, count, id_property
    )
    shards.read_shards(reader, plan.shards, parallel=max_parallel_shards)
    summary = {
        **publish_shards(client, plan, destination, day, started, consistency, read=True),
        **prepared.schema.described,
    }
    return summary if fallback is None else {**summary, "fallback": fallback}


def start_shards(
    client: AnalyticsClient,
    prepared: PreparedExport,
    destination: Destination,
    day: str,
    page_size: int,
    shard_rows: int,
    count: int | None = None,
    id_property: str = shards.ID_PROPERTY,
) -> tuple[shards.ShardPlan, shards.ShardReader]:
    """Plan the shards of a prepared export from the cohort's ``count`` (the caller's, else a
    one-row page's, asked once the settings are checked) and keep the staging folder when it
    holds the same plan (the run's fingerprint), else start it again."""
    pages = shards.shard_pages(page_size, shard_rows)
    shards.check_id_property(id_property, prepared.query.properties or (), prepared.schema)
    if count is None:
        count = shards.cohort_count(client, prepared.query)
    plan = shards.plan_of(
        prepared,
        day=day,
        count=count,
        page_size=page_size,
        shard_pages=pages,
        id_property=id_property,
    )
    log.info(
        "cohort %s: %d users in %d shards of up to %d pages of %d",
        plan.cohort_code,
        plan.rows,
        len(plan.shards),
        pages,
        plan.page_size,
    )
    staging = destination.staging(day)
    shards.load_or_start_plan(staging, plan)
    reader = shards.ShardReader(client, plan, prepared.schema, staging, prepared.settings)
    return plan, reader


def shard_reader(
    client: AnalyticsClient,
    query: str | CohortQuery,
    destination: Destination,
    day: str,
    id_property: str = shards.ID_PROPERTY,
    **export: Any,
) -> shards.ShardReader:
    """The reader of the plan recorded in ``destination``'s staging folder for ``day``, once
    this step's own request and settings make that very plan (the run's fingerprint: cohort,
    day, properties, limit, columns, timezone, ``id_property``); its columns decided again.

    :raises ShardStagingError: the recorded plan is another run's, saying what differs.
    """
    staging = destination.staging(day)
    plan = shards.read_plan(staging)
    prepared = prepare_export(client, query, from_plan=True, **export)
    mine = shards.plan_of(
        prepared,
        day=day,
        count=plan.count,
        page_size=plan.page_size,
        shard_pages=plan.shard_pages,
        id_property=id_property,
    )
    if mine != plan:
        raise ShardStagingError(
            f"{staging}: the recorded plan is another run's ({plan.differences(mine)}); "
            "give every step the same settings, and run the plan step again"
        )
    return shards.ShardReader(client, plan, prepared.schema, staging, prepared.settings)


def publish_shards(
    client: AnalyticsClient,
    plan: shards.ShardPlan,
    destination: Destination,
    day: str,
    started: float | None = None,
    consistency: str = "first_pages",
    read: bool = False,
) -> dict[str, Any]:
    """Check that every shard is finished and the promise holds, publish, clear the staging.
    ``read``: this process has just read (or found finished) every shard, their parts hashed
    against their records, so they are not read again to be hashed."""
    staging = destination.staging(day)
    parts = [shards.part_of(staging, shard) for shard in plan.shards]
    missing = (
        [] if read else [s.index for s in plan.shards if not shards.finished(staging, plan, s)]
    )
    if missing:
        raise CohortChangedError(
            f"cohort {plan.cohort_code!r}: shards {missing} are not read yet (or their parts "
            "are not the ones recorded); nothing was published"
        )
    with arrow_memory_pool(ExportSettings.memory_pool):
        shards.check_consistency(client, plan, parts, consistency)
        trim_heap()  # the check's ids, back before the merge
        published = destination.publish_parts(day, parts)
    shards.clear_staging(staging)
    return {
        "uri": published.uri,
        "cohort_code": plan.cohort_code,
        "rows": plan.rows,
        "expected_rows": plan.rows,
        "count": plan.count,
        "mode": "pages",
        "shards": len(plan.shards),
        "page_size": plan.page_size,
        "seconds": None if started is None else round(time.monotonic() - started, 3),
        **published.published,
    }
