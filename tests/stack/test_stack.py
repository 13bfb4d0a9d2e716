"""The provider under a production-like Airflow (devtools/stack.py).

With the LocalExecutor (make stack): manual runs of past days, backfills, a deferral to the
real triggerer, and event-driven runs (data-ready watchers, a partitioned consumer). Then with
the CeleryExecutor, Redis and two workers (make stack-celery): mapped exports spread over both
workers, a worker killed in the middle of an export, approvals answered through the REST API,
and the same event-driven runs as under the LocalExecutor.

One module, so that one test worker brings up one stack at a time (the first is stopped before
the second starts) while the other test worker gets on with the rest of the suite."""

from __future__ import annotations

import datetime as dt
import functools
import json
import time
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import pytest

from airflow_provider_analytics.client.throttle import DEFAULT_MAX_CONCURRENT_CALLS
from airflow_provider_analytics.provider_info import PLATFORM_POOL, PLATFORM_POOL_DESCRIPTION
from devtools import hitl_responder
from devtools.stack import CREDENTIALS, WORKERS
from tests.emulator_helpers import live_plan
from tests.stack.conftest import (
    FINISHED,
    admin,
    parquet_rows,
    rest_api,
    task_instances,
    trigger,
    wait_for_run,
    wait_until,
    xcom,
)

if TYPE_CHECKING:
    from devtools.stack import Stack

    Watched = tuple[Stack, dict[str, dt.date]]
    """A stack whose scheduler runs the event-driven examples, and the days the tests use."""

# Generous waits: on a loaded 2-core machine an Airflow task process takes tens of seconds.
pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.timeout(1200)]

DAG_ID = "analytics_daily"
WRITERS = ("export_cohort_users", "checkout_funnel", "daily_events")
BACKFILL_DAYS = ("2024-01-02", "2024-01-03", "2024-01-04")


def backfill_exceptions(stack: Stack, dag_id: str) -> list[tuple[str, str | None]]:
    rows = stack.query(
        "SELECT bdr.logical_date::date::text, bdr.exception_reason FROM backfill_dag_run bdr "
        "JOIN backfill b ON b.id = bdr.backfill_id WHERE b.dag_id = %s ORDER BY bdr.id",
        dag_id,
    )
    return [(str(day), reason) for day, reason in rows]


def backfills_finished(stack: Stack, dag_id: str) -> bool:
    rows = stack.query("SELECT completed_at FROM backfill WHERE dag_id = %s", dag_id)
    return all(completed is not None for (completed,) in rows)


MANUAL_DAY = "2024-01-15"
NEAR = dt.timedelta(seconds=30)
"""Longer than ``backfill create`` takes from stamping the backfill to looking at a day, and
than the scheduler takes from stamping a run's end to committing it."""
FUNNEL_TABLES = ("funnel", "funnel_totals", "funnel_by_value", "funnel_by_value_totals")
EVENT_TABLES = ("events", "events_totals")


@pytest.fixture(scope="module")
def manual_run(local_stack: Stack) -> str:
    """`airflow dags trigger analytics_daily --logical-date 2024-01-15`, run by the scheduler;
    meanwhile a backfill over the same day, which the run in flight holds off."""
    run_id = trigger(local_stack, DAG_ID, MANUAL_DAY)
    backfill = local_stack.airflow(
        "backfill", "create", "--dag-id", DAG_ID, "--from-date", MANUAL_DAY, "--to-date", MANUAL_DAY
    )
    assert backfill.returncode == 0, backfill.stderr
    wait_for_run(local_stack, DAG_ID, run_id, timeout=420)
    wait_until(lambda: backfills_finished(local_stack, DAG_ID), 300, "the empty backfill to end")
    return run_id


def test_the_platform_pool_is_created_with_the_documented_slots(local_stack: Stack) -> None:
    rows = local_stack.query(
        "SELECT slots, description FROM slot_pool WHERE pool = %s", PLATFORM_POOL
    )
    assert rows == [(DEFAULT_MAX_CONCURRENT_CALLS, PLATFORM_POOL_DESCRIPTION)]


def test_a_manual_run_of_a_past_day_writes_that_days_partitions(
    local_stack: Stack, manual_run: str
) -> None:
    """Every output in dt=2024-01-15 with rows, and the sensor checked 2024-01-15."""
    for task_id in WRITERS:
        summary = xcom(local_stack, DAG_ID, manual_run, task_id)
        assert f"/dt={MANUAL_DAY}/" in summary["uri"], (task_id, summary["uri"])
        assert parquet_rows(summary["uri"]) > 0, task_id
    checked = xcom(local_stack, DAG_ID, manual_run, "events_landed")
    assert list(checked["counts"]) == [MANUAL_DAY]
    assert checked["counts"][MANUAL_DAY] > 0


def test_a_backfill_over_a_day_a_run_in_flight_holds_adds_no_run(
    local_stack: Stack, manual_run: str
) -> None:
    """Airflow records the day as "in flight" and creates nothing (see the README).

    On a loaded machine the manual run can finish before ``backfill create`` has looked at the
    day; Airflow then says "already exists" and still creates nothing. Which of the two applies
    is read from the times the database recorded, not guessed. Near the boundary either may
    apply: the backfill's ``created_at`` is stamped before Airflow looks at the day, and the
    scheduler stamps a run's ``end_date`` before it commits the run's state.
    """
    ((created,),) = local_stack.query(
        "SELECT created_at FROM backfill WHERE dag_id = %s ORDER BY id LIMIT 1", DAG_ID
    )
    ((ended,),) = local_stack.query(
        "SELECT end_date FROM dag_run WHERE dag_id = %s AND run_id = %s", DAG_ID, manual_run
    )
    if abs(ended - created) <= NEAR:
        reasons = {"in flight", "already exists"}
    else:
        reasons = {"in flight"} if ended > created else {"already exists"}
    ((day, reason),) = backfill_exceptions(local_stack, DAG_ID)[:1]
    assert day == MANUAL_DAY
    assert reason in reasons, (reason, created, ended)
    runs = local_stack.query(
        "SELECT run_type FROM dag_run WHERE dag_id = %s AND logical_date = %s::timestamptz",
        DAG_ID,
        f"{MANUAL_DAY}T00:00:00+00:00",
    )
    assert runs == [("manual",)]


def _backfill_runs(stack: Stack) -> list[tuple[str, str, dt.datetime | None]]:
    rows = stack.query(
        "SELECT logical_date::date::text, state, end_date FROM dag_run "
        "WHERE dag_id = %s AND run_type = 'backfill' ORDER BY logical_date",
        DAG_ID,
    )
    return [(str(day), str(state), end) for day, state, end in rows]


def _wait_for_backfill(stack: Stack, finished_after: dt.datetime) -> int:
    """Wait until the three days' runs succeeded (ending after ``finished_after``); return the
    most runs seen running at once."""
    most_running = 0

    def done() -> bool:
        nonlocal most_running
        runs = _backfill_runs(stack)
        most_running = max(most_running, sum(state == "running" for _, state, _ in runs))
        failed = [run for run in runs if run[1] == "failed"]
        assert not failed, failed
        return len(runs) == 3 and all(
            state == "success" and end is not None and end > finished_after
            for _, state, end in runs
        )

    wait_until(done, 900, "the backfill's three runs")
    wait_until(lambda: backfills_finished(stack, DAG_ID), 300, "the backfill to be marked done")
    return most_running


def _backfill(stack: Stack, *options: str) -> int:
    """``airflow backfill create`` over the three days, two at a time; wait for it to end."""
    started = dt.datetime.now(dt.UTC)
    time.sleep(1)  # modification times of rewritten files must be able to differ
    done = stack.airflow(
        "backfill", "create", "--dag-id", DAG_ID, "--from-date", BACKFILL_DAYS[0],
        "--to-date", BACKFILL_DAYS[-1], "--max-active-runs", "2", *options,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return _wait_for_backfill(stack, started)


def _partitions(stack: Stack) -> dict[str, tuple[int, float]]:
    """Every object of analytics_daily's three backfilled days: rows and modification time."""
    files = {}
    for path in sorted(stack.output.rglob("*")):
        name = str(path.relative_to(stack.output))
        of_the_days = any(f"dt={day}" in name for day in BACKFILL_DAYS)
        of_this_dag = "cohort_code=" not in name or "cohort_code=cohort_small" in name
        of_this_dag = of_this_dag and not name.startswith("large_cohort_users")
        if path.is_file() and of_the_days and of_this_dag:
            files[name] = (parquet_rows(str(path)), path.stat().st_mtime)
    return files


@pytest.fixture(scope="module")
def backfilled(local_stack: Stack) -> tuple[int, dict[str, tuple[int, float]]]:
    """The scheduler has run a three-day backfill: most runs at once, the files written."""
    wait_until(lambda: backfills_finished(local_stack, DAG_ID), 300, "earlier backfills to end")
    assert not _backfill_runs(local_stack)
    most_running = _backfill(local_stack)
    return most_running, _partitions(local_stack)


@pytest.fixture(scope="module")
def reprocessed(
    local_stack: Stack, backfilled: tuple[int, dict[str, tuple[int, float]]]
) -> dict[str, tuple[int, float]]:
    """The same range backfilled again with ``--reprocess-behavior completed``."""
    _backfill(local_stack, "--reprocess-behavior", "completed")
    return _partitions(local_stack)


def test_a_backfill_of_three_days_runs_under_the_scheduler(
    local_stack: Stack, backfilled: tuple[int, dict[str, tuple[int, float]]]
) -> None:
    most_running, files = backfilled
    assert [day for day, _, _ in _backfill_runs(local_stack)] == list(BACKFILL_DAYS)
    assert 1 <= most_running <= 2
    expected = {
        f"{prefix}/dt={day}/{name}"
        for day in BACKFILL_DAYS
        for prefix, name in (
            ("cohort_users/cohort_code=cohort_small", "users.parquet"),
            *(
                (f"checkout_funnel/{table}/report_key=checkout", f"{table}.parquet")
                for table in FUNNEL_TABLES
            ),
            *(
                (f"daily_events/{table}/report_key=daily_events", f"{table}.parquet")
                for table in EVENT_TABLES
            ),
        )
    }
    assert set(files) == expected
    # every table of one grain has rows, but the split ones of an unsplit funnel
    assert all(rows > 0 for name, (rows, _) in files.items() if "by_value" not in name)


def test_reprocessing_completed_days_replaces_them_without_duplicates(
    local_stack: Stack,
    backfilled: tuple[int, dict[str, tuple[int, float]]],
    reprocessed: dict[str, tuple[int, float]],
) -> None:
    before = backfilled[1]
    assert len(before) == len(BACKFILL_DAYS) * (1 + len(FUNNEL_TABLES) + len(EVENT_TABLES))
    assert set(reprocessed) == set(before)  # the same objects: nothing appended beside them
    for name, (rows, modified) in reprocessed.items():
        assert rows == before[name][0], name
        assert modified > before[name][1], f"{name} was not rewritten"
    assert not list(local_stack.output.rglob("*.inprogress"))
    # still one run per day: the reprocessing cleared and reran the same runs
    assert [day for day, _, _ in _backfill_runs(local_stack)] == list(BACKFILL_DAYS)


def deferred_to_a_triggerer(stack: Stack, dag_id: str, run_id: str) -> bool:
    rows = stack.query(
        "SELECT ti.state, t.triggerer_id FROM task_instance ti "
        "JOIN trigger t ON t.id = ti.trigger_id WHERE ti.dag_id = %s AND ti.run_id = %s",
        dag_id,
        run_id,
    )
    return bool(rows) and rows[0][0] == "deferred" and rows[0][1] is not None


def test_the_deferrable_sensor_waits_in_the_triggerer_and_resumes(local_stack: Stack) -> None:
    emulator = admin(local_stack)
    emulator.set_data_until(dt.date(2024, 1, 9))
    try:
        run_id = trigger(local_stack, "stack_deferral", "2024-01-10")
        wait_until(
            lambda: deferred_to_a_triggerer(local_stack, "stack_deferral", run_id),
            300,
            "the sensor to defer to the triggerer",
        )
    finally:
        emulator.set_data_until(None)
    wait_for_run(local_stack, "stack_deferral", run_id)
    (sensor,) = task_instances(local_stack, "stack_deferral", run_id)
    assert sensor["state"] == "success"
    detail = xcom(local_stack, "stack_deferral", run_id, "wait_deferred")
    assert list(detail["counts"]) == ["2024-01-10"]


HOSTILE_COUNT = (
    '{"series": ["2024-01-11"], "rows": [{"byValue": [], "values": [["7"]], "sum": null}]}'
)
"""A day's count sent as text: it used to be read as 7, and the day judged ready."""


def logged_anywhere(stack: Stack, text: str) -> bool:
    return any(
        text in path.read_text(errors="replace") for path in stack.logs.rglob("*") if path.is_file()
    )


def test_a_hostile_count_is_named_in_the_triggerer_and_the_sensor_waits_on(
    local_stack: Stack,
) -> None:
    """Under the real triggerer: a count of ``"7"`` is refused by name, logged, and polled
    through; the sensor stays deferred until a sound answer comes."""
    emulator = admin(local_stack)
    emulator.fault("analyze_events", "answer", body=HOSTILE_COUNT, times=100_000)
    refusal = "analyze_events: rows[0].values[0][0] must be a JSON number"
    try:
        run_id = trigger(local_stack, "stack_deferral", "2024-01-11")
        wait_until(
            lambda: deferred_to_a_triggerer(local_stack, "stack_deferral", run_id),
            300,
            "the sensor to defer to the triggerer",
        )
        wait_until(lambda: logged_anywhere(local_stack, refusal), 300, "the refusal in a log")
        assert deferred_to_a_triggerer(local_stack, "stack_deferral", run_id)
    finally:
        emulator.clear_faults()
    wait_for_run(local_stack, "stack_deferral", run_id)
    (sensor,) = task_instances(local_stack, "stack_deferral", run_id)
    assert sensor["state"] == "success"
    detail = xcom(local_stack, "stack_deferral", run_id, "wait_deferred")
    assert isinstance(detail["counts"]["2024-01-11"], int)


def test_every_run_in_the_test_stack_was_asked_for(local_stack: Stack, manual_run: str) -> None:
    """The stack tests turn the scheduler's own runs off (see conftest.NO_SCHEDULED_RUNS), so
    that the clock cannot start runs in the middle of a test; the manual and backfill runs
    above still ran under the scheduler."""
    kinds = local_stack.query(
        "SELECT DISTINCT run_type FROM dag_run WHERE NOT dag_id = ANY(%s) ORDER BY run_type",
        list(EVENT_DAGS),
    )
    assert kinds and {kind for (kind,) in kinds} <= {"manual", "backfill"}


# -- Event-driven runs and partitioned consumers (LocalExecutor; Celery at the end) -------

EVENT_DAGS = ("analytics_event_driven", "analytics_busy_day", "analytics_partitioned_consumer")
READY_POLL_SECONDS = 5  # conftest.FAST_READY_POLLS


def runs_of(stack: Stack, dag_id: str) -> list[tuple[str, str, str | None]]:
    """(run_type, state, partition_key) of every run of ``dag_id``, oldest first."""
    rows = stack.query(
        "SELECT run_type, state, partition_key FROM dag_run WHERE dag_id = %s ORDER BY id", dag_id
    )
    return [(str(kind), str(state), key) for kind, state, key in rows]


def finished_runs(stack: Stack, dag_id: str, count: int) -> list[str] | None:
    """The run ids of ``dag_id`` once exactly ``count`` runs exist and all have succeeded."""
    rows = stack.query("SELECT run_id, state FROM dag_run WHERE dag_id = %s ORDER BY id", dag_id)
    if len(rows) > count:
        raise AssertionError(f"{dag_id}: {len(rows)} runs, expected {count}: {rows}")
    if len(rows) < count or any(state not in FINISHED for _, state in rows):
        return None
    assert all(state == "success" for _, state in rows), rows
    return [str(run_id) for run_id, _ in rows]


def polls(stack: Stack) -> int:
    return int(admin(stack).stats()["requests"].get("analyze_events", 0))


def events_on(day: dt.date, count: int) -> list[dict[str, object]]:
    """``count`` events on ``day`` (the emulator's times are the project's wall time)."""
    return [
        {"user": n + 1, "event": "purchase", "time": f"{day} 12:{n // 60:02d}:{n % 60:02d}"}
        for n in range(count)
    ]


def watching_for_ready_days(stack: Stack) -> Watched:
    """The scheduler creating asset-triggered runs (its job schedule on) for the event-driven
    examples only, every other DAG paused: so these tests come last on each stack."""
    with rest_api(stack) as api:
        paused = {"dag_id_pattern": "~", "update_mask": "is_paused"}
        api.patch("/api/v2/dags", params=paused, json={"is_paused": True}).raise_for_status()
        for dag_id in EVENT_DAGS:
            api.patch(f"/api/v2/dags/{dag_id}", json={"is_paused": False}).raise_for_status()
    assert set(stack.dag_ids()) == set(EVENT_DAGS)
    stack.restart("scheduler", {"AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "True"})
    # days that ended a few days ago in the project's zone: inside the examples' window (seven
    # days) whatever the clock does during the test
    today = dt.datetime.now(ZoneInfo("Asia/Shanghai")).date()
    days = {name: today - dt.timedelta(days=n) for name, n in (("d1", 3), ("d2", 2), ("low", 4))}
    return stack, days


@pytest.fixture(scope="module")
def event_driven(local_stack: Stack) -> Watched:
    return watching_for_ready_days(local_stack)


class EventDrivenRuns:
    """Days turning ready on the emulator under one executor; each executor's subclass gives
    ``watched``, its stack as :func:`watching_for_ready_days` left it."""

    def test_each_ready_day_runs_the_event_driven_dag_once_and_a_day_below_the_threshold_never(
        self, watched: Watched
    ) -> None:
        """250 events on d1 (both watchers' thresholds, 100 and 200, are met), then 150 on d2
        (only the first's), and 50 on a third day throughout (neither's). Each announcement
        starts one run, which covers its day."""
        stack, days = watched
        d1, d2, low = days["d1"], days["d2"], days["low"]
        emulator = admin(stack)
        emulator.add_events(events_on(d1, 250) + events_on(low, 50))
        (export_d1,) = wait_until(
            lambda: finished_runs(stack, "analytics_event_driven", 1), 420, "the d1 run"
        )
        (busy_d1,) = wait_until(
            lambda: finished_runs(stack, "analytics_busy_day", 1), 420, "the busy d1 run"
        )
        emulator.add_events(events_on(d2, 150))
        export_d2 = wait_until(
            lambda: finished_runs(stack, "analytics_event_driven", 2), 420, "the d2 run"
        )[1]
        time.sleep(4 * READY_POLL_SECONDS)  # a few more polls: nothing else may start
        assert [kind for kind, _, _ in runs_of(stack, "analytics_event_driven")] == [
            "asset_triggered"
        ] * 2
        assert len(runs_of(stack, "analytics_busy_day")) == 1
        first = xcom(stack, "analytics_event_driven", export_d1, "export_cohort_users")
        second = xcom(stack, "analytics_event_driven", export_d2, "export_cohort_users")
        assert f"/dt={d1}/" in first["uri"] and f"/dt={d2}/" in second["uri"]
        assert parquet_rows(first["uri"]) > 0
        busy = xcom(stack, "analytics_busy_day", busy_d1, "busy_day")
        assert busy == {"day": d1.isoformat(), "count": 250, "threshold": 200}
        stored = dict(stack.query("SELECT key, value FROM asset_state_store"))
        assert json.loads(stored["analytics.data_ready.announced:$Anything:100"]) == [
            d1.isoformat(),
            d2.isoformat(),
        ]

    def test_the_partitioned_consumer_ran_once_for_each_announced_day(
        self, watched: Watched
    ) -> None:
        stack, days = watched
        announced = sorted(day.isoformat() for name, day in days.items() if name != "low")
        wait_until(lambda: finished_runs(stack, "analytics_partitioned_consumer", 2), 420, "2 runs")
        runs = runs_of(stack, "analytics_partitioned_consumer")
        assert sorted(key for _, _, key in runs if key) == announced, runs
        for (run_id,) in stack.query(
            "SELECT run_id FROM dag_run WHERE dag_id = 'analytics_partitioned_consumer'"
        ):
            read = xcom(stack, "analytics_partitioned_consumer", run_id, "read_partition")
            assert f"/dt={read['partition_key']}/" in read["uri"] and read["rows"] > 0


class TestEventDrivenUnderLocal(EventDrivenRuns):
    """The shared tests, then a triggerer restart and a rerun of a past day."""

    @pytest.fixture
    def watched(self, event_driven: Watched) -> Watched:
        return event_driven

    def test_a_restarted_triggerer_announces_no_day_again_and_two_watchers_share_one_poll(
        self, local_stack: Stack, event_driven: Watched
    ) -> None:
        local_stack.restart("triggerer")
        before = polls(local_stack)
        wait_until(lambda: polls(local_stack) >= before + 3, 300, "the new triggerer to poll")
        # both watchers run again, on one poll: over a while, one request per poke interval
        start, counted = time.monotonic(), polls(local_stack)
        time.sleep(6 * READY_POLL_SECONDS)
        seconds, made = time.monotonic() - start, polls(local_stack) - counted
        assert 1 <= made <= seconds / READY_POLL_SECONDS + 2, (made, seconds)
        watchers = local_stack.query(
            "SELECT count(*) FROM trigger WHERE classpath LIKE %s AND triggerer_id IS NOT NULL",
            "%AnalyticsDataReadyEventTrigger",
        )
        assert watchers == [(2,)]
        assert len(runs_of(local_stack, "analytics_event_driven")) == 2
        assert len(runs_of(local_stack, "analytics_busy_day")) == 1

    def test_rerunning_one_past_day_runs_the_consumer_once_for_that_day_only(
        self, local_stack: Stack, event_driven: Watched
    ) -> None:
        before = runs_of(local_stack, "analytics_partitioned_consumer")
        run_id = trigger(local_stack, "analytics_event_driven", MANUAL_DAY)
        wait_for_run(local_stack, "analytics_event_driven", run_id)
        wait_until(
            lambda: finished_runs(local_stack, "analytics_partitioned_consumer", len(before) + 1),
            420,
            "the consumer's run for the re-run day",
        )
        time.sleep(4 * READY_POLL_SECONDS)
        after = runs_of(local_stack, "analytics_partitioned_consumer")
        assert after[: len(before)] == before
        assert [key for _, _, key in after[len(before) :]] == [MANUAL_DAY]


# -- CeleryExecutor ------------------------------------------------------------------------

COHORT_SIZES = {"cohort_tiny": 7, "cohort_small": 1_000, "cohort_medium": 25_000}


@pytest.fixture(scope="module")
def mapped_run(celery_stack: Stack) -> str:
    """analytics_cohort_exports for one past day; each export held 3 s by the platform so that
    two run at once (the DAG allows two per run, each worker takes one task at a time)."""
    admin(celery_stack).fault("export_cohort_users", "stall", seconds=3, times=3)
    run_id = trigger(celery_stack, "analytics_cohort_exports", "2024-02-01")
    wait_for_run(celery_stack, "analytics_cohort_exports", run_id, timeout=360)
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
        cohort = summary["uri"].split("cohort_code=")[1].split("/")[0]
        assert parquet_rows(summary["uri"]) == COHORT_SIZES[cohort]


@pytest.fixture(scope="module")
def killed_export(celery_stack: Stack) -> dict:
    """stack_export_once with its stream stalled after 10 rows; the worker running it is killed
    (SIGKILL to everything it started) while the temporary object is open."""
    emulator = admin(celery_stack)
    emulator.fault("export_cohort_users", "stall_after_rows", rows=10, seconds=120)
    run_id = trigger(celery_stack, "stack_export_once", "2024-03-01")
    partition = celery_stack.output / "cohort_users" / "cohort_code=cohort_small" / "dt=2024-03-01"
    (temporary,) = wait_until(
        lambda: list(partition.glob(".*.inprogress")) if partition.exists() else [],
        120,
        "the export's temporary object",
    )
    (running,) = task_instances(celery_stack, "stack_export_once", run_id)
    killed = running["hostname"]
    celery_stack.kill(killed)
    try:
        wait_for_run(celery_stack, "stack_export_once", run_id, timeout=360)
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


@pytest.fixture(scope="module")
def sharded_run(celery_stack: Stack) -> dict:
    """analytics_cohort_shards under the CeleryExecutor: once the plan is made, four page calls
    stall for 8 seconds each, and the worker running a shard read is killed meanwhile."""
    emulator = admin(celery_stack)
    dag_id = "analytics_cohort_shards"
    run_id = trigger(celery_stack, dag_id, "2024-03-02")

    def planned() -> bool:
        return any(
            ti["task_id"] == "plan_shards" and ti["state"] == "success"
            for ti in task_instances(celery_stack, dag_id, run_id)
        )

    wait_until(planned, 240, "the shard plan")
    emulator.fault("get_cohort_users", "stall", seconds=8, times=4)

    def reading() -> list[dict]:
        return [
            ti
            for ti in task_instances(celery_stack, dag_id, run_id)
            if ti["task_id"] == "read_shard" and ti["state"] == "running" and ti["hostname"]
        ]

    victim = wait_until(reading, 120, "a shard being read")[0]
    killed = victim["hostname"]
    celery_stack.kill(killed)
    try:
        state = wait_for_run(celery_stack, dag_id, run_id, timeout=480)
    finally:
        emulator.clear_faults()
        celery_stack.start_worker(killed)
    reads = [
        ti for ti in task_instances(celery_stack, dag_id, run_id) if ti["task_id"] == "read_shard"
    ]
    summary = xcom(celery_stack, dag_id, run_id, "publish_cohort")
    print(f"\nshard {victim['map_index']} was being read on {killed} (killed)")
    return {"state": state, "victim": victim, "killed": killed, "reads": reads, "summary": summary}


def test_a_worker_killed_mid_shard_costs_that_shard_only(sharded_run: dict) -> None:
    assert sharded_run["state"] == "success"
    victim = sharded_run["victim"]
    reads = {ti["map_index"]: ti for ti in sharded_run["reads"]}
    assert len(reads) == 13
    again = reads[victim["map_index"]]
    assert again["state"] == "success" and again["try_number"] >= 2
    assert again["hostname"] != sharded_run["killed"] or again["try_number"] >= 3
    # the other shards ran once each (a shard the killed worker had finished is not redone)
    others = [ti for index, ti in reads.items() if index != victim["map_index"]]
    assert all(ti["state"] == "success" for ti in others)
    summary = sharded_run["summary"]
    assert (summary["rows"], summary["shards"], summary["mode"]) == (25_000, 13, "pages")
    assert parquet_rows(summary["uri"]) == 25_000


def test_the_iceberg_example_commits_to_the_stack_s_catalog(celery_stack: Stack) -> None:
    """The stack gives ``example_dags/analytics_iceberg.py`` its ``analytics_iceberg``
    connection (a SQL catalog in the stack's PostgreSQL, the warehouse beside the outputs), so
    the example runs as it is: its day of ``cohort_small`` is in the table, read back through
    the catalog, and the tables' maintenance ran after the writers."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import EqualTo

    day = "2024-02-03"
    run_id = trigger(celery_stack, "analytics_iceberg", day)
    wait_for_run(celery_stack, "analytics_iceberg", run_id, timeout=600)
    tasks = task_instances(celery_stack, "analytics_iceberg", run_id)
    states = {ti["task_id"]: ti["state"] for ti in tasks}
    logs = [
        path.read_text()[-3000:]
        for task, state in states.items()
        if state != "success"
        for path in (celery_stack.logs / "tasks").glob(
            f"dag_id=analytics_iceberg/*/task_id={task}/*"
        )
    ]
    assert states == dict.fromkeys(
        ("cohort_users", "checkout_funnel", "daily_events", "maintain_tables"), "success"
    ), logs
    extra = json.loads(celery_stack.iceberg_connection())["extra"]
    # the hook names the catalog after the connection id (pyiceberg keeps the name per table)
    catalog = SqlCatalog("analytics_iceberg", uri=extra["uri"], warehouse=extra["warehouse"])
    table = catalog.load_table("analytics.cohort_users")
    rows = table.scan(row_filter=EqualTo("dt", day)).to_arrow()
    assert rows.num_rows == COHORT_SIZES["cohort_small"]
    assert set(rows.column("cohort_code").to_pylist()) == {"cohort_small"}


def test_a_person_rejects_one_plan_change_and_approves_another_under_celery(
    celery_stack: Stack,
) -> None:
    """Two runs of analytics_tracking_plan at once, answered through the api-server's REST API
    as a person answers in the UI: the rejected one applies nothing (the emulator's plan is as
    it was), then the approved one applies the reviewed difference. Every task ran on a Celery
    worker, the approvals resumed there from the triggerer."""
    dag_id = "analytics_tracking_plan"
    plan = functools.partial(
        live_plan, celery_stack.emulator_url, CREDENTIALS["token"], CREDENTIALS["app_key"]
    )
    before = plan()
    rejected, approved = (
        trigger(celery_stack, dag_id, day) for day in ("2024-02-05", "2024-02-06")
    )
    with rest_api(celery_stack) as client:
        hitl_responder.answer(client, dag_id, {"approve": "Reject"}, run_id=rejected, timeout=300)
        wait_for_run(celery_stack, dag_id, rejected)
        assert plan() == before
        hitl_responder.answer(client, dag_id, {"approve": "Approve"}, run_id=approved, timeout=300)
        wait_for_run(celery_stack, dag_id, approved)
    tasks = {run: task_instances(celery_stack, dag_id, run) for run in (rejected, approved)}
    states = {run: {ti["task_id"]: ti["state"] for ti in tis} for run, tis in tasks.items()}
    assert states[rejected]["sync"] == "skipped" and states[approved]["sync"] == "success"
    assert {
        ti["hostname"] for tis in tasks.values() for ti in tis if ti["state"] == "success"
    } <= set(WORKERS)
    after = plan()
    assert "vip_level" not in before["users"]
    assert after["users"]["vip_level"]["name"] == "VIP level"
    assert after["events"]["checkout_started"]["plan"] == 1


# -- Event-driven runs under the CeleryExecutor (last: they pause every other DAG) -----------


@pytest.fixture(scope="module")
def celery_event_driven(celery_stack: Stack) -> Watched:
    return watching_for_ready_days(celery_stack)


class TestEventDrivenUnderCelery(EventDrivenRuns):
    """The shared tests, their tasks run by the Celery workers."""

    @pytest.fixture
    def watched(self, celery_event_driven: Watched) -> Watched:
        return celery_event_driven

    def test_every_event_driven_task_ran_on_a_celery_worker(self, watched: Watched) -> None:
        ran_on = watched[0].query(
            "SELECT DISTINCT hostname FROM task_instance WHERE dag_id = ANY(%s)", list(EVENT_DAGS)
        )
        assert ran_on and {host for (host,) in ran_on} <= set(WORKERS), ran_on
