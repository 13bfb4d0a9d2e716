"""The data-ready sensor, deferrable: it waits in the stack's triggerer for data the test
releases."""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_provider_analytics.sensors.data_ready import AnalyticsDataSensor

with DAG(
    "stack_deferral",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
):
    AnalyticsDataSensor(task_id="wait_deferred", deferrable=True, poke_interval=1, timeout=300)
