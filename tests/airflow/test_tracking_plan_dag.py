"""TrackingPlanSyncOperator in a real ``airflow dags test`` run against an emulator of its own,
started by the emulator's pytest plugin (fixture ``analytics_emulator``) as a user's test would:
the connection it sets is handed to the ``airflow`` process as it is.

Between the preview and the apply, Airflow's ``ApprovalOperator`` asks a person; the test
answers through Airflow's REST API (``DagRunner.run(respond=...)``), once approving and once
rejecting, and reads the outcome from the emulator's own plan."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.emulator_helpers import live_plan as emulator_plan

if TYPE_CHECKING:
    from analytics_emulator.testing import RunningEmulator

    from devtools.airflow_runner import DagRunner

pytestmark = [pytest.mark.slow, pytest.mark.integration]

HERE = Path(__file__).resolve().parent
DAG_FILE = HERE / "dags" / "tracking_plan_sync_dag.py"
PLAN_FILE = HERE.parents[1] / "example_dags" / "tracking_plan.yaml"


def ids(changes: list[dict]) -> list[tuple[str, str]]:
    return [(c["target"], c["id"]) for c in changes]


def live_plan(emulator: RunningEmulator) -> dict[str, Any]:
    return emulator_plan(emulator.base_url, emulator.token.reveal(), emulator.app_key.reveal())


def run(dag_runner: DagRunner, emulator: RunningEmulator, answer: str) -> Any:
    variable = emulator.connection_env_name
    assert variable == "AIRFLOW_CONN_ANALYTICS_DEFAULT"
    # The plan file is copied beside the DAG file: the operators name it by a relative path.
    return dag_runner.run(
        "tracking_plan_sync",
        "2024-01-02",
        dag_files=[DAG_FILE, PLAN_FILE],
        env={variable: os.environ[variable]},
        respond={"approve": answer},
    )


def test_an_approved_preview_is_applied_then_rechecked(
    dag_runner: DagRunner, analytics_emulator: RunningEmulator
) -> None:
    result = run(dag_runner, analytics_emulator, "Approve")
    assert result.returncode == 0, result.output[-4000:]
    assert result.state == "success"
    assert "answered approve: Approve" in result.output

    preview, sync, recheck = (result.task_xcom(t) for t in ("preview", "sync", "recheck"))
    assert preview["dry_run"] is True and sync["dry_run"] is False
    assert "| add | user_property vip_level |" in preview["review"]
    assert ids(preview["added"]) == ids(sync["added"])
    assert ids(preview["modified"]) == ids(sync["modified"])
    assert sync["live_digest"] == preview["live_digest"]
    assert ("user_property", "vip_level") in ids(sync["added"])
    assert sync["conflicts"] == []
    assert (recheck["added"], recheck["modified"], recheck["conflicts"]) == ([], [], [])
    assert recheck["skipped"] == sync["skipped"] + len(sync["added"]) + len(sync["modified"])
    assert analytics_emulator.token.reveal() not in result.output

    plan = live_plan(analytics_emulator)
    assert plan["users"]["vip_level"]["name"] == "VIP level"
    assert plan["events"]["checkout_started"]["plan"] == 1


def test_a_rejected_preview_leaves_the_platform_as_it_was(
    dag_runner: DagRunner, analytics_emulator: RunningEmulator
) -> None:
    before = live_plan(analytics_emulator)
    result = run(dag_runner, analytics_emulator, "Reject")
    assert result.returncode == 0, result.output[-4000:]
    assert "answered approve: Reject" in result.output
    assert result.task_states == {
        "preview": "success",
        "approve": "success",
        "sync": "skipped",
        "recheck": "skipped",
    }
    assert result.task_xcom("preview")["added"]  # there was something to approve
    assert live_plan(analytics_emulator) == before
    assert "vip_level" not in before["users"]
