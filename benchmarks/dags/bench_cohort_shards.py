"""The example DAG's sharded export (``example_dags/analytics_cohort_shards.py``: plan, mapped
reads in the ``analytics_platform`` pool with their own retries, one publication) with the
cohort and the shard sizes given by the run's conf, for ``benchmarks/cohort_shards_celery.py``.

The example reads ``cohort_medium`` in shards of 2,000 users; ten million users in such shards
would be 5,000 mapped tasks, beyond Airflow's ``max_map_length`` (1,024), so the benchmark
passes the sizes of ``benchmarks/cohort_shards.py`` (the default pages of 5,000, shards of
200,000) and every visible property of the plan. No schedule: it runs only when triggered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pendulum
from airflow.sdk import Param, dag
from analytics_outputs import OUTPUT_ROOT, PROJECT_TIMEZONE

from airflow_provider_analytics.operators.cohort_shards import (
    CohortShardPlanOperator,
    CohortShardPublishOperator,
    CohortShardReadOperator,
)
from airflow_provider_analytics.provider_info import PLATFORM_POOL

if TYPE_CHECKING:
    from collections.abc import Sequence

BENCH_COHORT_USERS = f"{OUTPUT_ROOT}bench_cohort_users/"

EXPORT = {
    "cohort_code": "{{ params.cohort_code }}",
    "destination": BENCH_COHORT_USERS,
    "timezone": PROJECT_TIMEZONE,
}
"""The arguments the three steps share (no ``properties``: every visible one of the plan)."""


class SizedShardPlanOperator(CohortShardPlanOperator):
    """The plan step with its page and shard sizes taken from the run's params (the read and
    publish steps follow the recorded plan, so only the plan needs them)."""

    template_fields: Sequence[str] = (
        *CohortShardPlanOperator.template_fields,
        "page_size",
        "shard_rows",
    )


@dag(
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    render_template_as_native_obj=True,
    params={
        "cohort_code": Param("cohort_large", type="string"),
        "page_size": Param(5_000, type="integer", minimum=1, maximum=10_000),
        "shard_rows": Param(200_000, type="integer", minimum=1),
    },
    tags=["analytics", "benchmark", "shards"],
)
def bench_cohort_shards() -> None:
    plan = SizedShardPlanOperator(
        task_id="plan_shards",
        pool=PLATFORM_POOL,
        page_size="{{ params.page_size }}",
        shard_rows="{{ params.shard_rows }}",
        **EXPORT,
    )
    read = CohortShardReadOperator.partial(
        task_id="read_shard",
        pool=PLATFORM_POOL,
        retries=3,
        retry_delay=pendulum.duration(seconds=5),
        **EXPORT,
    ).expand(shard_index=plan.output)
    publish = CohortShardPublishOperator(task_id="publish_cohort", pool=PLATFORM_POOL, **EXPORT)
    plan >> read >> publish


bench_cohort_shards()
