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
from analytics_emulator.server import EmulatorConfig, EmulatorServer

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


def release_when_polled(admin: EmulatorAdmin, runner: threading.Thread) -> dict[str, int]:
    """Release each kind of data once its sensor has been seen polling for it a few times.

    `dags test` runs one task at a time in an order of its choosing, so whichever sensor runs
    first must be answered first. Returns the polls seen before each release.
    """
    start = admin.stats()["requests"]
    releases = {
        "analyze_events": (3, lambda: admin.set_data_until(None)),
        "list_events": (2, lambda: admin.set_data_status(1, event="refund")),
    }
    seen: dict[str, int] = {}
    deadline = time.monotonic() + 240
    while releases and runner.is_alive() and time.monotonic() < deadline:
        requests = admin.stats()["requests"]
        for operation, (needed, release) in list(releases.items()):
            polls = requests.get(operation, 0) - start.get(operation, 0)
            if polls >= needed:
                release()
                seen[operation] = polls
                del releases[operation]
        time.sleep(0.3)
    return seen


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
    seen = release_when_polled(admin, runner)
    runner.join(timeout=300)
    result = outcome["run"]
    assert result.returncode == 0, result.output[-6000:]
    assert seen.get("analyze_events", 0) >= 3 and seen.get("list_events", 0) >= 2, seen
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
        "times_out_deferred": "failed",
    }
    # the deferred sensor's trigger kept the 5 s timeout itself under `dags test`
    assert "data not ready before the sensor's timeout" in result.output
    assert "check the token and appKey" in result.output
    assert "tok-Not-Valid-42" not in result.output
    assert time.monotonic() - started < 300  # bad credentials did not wait for the 600 s timeout
