"""One shard of a planned cohort export, read by a process of its own, as a mapped read task
on a worker of its own would read it (for the shared hold-off's tests).

Run as ``python -m tests.shard_hold_reader BASE_URL PREFIX DAY SHARD`` with the project's
credentials in ``ANALYTICS_TOKEN`` and ``ANALYTICS_APP_KEY``: reads the plan recorded in the
staging folder of the Parquet prefix ``PREFIX`` (cohort ``cohort_small``), reads shard number
``SHARD`` through the platform at ``BASE_URL`` and prints ``{"rows": N}``.
"""

from __future__ import annotations

import json
import logging
import os
import sys

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
from airflow_provider_analytics.core.identity import cohort_identity
from airflow_provider_analytics.export.cohort_day import shard_reader
from airflow_provider_analytics.output.parquet_destination import ParquetDestination

COHORT = "cohort_small"


def main(base_url: str, prefix: str, day: str, index: int) -> int:
    config = ClientConfig(
        base_url, token=os.environ["ANALYTICS_TOKEN"], app_key=os.environ["ANALYTICS_APP_KEY"]
    )
    destination = ParquetDestination(prefix, cohort_identity(COHORT))
    with AnalyticsClient(config) as client:
        reader = shard_reader(client, COHORT, destination, day, timezone="UTC")
        return reader.read(reader.plan.shards[index])


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    rows = main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
    print(json.dumps({"rows": rows}))
