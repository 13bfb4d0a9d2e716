"""A DAG of one's own: a cohort exported to Parquet every day, under a root set by a param."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG

from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator

with DAG(
    dag_id="vip_cohort_export",
    schedule="@daily",
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    params={"output_root": "file:///data/analytics/"},
) as dag:
    CohortExportToParquetOperator(
        task_id="export_vip",
        cohort_code="cohort_small",
        destination="{{ params.output_root }}cohorts/",
        properties=["distinct_id", "age", "is_vip"],
    )
