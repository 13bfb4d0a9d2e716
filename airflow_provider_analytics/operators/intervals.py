"""The day rule: which calendar day or days a DAG run covers, for every operator and the sensor,
so that within a run the cohort export, the reports and the data-ready sensor always agree.
``docs/day_rule.md`` spells it out per run type and timetable; :func:`covered_days` is its
one home.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import AnalyticsValidationError

if TYPE_CHECKING:
    from collections.abc import Mapping

DATA_READY_SOURCE: Final = "analytics.data_ready"
"""The ``source`` in the payload of every event ``AnalyticsDataReadyEventTrigger`` fires."""


@dataclass(frozen=True)
class CoveredDays:
    """The inclusive range of days one run covers (``first`` is the partition every output of
    the run is written to), and the DAG's timezone its days are counted in."""

    first: dt.date
    last: dt.date
    timezone: dt.tzinfo = dt.UTC

    @property
    def dates(self) -> tuple[str, str]:
        """First and last day as the platform's ``yyyy-MM-dd`` strings."""
        return self.first.isoformat(), self.last.isoformat()

    @property
    def partition(self) -> str:
        """The ``dt=`` partition value of every output of the run: its first day."""
        return self.first.isoformat()

    def before(self, days: int) -> list[str]:
        """The ``days`` days before the first day, oldest first (the days a look-back window
        re-pulls)."""
        return [(self.first - dt.timedelta(days=n)).isoformat() for n in range(days, 0, -1)]

    @property
    def end(self) -> dt.datetime:
        """The moment the last covered day is over (midnight after it, in the DAG's timezone)."""
        return dt.datetime.combine(self.last + dt.timedelta(days=1), dt.time(), self.timezone)


def covered_days(context: Mapping[str, Any]) -> CoveredDays:
    """The days the run of ``context`` (a task's template context; a plain mapping with
    ``ds`` stands for the logical date) covers, by the day rule (``docs/day_rule.md``)."""
    dag_run = context.get("dag_run")
    timezone = getattr(context.get("dag"), "timezone", None)
    if not isinstance(timezone, dt.tzinfo):
        timezone = dt.UTC
    partition_day = _day(getattr(dag_run, "partition_key", None))
    if partition_day is not None:
        return CoveredDays(partition_day, partition_day, timezone)
    if announced := [dt.date.fromisoformat(day) for day in announced_days(context)]:
        if (announced[-1] - announced[0]).days >= len(announced):  # sorted, each day once
            rules.fail(
                "triggering_asset_events",
                "must announce adjacent days (a run covers one range of days; the days between "
                "were never announced ready): trigger a run for each day on its own",
                [day.isoformat() for day in announced],
            )
        return CoveredDays(announced[0], announced[-1], timezone)
    logical, ds = context.get("logical_date"), context.get("ds") or ""
    if logical is None and not ds:
        run_after = getattr(dag_run, "run_after", None) or dt.datetime.now(dt.UTC)
        last_complete = _local_date(run_after, timezone) - dt.timedelta(days=1)
        return CoveredDays(last_complete, last_complete, timezone)
    first = (  # a ``ds`` handed over by hand is checked as a day (it raised a bare ValueError)
        _local_date(logical, timezone)
        if logical is not None
        else dt.date.fromisoformat(rules.date(ds, "ds"))
    )
    start, end = context.get("data_interval_start"), context.get("data_interval_end")
    # the interval counts only when it starts at the logical date (given ``ds``: on its day)
    if start is None or end is None or end <= start:
        return CoveredDays(first, first, timezone)
    own = start == logical if logical is not None else _local_date(start, timezone) == first
    last = max(first, _local_date(end - dt.timedelta(microseconds=1), timezone)) if own else first
    return CoveredDays(first, last, timezone)


def announced_days(context: Mapping[str, Any]) -> list[str]:
    """The days the data-ready events that started this run announced, oldest first (none
    for a run that no such event started).

    An event's payload of the data-ready ``source`` declares its ``day`` as ``yyyy-MM-dd``:
    one that is no such day (missing, a number, ``2024-02-30``) is refused by name, never
    skipped (the run would cover another day)."""
    days: set[str] = set()
    for events in (context.get("triggering_asset_events") or {}).values():
        for event in events:
            extra = getattr(event, "extra", None)
            payload = extra.get("payload") if isinstance(extra, dict) else None
            if isinstance(payload, dict) and payload.get("source") == DATA_READY_SOURCE:
                days.add(rules.date(payload.get("day"), f"{DATA_READY_SOURCE} payload.day"))
    return sorted(days)


def _day(value: object) -> dt.date | None:
    try:
        return dt.date.fromisoformat(rules.date(value, "day")) if isinstance(value, str) else None
    except AnalyticsValidationError:
        return None


def covered_days_end(dag_run: Any, dag: Any = None) -> str:
    """ISO moment at which the run's covered days are over, for templates: registered as a
    user-defined macro, it lets a ``DateTimeSensor`` wait for the day to end
    (``target_time="{{ covered_days_end(dag_run, dag) }}"``)."""
    moments = ("logical_date", "data_interval_start", "data_interval_end")
    context = {name: getattr(dag_run, name, None) for name in moments}
    return covered_days({**context, "dag_run": dag_run, "dag": dag}).end.isoformat()


def _local_date(moment: dt.datetime, timezone: dt.tzinfo) -> dt.date:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(timezone).date()
