"""A partitioned consumer: one run per day the event-driven export writes, reading exactly that
day's partition.

``analytics_event_driven`` announces each cohort file it writes with the day as the asset
event's ``partition_key``. On a ``PartitionedAssetTimetable`` this DAG runs once for each such
key, and its run's ``partition_key`` names the day it was started for: a rerun of one past day
starts one run, for that day only. The provider's operators in such a run cover that day too.
"""

from __future__ import annotations

from typing import Any

import pendulum
import pyarrow.parquet as pq
from airflow.sdk import ObjectStoragePath, PartitionedAssetTimetable, dag, task
from analytics_outputs import EVENT_DRIVEN_USERS

from airflow_provider_analytics.operators.output import destination_asset

EVENT_DRIVEN_TABLE = destination_asset(EVENT_DRIVEN_USERS)


@dag(
    schedule=PartitionedAssetTimetable(assets=EVENT_DRIVEN_TABLE),
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example"],
)
def analytics_partitioned_consumer() -> None:
    @task(inlets=[EVENT_DRIVEN_TABLE])
    def read_partition(*, dag_run: Any, triggering_asset_events: Any) -> dict[str, Any]:
        """The rows of the cohort file of the run's partition (the day), as announced."""
        day = dag_run.partition_key
        events = triggering_asset_events[EVENT_DRIVEN_TABLE]
        uris = {event.extra["uri"] for event in events if event.extra.get("day") == day}
        if len(uris) != 1 or f"/dt={day}/" not in next(iter(uris)):
            raise ValueError(f"partition {day}: the events announced {sorted(uris)}")
        (uri,) = uris
        with ObjectStoragePath(uri).open("rb") as source:
            rows = pq.read_metadata(source).num_rows
        return {"partition_key": day, "uri": uri, "rows": rows, "events": len(events)}

    read_partition()


analytics_partitioned_consumer()
