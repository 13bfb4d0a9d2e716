"""Event-driven pipelines: run once for each day whose events have landed, with no cron and no
sensor holding a slot.

The triggerer polls the platform (``AnalyticsDataReadyEventTrigger`` in an ``AssetWatcher``) and
announces each complete day whose event count reaches the watcher's threshold, once. Each
announcement starts one run of the DAG scheduled on the watched asset, and the provider's
operators in that run cover the announced day (the day rule reads it from the event): here the
cohort of that day is exported to ``event_driven/cohort_users/.../dt=<day>/users.parquet``, its
asset event carrying the day as its partition key (``partition_outputs=True``) for
``analytics_partitioned_consumer``.

A second DAG watches the same project, event and window with a higher threshold: the triggerer
runs one poll for both watchers, and each judges the answer with its own threshold.
"""

from __future__ import annotations

from typing import Any

import pendulum
from airflow.sdk import Asset, AssetWatcher, dag, task
from analytics_outputs import EVENT_DRIVEN_USERS, PROJECT_TIMEZONE, READY_POLL_SECONDS

from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.triggers.data_ready_event import AnalyticsDataReadyEventTrigger

DAY_READY = Asset(
    name="analytics_day_ready",
    watchers=[
        AssetWatcher(
            name="analytics_day_ready",
            trigger=AnalyticsDataReadyEventTrigger(
                threshold=100, poke_interval=READY_POLL_SECONDS, timezone=PROJECT_TIMEZONE
            ),
        )
    ],
)
BUSY_DAY = Asset(
    name="analytics_busy_day",
    watchers=[
        AssetWatcher(
            name="analytics_busy_day",
            # same connection, event and window as DAY_READY: one shared poll
            trigger=AnalyticsDataReadyEventTrigger(
                threshold=200, poke_interval=READY_POLL_SECONDS, timezone=PROJECT_TIMEZONE
            ),
        )
    ],
)


@dag(
    schedule=[DAY_READY],
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example"],
)
def analytics_event_driven() -> None:
    CohortExportToParquetOperator(
        task_id="export_cohort_users",
        timezone=PROJECT_TIMEZONE,
        cohort_code="cohort_small",
        destination=EVENT_DRIVEN_USERS,
        properties=["distinct_id", "$city", "$os", "register_time", "balance", "is_vip"],
        schema_overrides={"balance": "double"},
        partition_outputs=True,
    )


@dag(
    schedule=[BUSY_DAY],
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example"],
)
def analytics_busy_day() -> None:
    @task
    def busy_day(*, triggering_asset_events: Any) -> dict[str, Any]:
        """What a data-ready event carries: the day, its count and the threshold it passed."""
        (event,) = triggering_asset_events[BUSY_DAY]
        payload = event.extra["payload"]
        return {"day": payload["day"], "count": payload["count"], "threshold": payload["threshold"]}

    busy_day()


analytics_event_driven()
analytics_busy_day()
