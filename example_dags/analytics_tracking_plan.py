"""Keep the platform's tracking plan in line with tracking_plan.yaml, kept beside this file.

The preview logs what would change without writing; the sync then adds and modifies items.
Platform items the file does not list are left alone, and running it again changes nothing,
so a daily schedule simply repairs drift. A data type that can no longer change fails the
sync before anything is written.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import dag

from airflow_provider_analytics.operators.tracking_plan import TrackingPlanSyncOperator

PLAN_FILE = "tracking_plan.yaml"  # relative paths start at this DAG file's folder


@dag(
    schedule="@daily",
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example"],
)
def analytics_tracking_plan() -> None:
    preview = TrackingPlanSyncOperator(task_id="preview", plan=PLAN_FILE, dry_run=True)
    sync = TrackingPlanSyncOperator(task_id="sync", plan=PLAN_FILE)
    preview >> sync


analytics_tracking_plan()
