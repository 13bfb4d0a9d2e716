"""Preview, approve, apply, then re-check the tracking plan file that sits beside this DAG file.

The apply is the reviewed preview's: it runs only when a person approves (the test answers
through Airflow's API), and sends only the difference that was reviewed.
"""

from __future__ import annotations

import datetime

from airflow.providers.standard.operators.hitl import ApprovalOperator
from airflow.sdk import DAG

from airflow_provider_analytics.operators.tracking_plan import TrackingPlanSyncOperator

with DAG(
    dag_id="tracking_plan_sync",
    schedule=None,
    start_date=datetime.datetime(2024, 1, 1),
    catchup=False,
    params={"plan_file": "tracking_plan.yaml"},
):
    preview = TrackingPlanSyncOperator(task_id="preview", plan="tracking_plan.yaml", dry_run=True)
    approve = ApprovalOperator(
        task_id="approve",
        subject="Apply the tracking plan file to the platform?",
        body="{{ ti.xcom_pull(task_ids='preview')['review'] }}",
    )
    sync = TrackingPlanSyncOperator(
        task_id="sync", plan="{{ params.plan_file }}", reviewed_preview="preview"
    )
    recheck = TrackingPlanSyncOperator(task_id="recheck", plan="tracking_plan.yaml")
    preview >> approve >> sync >> recheck
