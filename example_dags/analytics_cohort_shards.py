"""A cohort of any size exported across workers: plan the shards, read them as mapped tasks
(each on any worker, each retried on its own), then check and publish the day at once.

With the CeleryExecutor (``make stack-celery`` runs two workers) the read tasks spread over the
workers; a worker lost mid-shard costs that shard only, which a retry reads on any worker. The
tasks share the ``analytics_platform`` pool, whose slots bound the calls in flight to the
platform however many workers run (``make stack`` creates it; in a deployment:
``airflow pools set analytics_platform 4 "calls to the analytics platform"``), and within each
worker the client keeps at most ``max_concurrent_calls`` calls in flight.

Each day lands in ``cohort_code=<code>/dt=<day>/users.parquet`` under the prefix, replacing that
day's earlier file in one step; readers see the old day or the new one, never a mix.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import dag
from analytics_outputs import LARGE_COHORT_USERS, PROJECT_TIMEZONE

from airflow_provider_analytics.operators.cohort_shards import (
    CohortShardPlanOperator,
    CohortShardPublishOperator,
    CohortShardReadOperator,
)
from airflow_provider_analytics.provider_info import PLATFORM_POOL

COHORT = "cohort_medium"
EXPORT = {
    "cohort_code": COHORT,
    "destination": LARGE_COHORT_USERS,
    "timezone": PROJECT_TIMEZONE,
    "properties": ["distinct_id", "$city", "register_time", "total_orders", "is_vip"],
    "page_size": 1000,
    "shard_rows": 2000,
}
"""The export's arguments, the same for the three steps."""


@dag(
    schedule="@daily",
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["analytics", "example", "shards"],
)
def analytics_cohort_shards() -> None:
    plan = CohortShardPlanOperator(task_id="plan_shards", pool=PLATFORM_POOL, **EXPORT)
    read = CohortShardReadOperator.partial(
        task_id="read_shard",
        pool=PLATFORM_POOL,
        retries=3,
        retry_delay=pendulum.duration(seconds=5),  # a lost shard is read again soon
        **EXPORT,
    ).expand(shard_index=plan.output)
    publish = CohortShardPublishOperator(task_id="publish_cohort", pool=PLATFORM_POOL, **EXPORT)
    plan >> read >> publish


analytics_cohort_shards()
