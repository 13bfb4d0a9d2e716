"""The DAG run for real with dag.test(), against the emulator of the pytest plugin.

The fixture ``analytics_emulator`` starts an emulator on a free port and points the
``analytics_default`` connection at it for the test; the marker chooses what it serves.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import pyarrow.parquet as pq
import pytest
from vip_cohort_export import dag  # dags/ is on pytest's pythonpath

if TYPE_CHECKING:
    from pathlib import Path

    from airflow.models.dagrun import DagRun
    from analytics_emulator.testing import RunningEmulator

DAY = dt.datetime(2024, 1, 15, tzinfo=dt.UTC)


def run_for(tmp_path: Path) -> DagRun:
    """One run of the DAG for DAY, writing under tmp_path."""
    return dag.test(logical_date=DAY, run_conf={"output_root": f"file://{tmp_path}/"})


def exported_rows(tmp_path: Path) -> list[int]:
    return [pq.read_metadata(path).num_rows for path in sorted(tmp_path.rglob("*.parquet"))]


def test_every_user_of_the_cohort_lands(
    analytics_emulator: RunningEmulator, tmp_path: Path
) -> None:
    assert run_for(tmp_path).state == "success"
    assert exported_rows(tmp_path) == [1_000]


@pytest.mark.analytics_emulator(cohorts={"cohort_small": 123_456})
def test_a_larger_cohort(analytics_emulator: RunningEmulator, tmp_path: Path) -> None:
    assert run_for(tmp_path).state == "success"
    assert exported_rows(tmp_path) == [123_456]


@pytest.mark.analytics_emulator(
    faults=[{"operation": "export_cohort_users", "kind": "status", "status": 503}]
)
def test_a_passing_503_is_retried(analytics_emulator: RunningEmulator, tmp_path: Path) -> None:
    assert run_for(tmp_path).state == "success"
    assert analytics_emulator.admin.stats()["requests"]["export_cohort_users"] == 2


@pytest.mark.analytics_emulator(proxy_cuts={"cohort_small": {"rows": 600, "ending": "mid_line"}})
def test_a_stream_the_proxy_cuts_every_time_is_read_in_pages(
    analytics_emulator: RunningEmulator, tmp_path: Path
) -> None:
    assert run_for(tmp_path).state == "success"
    assert exported_rows(tmp_path) == [1_000]  # every user, from the paged endpoint
    requests = analytics_emulator.admin.stats()["requests"]
    assert requests["export_cohort_users"] >= 2 and requests["get_cohort_users"] >= 1
