"""The provider under the CeleryExecutor with Redis and two workers (make stack-celery):
mapped exports spread over both workers, and a worker killed in the middle of an export."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.stack.conftest import (
    admin,
    parquet_rows,
    task_instances,
    trigger,
    wait_for_run,
    wait_until,
    xcom,
)

if TYPE_CHECKING:
    from devtools.stack import Stack

pytestmark = [pytest.mark.slow, pytest.mark.integration]

COHORT_SIZES = {"cohort_tiny": 7, "cohort_small": 1_000, "cohort_medium": 25_000}


@pytest.fixture(scope="module")
def mapped_run(celery_stack: Stack) -> str:
    """analytics_cohort_exports for one past day; each export held 3 s by the platform so that
    two run at once (the DAG allows two per run, each worker takes one task at a time)."""
    admin(celery_stack).fault("export_cohort_users", "stall", seconds=3, times=3)
    run_id = trigger(celery_stack, "analytics_cohort_exports", "2024-02-01")
    wait_for_run(celery_stack, "analytics_cohort_exports", run_id, timeout=180)
    return run_id


def test_mapped_exports_spread_over_both_workers(celery_stack: Stack, mapped_run: str) -> None:
    exports = task_instances(celery_stack, "analytics_cohort_exports", mapped_run)
    ran_on = {ti["map_index"]: ti["hostname"] for ti in exports}
    print(f"\nmapped export -> Celery worker: {ran_on}")
    assert sorted(ran_on) == [0, 1, 2]
    assert set(ran_on.values()) == {"worker-1", "worker-2"}
    for ti in exports:
        summary = xcom(
            celery_stack, "analytics_cohort_exports", mapped_run, "export_cohort", ti["map_index"]
        )
        assert "/dt=2024-02-01/" in summary["uri"]
        cohort = summary["uri"].split("cohort=")[1].split("/")[0]
        assert parquet_rows(summary["uri"]) == COHORT_SIZES[cohort]


@pytest.fixture(scope="module")
def killed_export(celery_stack: Stack) -> dict:
    """stack_export_once with its stream stalled after 10 rows; the worker running it is killed
    (SIGKILL to its whole process group) while the temporary object is open."""
    emulator = admin(celery_stack)
    emulator.fault("export_cohort_users", "stall_after_rows", rows=10, seconds=120)
    run_id = trigger(celery_stack, "stack_export_once", "2024-03-01")
    partition = celery_stack.output / "cohort_users" / "cohort=cohort_small" / "dt=2024-03-01"
    (temporary,) = wait_until(
        lambda: list(partition.glob(".*.inprogress")) if partition.exists() else [],
        120,
        "the export's temporary object",
    )
    (running,) = task_instances(celery_stack, "stack_export_once", run_id)
    killed = running["hostname"]
    celery_stack.kill(killed)
    try:
        wait_for_run(celery_stack, "stack_export_once", run_id, timeout=180)
    finally:
        emulator.clear_faults()
        celery_stack.start_worker(killed)
    (final,) = task_instances(celery_stack, "stack_export_once", run_id)
    retry = f"try {final['try_number']} on {final['hostname']}"
    print(f"\nthe export ran on {killed} (killed), then {retry}")
    return {"killed": killed, "temporary": temporary, "final": final, "partition": partition}


def test_a_killed_worker_s_export_is_retried_elsewhere(killed_export: dict) -> None:
    final = killed_export["final"]
    assert final["state"] == "success"
    assert final["try_number"] >= 2
    assert final["hostname"] in {"worker-1", "worker-2"} - {killed_export["killed"]}


def test_the_retried_file_is_whole_and_the_killed_attempt_s_temporary_is_gone(
    killed_export: dict,
) -> None:
    partition = killed_export["partition"]
    assert not killed_export["temporary"].exists()
    assert sorted(path.name for path in partition.iterdir()) == ["users.parquet"]
    assert parquet_rows(str(partition / "users.parquet")) == COHORT_SIZES["cohort_small"]
