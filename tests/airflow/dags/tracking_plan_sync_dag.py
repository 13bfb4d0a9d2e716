"""Preview, apply, then re-check the tracking plan file that sits beside this DAG file."""

from __future__ import annotations

import datetime

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
    sync = TrackingPlanSyncOperator(task_id="sync", plan="{{ params.plan_file }}")
    recheck = TrackingPlanSyncOperator(task_id="recheck", plan="tracking_plan.yaml")
    preview >> sync >> recheck
