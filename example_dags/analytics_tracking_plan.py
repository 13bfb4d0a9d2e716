"""Keep the platform's tracking plan in line with tracking_plan.yaml, kept beside this file,
with a person approving each change before it is applied.

The preview reads the platform's plan and lists what would change, without writing. When there
is something to change, Airflow asks for approval (the run's Required Actions page shows the
difference: items added, modified, in conflict, and those left alone); on approval the sync
applies exactly the reviewed difference, and fails without writing if the platform's plan or
the file changed since the preview. On rejection nothing is applied. Platform items the file
does not list are left alone, and running it again changes nothing, so a daily schedule simply
repairs drift. A data type that can no longer change fails the sync before anything is written.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pendulum
from airflow.providers.standard.operators.hitl import ApprovalOperator
from airflow.sdk import dag, task

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

    @task.short_circuit
    def has_changes(found: dict[str, Any]) -> bool:
        """Ask nobody on a day when the platform already matches the file."""
        return bool(found["added"] or found["modified"] or found["conflicts"])

    approve = ApprovalOperator(
        task_id="approve",
        subject="Apply the tracking plan file's changes to the platform?",
        body="{{ ti.xcom_pull(task_ids='preview')['review'] }}",
        response_timeout=dt.timedelta(hours=20),  # unanswered: the run fails, nothing applied
    )
    sync = TrackingPlanSyncOperator(task_id="sync", plan=PLAN_FILE, reviewed_preview="preview")
    has_changes(preview.output) >> approve >> sync


analytics_tracking_plan()
