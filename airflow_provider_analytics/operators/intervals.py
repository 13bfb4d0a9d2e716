"""The day rule: which calendar day or days a DAG run covers, for every operator and the sensor.

One rule, whichever way the run started, so that within a run the cohort export, the reports
and the data-ready sensor always agree:

- The first day is the day of the run's **logical date**, in the DAG's timezone.
- The run covers more than that day only when its data interval *starts at the logical date*
  and spans further (a data-interval timetable: ``@weekly`` with data intervals covers the
  week). Intervals that start elsewhere are ignored: Airflow 3 gives a manual run the interval
  of the moment it was triggered, not of its logical date.
- A run whose partition key is a day (``yyyy-MM-dd``, as the provider's own partitioned asset
  events carry) covers that day; so does a consumer on a ``PartitionedAssetTimetable``.
- A run started by data-ready events (an ``AssetWatcher`` with
  ``AnalyticsDataReadyEventTrigger``) covers the days those events announced: one day each,
  normally, as the trigger announces one day per poll.
- A run without a logical date (``airflow dags trigger`` without ``--logical-date``, the UI's
  Trigger button) covers the last day that had ended when it was triggered.

The README's table spells this out per run type and timetable.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Mapping

UTC = dt.UTC

DATA_READY_SOURCE: Final = "analytics.data_ready"
"""The ``source`` in the payload of every event ``AnalyticsDataReadyEventTrigger`` fires."""

_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class CoveredDays:
    """The inclusive range of days one run covers, and the timezone its days are counted in.

    :param first: the first day (the partition every output of the run is written to).
    :param last: the last day (equal to ``first`` for a one-day run).
    :param timezone: the DAG's timezone.
    """

    first: dt.date
    last: dt.date
    timezone: dt.tzinfo = UTC

    @property
    def dates(self) -> tuple[str, str]:
        """First and last day as the platform's ``yyyy-MM-dd`` strings."""
        return self.first.isoformat(), self.last.isoformat()

    @property
    def partition(self) -> str:
        """The ``dt=`` partition value of every output of the run: its first day."""
        return self.first.isoformat()

    def before(self, days: int) -> list[str]:
        """The ``days`` days before the first day, oldest first, as ``yyyy-MM-dd`` strings
        (the days a look-back window re-pulls).

        :param days: how many (0 for none).
        """
        return [(self.first - dt.timedelta(days=n)).isoformat() for n in range(days, 0, -1)]

    @property
    def end(self) -> dt.datetime:
        """The moment the last covered day is over (midnight after it, in the DAG's timezone)."""
        midnight = dt.datetime.combine(self.last + dt.timedelta(days=1), dt.time())
        return _localize(midnight, self.timezone)


def covered_days(context: Mapping[str, Any]) -> CoveredDays:
    """The days the run of ``context`` covers, by the module's day rule.

    :param context: the task's template context (``logical_date``, ``data_interval_start``,
        ``data_interval_end``, ``dag_run`` and ``dag`` are read; a plain mapping with ``ds``
        stands for the logical date).
    """
    timezone = _dag_timezone(context)
    partition_day = _day(getattr(context.get("dag_run"), "partition_key", None))
    if partition_day is not None:
        return CoveredDays(partition_day, partition_day, timezone)
    announced = announced_days(context)
    if announced:
        first, last = dt.date.fromisoformat(announced[0]), dt.date.fromisoformat(announced[-1])
        return CoveredDays(first, last, timezone)
    logical_day = _logical_day(context, timezone)
    if logical_day is None:
        run_after = getattr(context.get("dag_run"), "run_after", None) or dt.datetime.now(UTC)
        last_complete = _local_date(run_after, timezone) - dt.timedelta(days=1)
        return CoveredDays(last_complete, last_complete, timezone)
    last = logical_day
    if _own_interval(context, logical_day, timezone):
        end = context["data_interval_end"] - dt.timedelta(microseconds=1)
        last = max(logical_day, _local_date(end, timezone))
    return CoveredDays(logical_day, last, timezone)


def announced_days(context: Mapping[str, Any]) -> list[str]:
    """The days the data-ready events that started this run announced, oldest first (none
    for a run that no such event started).

    :param context: the task's template context (``triggering_asset_events`` is read).
    """
    days: set[str] = set()
    for events in (context.get("triggering_asset_events") or {}).values():
        for event in events:
            payload = (getattr(event, "extra", None) or {}).get("payload")
            if isinstance(payload, dict) and payload.get("source") == DATA_READY_SOURCE:
                day = _day(payload.get("day"))
                if day is not None:
                    days.add(day.isoformat())
    return sorted(days)


def _day(value: object) -> dt.date | None:
    """``value`` as a date when it is a ``yyyy-MM-dd`` day, else ``None``."""
    if not isinstance(value, str) or not _DAY.fullmatch(value):
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        return None


def covered_days_end(dag_run: Any, dag: Any = None) -> str:
    """ISO moment at which the run's covered days are over, for templates.

    Registered as a user-defined macro, it lets a ``DateTimeSensor`` wait for the day to end:
    ``target_time="{{ covered_days_end(dag_run, dag) }}"``.

    :param dag_run: the template's ``dag_run``.
    :param dag: the template's ``dag`` (for its timezone).
    """
    context = {
        "dag_run": dag_run,
        "dag": dag,
        "logical_date": getattr(dag_run, "logical_date", None),
        "data_interval_start": getattr(dag_run, "data_interval_start", None),
        "data_interval_end": getattr(dag_run, "data_interval_end", None),
    }
    return covered_days(context).end.isoformat()


def _own_interval(context: Mapping[str, Any], logical_day: dt.date, timezone: dt.tzinfo) -> bool:
    """Whether the run has a non-empty data interval that starts at its logical date."""
    start = context.get("data_interval_start")
    end = context.get("data_interval_end")
    if start is None or end is None or end <= start:
        return False
    logical = context.get("logical_date")
    if logical is not None:
        return bool(start == logical)
    return _local_date(start, timezone) == logical_day  # a mapping with ``ds`` only


def _logical_day(context: Mapping[str, Any], timezone: dt.tzinfo) -> dt.date | None:
    logical = context.get("logical_date")
    if logical is not None:
        return _local_date(logical, timezone)
    ds = context.get("ds")
    return dt.date.fromisoformat(ds) if ds else None


def _dag_timezone(context: Mapping[str, Any]) -> dt.tzinfo:
    timezone = getattr(context.get("dag"), "timezone", None)
    return timezone if isinstance(timezone, dt.tzinfo) else UTC


def _local_date(moment: dt.datetime, timezone: dt.tzinfo) -> dt.date:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(timezone).date()


def _localize(naive: dt.datetime, timezone: dt.tzinfo) -> dt.datetime:
    localize = getattr(timezone, "localize", None)  # pytz-style zones need it
    if callable(localize):
        return localize(naive)
    return naive.replace(tzinfo=timezone)
