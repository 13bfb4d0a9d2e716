"""Data-aware scheduling: a digest of the checkout funnel, run whenever a new partition of it is
written.

FunnelReportOperator declares the untemplated prefix of its destination as an Asset, and each
run records the object it wrote on the asset event (``extra["uri"]``). This DAG is scheduled on
that Asset and reads the newest partition, wherever ANALYTICS_OUTPUT_ROOT puts it.
"""

from __future__ import annotations

from typing import Any

import pendulum
import pyarrow.parquet as pq
from airflow.sdk import ObjectStoragePath, dag, task
from analytics_outputs import CHECKOUT_FUNNEL

from airflow_provider_analytics.operators.output import destination_asset

FUNNEL_TABLE = destination_asset(CHECKOUT_FUNNEL)


@dag(
    schedule=[FUNNEL_TABLE],
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example"],
)
def analytics_funnel_digest() -> None:
    @task(inlets=[FUNNEL_TABLE])
    def funnel_digest(*, inlet_events: Any) -> dict[str, Any]:
        """Users and completion rate of each step over the partition's whole date range."""
        newest = inlet_events[FUNNEL_TABLE][-1]
        totals_uri = newest.extra["tables"]["funnel_totals"]
        with ObjectStoragePath(totals_uri).open("rb") as source:
            overall = pq.read_table(source)
        steps = overall.sort_by("step_number").select(
            ["step_event", "converted_users", "completion_rate"]
        )
        return {"uri": totals_uri, "steps": steps.to_pylist()}

    funnel_digest()


analytics_funnel_digest()
