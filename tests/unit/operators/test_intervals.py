"""The day rule, per run type: the logical dates and data intervals come from Airflow's own
timetables (the way the scheduler, `airflow dags trigger`, `backfill create` and `dags test`
build them), the expected days from the README's table."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pendulum
import pytest
from airflow.timetables.interval import CronDataIntervalTimetable, DeltaDataIntervalTimetable
from airflow.timetables.trigger import CronTriggerTimetable

from airflow_provider_analytics.operators.intervals import covered_days, covered_days_end

UTC = pendulum.UTC
TRIGGERED_AT = pendulum.datetime(2026, 11, 22, 17, 30, tz=UTC)
DAY = pendulum.datetime(2024, 1, 15, tz=UTC)

DAILY_CRON = CronTriggerTimetable("0 0 * * *", timezone=UTC)
DAILY_INTERVALS = CronDataIntervalTimetable("0 0 * * *", timezone=UTC)
WEEKLY_INTERVALS = CronDataIntervalTimetable("0 0 * * 1", timezone=UTC)
HOURLY_CRON = CronTriggerTimetable("0 * * * *", timezone=UTC)
HOURLY_INTERVALS = DeltaDataIntervalTimetable(dt.timedelta(hours=1))


def context(logical_date, interval, run_after, timezone=UTC) -> dict:
    """A task context as the task runner builds it (no date keys without a logical date)."""
    run = SimpleNamespace(
        logical_date=logical_date,
        data_interval_start=interval.start if interval else None,
        data_interval_end=interval.end if interval else None,
        run_after=run_after,
    )
    values = {"dag_run": run, "dag": SimpleNamespace(timezone=timezone)}
    if logical_date is not None:
        values.update(
            logical_date=logical_date,
            ds=logical_date.strftime("%Y-%m-%d"),
            data_interval_start=run.data_interval_start,
            data_interval_end=run.data_interval_end,
        )
    return values


def scheduled(timetable, after: pendulum.DateTime) -> dict:
    """The scheduler's next run after ``after`` (the same info `backfill create` uses)."""
    info = timetable.next_dagrun_info(
        last_automated_data_interval=None,
        restriction=SimpleNamespace(earliest=after, latest=None, catchup=True),
    )
    return context(info.logical_date, info.data_interval, info.run_after)


def manual(timetable, logical_date) -> dict:
    """`airflow dags trigger` at TRIGGERED_AT: Airflow infers the interval from that moment."""
    interval = timetable.infer_manual_data_interval(run_after=TRIGGERED_AT)
    if logical_date is None:
        interval = None  # the trigger API leaves it empty without a logical date
    return context(logical_date, interval, TRIGGERED_AT)


def dags_test(timetable, logical_date) -> dict:
    """`airflow dags test <dag> <date>`: the interval is inferred from the logical date."""
    interval = timetable.infer_manual_data_interval(run_after=logical_date)
    return context(logical_date, interval, logical_date)


@pytest.mark.parametrize(
    ("run", "first", "last"),
    [
        (scheduled(DAILY_CRON, DAY), "2024-01-15", "2024-01-15"),
        (scheduled(DAILY_INTERVALS, DAY), "2024-01-15", "2024-01-15"),
        (scheduled(WEEKLY_INTERVALS, DAY), "2024-01-15", "2024-01-21"),
        (scheduled(HOURLY_CRON, DAY.add(hours=13)), "2024-01-15", "2024-01-15"),
        (scheduled(HOURLY_INTERVALS, DAY.add(hours=23)), "2024-01-15", "2024-01-15"),
        (manual(DAILY_CRON, DAY), "2024-01-15", "2024-01-15"),
        (manual(DAILY_INTERVALS, DAY), "2024-01-15", "2024-01-15"),
        (manual(WEEKLY_INTERVALS, DAY), "2024-01-15", "2024-01-15"),
        (manual(DAILY_CRON, None), "2026-11-21", "2026-11-21"),
        (manual(DAILY_INTERVALS, None), "2026-11-21", "2026-11-21"),
        (dags_test(DAILY_CRON, DAY), "2024-01-15", "2024-01-15"),
        (dags_test(DAILY_INTERVALS, DAY), "2024-01-15", "2024-01-15"),
    ],
    ids=[
        "scheduled-cron-daily",
        "scheduled-intervals-daily",
        "scheduled-intervals-weekly",
        "scheduled-cron-hourly",
        "scheduled-intervals-hourly-last-hour",
        "manual-cron-logical-date",
        "manual-intervals-logical-date",
        "manual-intervals-weekly-logical-date",
        "manual-cron-no-logical-date",
        "manual-intervals-no-logical-date",
        "dags-test-cron",
        "dags-test-intervals",
    ],
)
def test_each_run_type_covers_the_documented_days(run: dict, first: str, last: str) -> None:
    days = covered_days(run)
    assert days.dates == (first, last)
    assert days.partition == first


def test_days_are_counted_in_the_dags_timezone() -> None:
    berlin = pendulum.timezone("Europe/Berlin")
    timetable = CronTriggerTimetable("0 0 * * *", timezone=berlin)
    run = scheduled(timetable, pendulum.datetime(2024, 1, 15, tz=berlin))
    assert run["logical_date"].in_timezone(UTC).day == 14  # 23:00 UTC the evening before
    assert covered_days({**run, "dag": SimpleNamespace(timezone=berlin)}).dates == (
        "2024-01-15",
        "2024-01-15",
    )


def test_the_day_ends_at_the_following_midnight_whatever_the_trigger_moment() -> None:
    run = manual(DAILY_CRON, DAY)
    assert run["data_interval_end"] == TRIGGERED_AT  # what a TimeDeltaSensor would start from
    assert covered_days_end(run["dag_run"], run["dag"]) == "2024-01-16T00:00:00+00:00"
    weekly = scheduled(WEEKLY_INTERVALS, DAY)
    assert covered_days_end(weekly["dag_run"], weekly["dag"]) == "2024-01-22T00:00:00+00:00"
