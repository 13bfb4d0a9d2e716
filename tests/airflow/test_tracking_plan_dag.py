"""TrackingPlanSyncOperator in a real ``airflow dags test`` run against an emulator of its own,
started by the emulator's pytest plugin (fixture ``analytics_emulator``) as a user's test would:
the connection it sets is handed to the ``airflow`` process as it is."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig

if TYPE_CHECKING:
    from analytics_emulator.testing import RunningEmulator

    from devtools.airflow_runner import DagRunner

pytestmark = [pytest.mark.slow, pytest.mark.integration]

HERE = Path(__file__).resolve().parent
DAG_FILE = HERE / "dags" / "tracking_plan_sync_dag.py"
PLAN_FILE = HERE.parents[1] / "example_dags" / "tracking_plan.yaml"


def ids(changes: list[dict]) -> list[tuple[str, str]]:
    return [(c["target"], c["id"]) for c in changes]


def test_preview_sync_and_recheck_in_a_real_dag_run(
    dag_runner: DagRunner, analytics_emulator: RunningEmulator
) -> None:
    variable = analytics_emulator.connection_env_name
    assert variable == "AIRFLOW_CONN_ANALYTICS_DEFAULT"
    env = {variable: os.environ[variable]}
    # The plan file is copied beside the DAG file: the operators name it by a relative path.
    result = dag_runner.run(
        "tracking_plan_sync", "2024-01-02", dag_files=[DAG_FILE, PLAN_FILE], env=env
    )
    assert result.returncode == 0, result.output[-4000:]
    assert result.state == "success"

    preview, sync, recheck = (result.task_xcom(t) for t in ("preview", "sync", "recheck"))
    assert preview["dry_run"] is True and sync["dry_run"] is False
    assert ids(preview["added"]) == ids(sync["added"])
    assert ids(preview["modified"]) == ids(sync["modified"])
    assert ("user_property", "vip_level") in ids(sync["added"])
    assert sync["conflicts"] == []
    assert (recheck["added"], recheck["modified"], recheck["conflicts"]) == ([], [], [])
    assert recheck["skipped"] == sync["skipped"] + len(sync["added"]) + len(sync["modified"])
    assert analytics_emulator.token.reveal() not in result.output

    settings = ClientConfig(
        analytics_emulator.base_url,
        token=analytics_emulator.token.reveal(),
        app_key=analytics_emulator.app_key.reveal(),
    )
    with AnalyticsClient(settings) as client:
        users = {r["id"]: r for r in client.list_user_properties()}
        events = {r["id"]: r for r in client.list_events()}
    assert users["vip_level"]["name"] == "VIP level"
    assert events["checkout_started"]["plan"] == 1
