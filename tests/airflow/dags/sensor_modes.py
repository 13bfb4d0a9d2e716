"""The data-ready sensor in every mode, waiting for data the test releases mid-run."""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_provider_analytics.sensors.data_ready import AnalyticsDataSensor

with DAG(
    "sensor_modes",
    schedule="@daily",
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
):
    AnalyticsDataSensor(task_id="wait_poke", mode="poke", poke_interval=1, timeout=180)
    AnalyticsDataSensor(task_id="wait_reschedule", mode="reschedule", poke_interval=1, timeout=180)
    AnalyticsDataSensor(task_id="wait_deferred", deferrable=True, poke_interval=1, timeout=180)
    AnalyticsDataSensor(
        task_id="wait_plan", source="plan", event="refund", poke_interval=1, timeout=180
    )

with DAG(
    "sensor_failures",
    schedule="@daily",
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
):
    AnalyticsDataSensor(
        task_id="bad_token_fails", analytics_conn_id="analytics_bad", poke_interval=1, timeout=600
    )
    AnalyticsDataSensor(
        task_id="bad_token_soft_fail",
        analytics_conn_id="analytics_bad",
        soft_fail=True,
        poke_interval=1,
        timeout=600,
    )
    AnalyticsDataSensor(task_id="times_out", event="refund", poke_interval=1, timeout=3)
    AnalyticsDataSensor(
        task_id="times_out_soft", event="refund", poke_interval=1, timeout=3, soft_fail=True
    )
    AnalyticsDataSensor(
        task_id="times_out_deferred", event="refund", deferrable=True, poke_interval=1, timeout=5
    )
