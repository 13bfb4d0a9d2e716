"""One cohort export with quick retries, for killing its worker mid-stream."""

from __future__ import annotations

import datetime as dt

import pendulum
from airflow.sdk import DAG
from analytics_outputs import COHORT_USERS

from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator

with DAG(
    "stack_export_once",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
):
    CohortExportToParquetOperator(
        task_id="export",
        cohort_code="cohort_small",
        destination=COHORT_USERS,
        properties=["distinct_id", "$city"],
        retries=2,
        retry_delay=dt.timedelta(seconds=1),
    )
