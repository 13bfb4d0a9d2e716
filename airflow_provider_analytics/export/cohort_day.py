"""A cohort's day into a destination: streamed, or read in shards, and published as the
destination does it.

The earlier days' number types are read from the destination (a Parquet prefix's newest earlier
day, an Iceberg table's columns). ``mode="stream"`` runs the streamed export job, which writes
and verifies its Parquet file where the destination says; ``mode="pages"`` reads the cohort in
shards of the paged endpoint (:mod:`~airflow_provider_analytics.export.shards`);
``mode="auto"`` streams a cohort of up to a million rows and shards a larger one. Either way the
destination publishes the day at once (in place for object storage, one commit for Iceberg),
and nothing is published when the export fails.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import CohortChangedError
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
    from airflow_provider_analytics.client.validation import CohortQuery
    from airflow_provider_analytics.output.destination import Destination


def export_cohort_day(
    client: AnalyticsClient,
    query: CohortQuery,
    destination: Destination,
    day: str,
    *,
    mode: str = "auto",
    page_size: int = shards.PAGE_SIZE,
    shard_rows: int = shards.SHARD_ROWS,
    max_parallel_shards: int = 1,
    **export: Any,
) -> dict[str, Any]:
    """Export ``query``'s cohort as ``day``'s rows of ``destination``; return the XCom.

    :param mode: ``auto``, ``stream`` or ``pages``.
    :param page_size: users per page in ``pages`` mode (at most 10,000).
    :param shard_rows: users per shard in ``pages`` mode.
    :param max_parallel_shards: shards read at once by this process (one connection each).
    :param export: the settings of
        :func:`~airflow_provider_analytics.export.stream.export_cohort_to_parquet`
        (``timezone``, ``schema_overrides``, ``column_names``, ``settings``).
    :return: what was written, ``uri`` naming the published object or table, ``mode``, what
        the publication did (``iceberg``: the commit), and each column's platform id.
    """
    rules.one_of(mode, "mode", shards.MODES)
    shards.shard_pages(page_size, shard_rows)
    rules.integer(max_parallel_shards, "max_parallel_shards", minimum=1)
    destination.check([day], [COHORT_FILE])
    earlier = destination.earlier_number_types(day)
    # every argument is checked here, before the first request (the plan's listing)
    prepared = prepare_export(client, query, earlier_types=earlier, **export)
    count = None
    if mode == "auto":
        sizing = prepared.query.sizing()
        count = client.get_cohort_users(sizing, page=1, page_size=1)["count"]
        rows = count if query.limit is None else min(query.limit, count)
        mode = shards.choose_mode(mode, rows)
    if mode == "stream":
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
    started = time.monotonic()
    plan, reader = start_shards(
        client, prepared, destination, day, page_size, shard_rows, count=count
    )
    shards.read_shards(reader, plan.shards, parallel=max_parallel_shards)
    return {
        **publish_shards(client, plan, destination, day, started=started),
        **prepared.schema.described,
    }


def start_shards(
    client: AnalyticsClient,
    prepared: PreparedExport,
    destination: Destination,
    day: str,
    page_size: int,
    shard_rows: int,
    *,
    count: int | None = None,
) -> tuple[shards.ShardPlan, shards.ShardReader]:
    """Plan the shards of a prepared export (from ``count`` when the caller just read it)
    and keep (or start) the staging folder."""
    plan = shards.plan_shards(
        client, prepared.query, page_size=page_size, shard_rows=shard_rows, count=count
    )
    staging = destination.staging(day)
    shards.load_or_start_plan(staging, plan)
    reader = shards.ShardReader(client, plan, prepared.schema, staging, prepared.settings)
    return plan, reader


def shard_reader(
    client: AnalyticsClient, destination: Destination, day: str, **export: Any
) -> shards.ShardReader:
    """The reader of the shards planned in ``destination``'s staging folder for ``day`` (for a
    task that reads some of them): the recorded plan, the columns decided again from it."""
    staging = destination.staging(day)
    plan = shards.read_plan(staging)
    from airflow_provider_analytics.client.validation import cohort_query

    query = cohort_query(plan.cohort_code, limit=plan.limit, properties=list(plan.properties))
    prepared = prepare_export(client, query, **export)
    return shards.ShardReader(client, plan, prepared.schema, staging, prepared.settings)


def publish_shards(
    client: AnalyticsClient,
    plan: shards.ShardPlan,
    destination: Destination,
    day: str,
    *,
    started: float | None = None,
) -> dict[str, Any]:
    """Check that every shard is read and the promise holds, publish, clear the staging."""
    staging = destination.staging(day)
    parts = [shards.part_of(staging, shard) for shard in plan.shards]
    missing = [shard.index for shard in plan.shards if not parts[shard.index].exists()]
    if missing:
        raise CohortChangedError(
            f"cohort {plan.cohort_code!r}: shards {missing} are not read yet; nothing was published"
        )
    with arrow_memory_pool(ExportSettings.memory_pool):
        shards.check_consistency(client, plan, parts)
        trim_heap()  # the check's ids, back before the merge
        published = destination.publish_parts(day, parts)
    shards.clear_staging(staging)
    seconds = time.monotonic() - started if started is not None else None
    return {
        "uri": published.uri,
        "cohort_code": plan.cohort_code,
        "rows": plan.rows,
        "expected_rows": plan.rows,
        "count": plan.count,
        "mode": "pages",
        "shards": len(plan.shards),
        "page_size": plan.page_size,
        "seconds": round(seconds, 3) if seconds is not None else None,
        **published.published,
    }
