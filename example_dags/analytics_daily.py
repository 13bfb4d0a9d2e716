"""Daily analytics pipeline: check the tracking plan, export a cohort to Parquet.

Output goes under ANALYTICS_OUTPUT_ROOT (a local ``file://`` prefix by default, or e.g.
``s3://aws_default@my-bucket/analytics/``), partitioned Hive-style by ``dt``.
"""

from __future__ import annotations

import os

import pendulum
from airflow.sdk import dag, task

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator

OUTPUT_ROOT = os.environ.get("ANALYTICS_OUTPUT_ROOT", "file:///tmp/analytics-output/")
COHORT = os.environ.get("ANALYTICS_DEMO_COHORT", "cohort_small")


@dag(
    schedule="@daily",
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example"],
)
def analytics_daily() -> None:
    @task
    def tracking_plan() -> dict[str, int]:
        """Count what the tracking plan holds; fails early if the connection is wrong."""
        hook = AnalyticsHook()
        return {
            "user_properties": len(hook.list_user_properties(plan=1)),
            "events": len(hook.list_events(plan=1)),
        }

    export_users = CohortExportToParquetOperator(
        task_id="export_cohort_users",
        cohort_code=COHORT,
        destination=f"{OUTPUT_ROOT}cohort_users/",
    )

    tracking_plan() >> export_users


analytics_daily()
