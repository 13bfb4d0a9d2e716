"""The data-ready sensor in poke, reschedule and deferrable modes inside real `airflow dags test`
runs, with the day's data arriving while they wait; and its failure paths."""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from airflow_provider_analytics.emulator.server import EmulatorConfig, EmulatorServer
from devtools.airflow_runner import DagRunResult, connection_env
from tests.emulator_helpers import EmulatorAdmin

if TYPE_CHECKING:
    from collections.abc import Iterator

    from devtools.airflow_runner import DagRunner

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("airflow")]

DAG_FILE = Path(__file__).parent / "dags" / "sensor_modes.py"


@pytest.fixture(scope="module")
def platform() -> Iterator[EmulatorServer]:
    with EmulatorServer(EmulatorConfig(admin_token="admin-for-sensor-test")) as server:
        yield server


def environment(server: EmulatorServer) -> dict[str, str]:
    config = server.config
    env = connection_env(
        server.base_url, token=config.token, app_key=config.app_key, xtoken=config.xtoken
    )
    bad = json.loads(env["AIRFLOW_CONN_ANALYTICS_DEFAULT"]) | {"password": "tok-Not-Valid-42"}
    env["AIRFLOW_CONN_ANALYTICS_BAD"] = json.dumps(bad)
    return env


def wait_for_polls(admin: EmulatorAdmin, operation: str, count: int) -> bool:
    before = admin.stats()["requests"].get(operation, 0)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if admin.stats()["requests"].get(operation, 0) - before >= count:
            return True
        time.sleep(0.3)
    return False


def test_every_mode_waits_then_succeeds_when_data_arrives(
    platform: EmulatorServer, dag_runner: DagRunner
) -> None:
    admin = EmulatorAdmin(platform)
    admin.set_data_until(dt.date(2024, 1, 14))  # 2024-01-15 has not landed yet
    outcome: dict[str, DagRunResult] = {}
    runner = threading.Thread(
        target=lambda: outcome.update(
            run=dag_runner.run(
                "sensor_modes", "2024-01-15", dag_files=[DAG_FILE], env=environment(platform)
            )
        )
    )
    runner.start()
    # `dags test` runs one task at a time, so the sensors wait in turn: release the events once
    # a sensor has polled for them a few times, and the plan status once it is being polled.
    assert wait_for_polls(admin, "analyze_events", 3), "no sensor polled for the day's events"
    polled_before_arrival = admin.stats()["requests"]["analyze_events"]
    admin.set_data_until(None)
    assert wait_for_polls(admin, "list_events", 2), "the plan sensor never polled"
    admin.set_data_status(1, event="refund")
    runner.join(timeout=300)
    result = outcome["run"]
    assert result.returncode == 0, result.output[-6000:]
    assert polled_before_arrival >= 3
    assert result.task_states == dict.fromkeys(
        ["wait_poke", "wait_reschedule", "wait_deferred", "wait_plan"], "success"
    )
    for task in ("wait_poke", "wait_reschedule", "wait_deferred"):
        detail = result.task_xcom(task)
        assert detail["missing"] == [] and detail["counts"]["2024-01-15"] > 0, task
    assert result.task_xcom("wait_plan")["dataStatus"] == 1
    assert "up_for_reschedule" in result.output.lower() or "reschedul" in result.output.lower()
    assert "deferr" in result.output.lower()
    admin.reset()
    admin.close()


def test_failures_fail_fast_or_skip(platform: EmulatorServer, dag_runner: DagRunner) -> None:
    started = time.monotonic()
    result = dag_runner.run(
        "sensor_failures", "2024-01-15", dag_files=[DAG_FILE], env=environment(platform)
    )
    assert result.state == "failed"
    assert result.task_states == {
        "bad_token_fails": "failed",
        "bad_token_soft_fail": "skipped",
        "times_out": "failed",
        "times_out_soft": "skipped",
    }
    assert "check the token and appKey" in result.output
    assert "tok-Not-Valid-42" not in result.output
    assert time.monotonic() - started < 300  # bad credentials did not wait for the 600 s timeout
