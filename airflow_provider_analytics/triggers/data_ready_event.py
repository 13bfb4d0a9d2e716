"""AnalyticsDataReadyEventTrigger: announce each day whose data has landed, for DAGs scheduled
on an ``Asset`` with an ``AssetWatcher`` (event-driven scheduling, no cron and no sensor).

The trigger asks and judges exactly as the data-ready sensor does (:class:`DataReadyCheck`,
``events`` source: the event analysis of TOTAL_COUNT by DAY, decoded through its declared
answer), but over a window of complete days at once, and it announces each day of the window
whose count reaches ``threshold`` with one event: ``{"source": "analytics.data_ready", "day":
"2024-01-14", "partition_key": "2024-01-14", ...}``. A DAG scheduled on the watched asset reads
the day from the triggering event (the provider's operators do it themselves, see
:func:`~airflow_provider_analytics.operators.intervals.covered_days`).

**One poll per project, event and window.** Watchers that ask the same connection about the
same event over the same window (same ``timezone``, ``timeout``, ``first_day``, ``last_day``
and ``poke_interval``) return the same :meth:`shared_stream_key`; the triggerer then runs one
poll for all of them and hands each poll's answer to every watcher, which judges it with its
own ``threshold``.

**Each day once.** The days a watcher has announced are kept in its asset's state store
(Airflow 3.3's ``asset_state_store``, key ``analytics.data_ready.announced:<event>:<threshold>``),
written *before* the event is handed to the triggerer. A restarted triggerer reads them back and
never announces a day twice. The one window that is not covered is a triggerer that dies within
the moment between that write and the triggerer's next hand-over of events to the metadata
database (about a second): that day is then not announced, and is reported by no error; run the
day by hand (``airflow dags trigger <dag> --logical-date <day>``) or delete its entry from the
state store to have it announced again. Airflow gives no way to store an asset event and asset
state in one transaction, so a trigger can choose "never twice" or "never missed" for that
moment; a pipeline that re-exports a day idempotently is better served by the first.

**The deadline rule.** As the sensor gives up at its ``timeout``, each day is watched until
``timeout`` seconds after it ended (in the project's timezone); a day still below the threshold
then leaves the window and is not announced. Each poll has the connection's retries and
deadline; failures that waiting can cure (5xx, 429, timeouts, answers that do not fit their
declaration) are logged and polled through; any other (authentication, a refused request)
fails the watcher with the reason, secrets redacted, in the triggerer's log.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from typing import TYPE_CHECKING, Any, Final
from zoneinfo import ZoneInfo

from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from airflow_provider_analytics.client.data_ready import DataReadyCheck
from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import AnalyticsError, is_transient
from airflow_provider_analytics.core.redaction import Redactor
from airflow_provider_analytics.operators.intervals import DATA_READY_SOURCE
from airflow_provider_analytics.provider_info import DEFAULT_CONN_ID

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Hashable

log = logging.getLogger(__name__)

EVENT_SOURCE: Final = DATA_READY_SOURCE
"""The ``source`` of every event this trigger fires (how a DAG run recognises its day)."""

STATE_KEY: Final = "analytics.data_ready.announced"
"""Prefix of the asset state store key holding the days a watcher has announced."""

DEFAULT_TIMEOUT: Final = 7 * 24 * 3600.0
"""Seconds after its end that a day is watched: the sensor's default timeout (seven days)."""


def watched_window(
    now: dt.datetime,
    timezone: dt.tzinfo,
    timeout: float,
    first_day: str | None = None,
    last_day: str | None = None,
) -> tuple[str, str] | None:
    """The complete days still watched at ``now``, as ``(first, last)``; ``None`` when none is.

    A day is watched from its end (midnight after it, in ``timezone``) until ``timeout``
    seconds later, and only within ``first_day``..``last_day`` when they are given.
    """
    today = now.astimezone(timezone).date()
    last = today - dt.timedelta(days=1)
    oldest_end = now - dt.timedelta(seconds=timeout)
    # the oldest day watched is the one oldest_end falls in: it ends after oldest_end, and
    # the day before it ended at or before oldest_end
    first = oldest_end.astimezone(timezone).date()
    if first_day is not None:
        first = max(first, dt.date.fromisoformat(first_day))
    if last_day is not None:
        last = min(last, dt.date.fromisoformat(last_day))
    if first > last:
        return None
    return first.isoformat(), last.isoformat()


class AnalyticsDataReadyEventTrigger(BaseEventTrigger):
    """Fire one event for each complete day whose events have landed on the platform.

    Use it as the trigger of an ``AssetWatcher``; see the module's documentation for what is
    shared, how each day is announced once, and when a day stops being watched.

    :param analytics_conn_id: id of the ``analytics`` connection.
    :param event: event id to count; ``$Anything`` (default) is any event.
    :param threshold: events a day needs to be ready.
    :param poke_interval: seconds between polls.
    :param timeout: seconds after its end that a day is watched (default seven days).
    :param timezone: IANA zone the days are counted in; default the connection's ``timezone``
        extra (the project's), else UTC.
    :param first_day: never announce a day before this one (``yyyy-MM-dd``).
    :param last_day: never announce a day after this one (``yyyy-MM-dd``).
    """

    def __init__(
        self,
        *,
        analytics_conn_id: str = DEFAULT_CONN_ID,
        event: str = "$Anything",
        threshold: float = 1,
        poke_interval: float = 300.0,
        timeout: float = DEFAULT_TIMEOUT,
        timezone: str | None = None,
        first_day: str | None = None,
        last_day: str | None = None,
    ) -> None:
        super().__init__()
        rules.id_ref(event, "event")
        if rules.number(threshold, "threshold") <= 0:
            rules.fail("threshold", "must be greater than 0", threshold)
        for value, field in ((poke_interval, "poke_interval"), (timeout, "timeout")):
            if rules.number(value, field) <= 0:
                rules.fail(field, "must be greater than 0", value)
        if timezone is not None:
            rules.time_zone(timezone)
        if first_day is not None and last_day is not None:
            rules.date_range(first_day, last_day, from_field="first_day", to_field="last_day")
        else:
            for day, field in ((first_day, "first_day"), (last_day, "last_day")):
                if day is not None:
                    rules.date(day, field)
        self.analytics_conn_id = analytics_conn_id
        self.event = event
        self.threshold = threshold
        self.poke_interval = poke_interval
        self.timeout = timeout
        self.timezone = timezone
        self.first_day = first_day
        self.last_day = last_day
        self._memory: set[str] = set()

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "analytics_conn_id": self.analytics_conn_id,
                "event": self.event,
                "threshold": self.threshold,
                "poke_interval": self.poke_interval,
                "timeout": self.timeout,
                "timezone": self.timezone,
                "first_day": self.first_day,
                "last_day": self.last_day,
            },
        )

    def shared_stream_key(self) -> Hashable:
        """Everything that decides what is asked, and how often; not ``threshold``, which only
        decides how each watcher judges the shared answer."""
        return (
            EVENT_SOURCE,
            self.analytics_conn_id,
            self.event,
            self.timezone,
            self.timeout,
            self.first_day,
            self.last_day,
            self.poke_interval,
        )

    @classmethod
    async def open_shared_stream(cls, kwargs: dict[str, Any]) -> AsyncIterator[Any]:
        """Poll the platform once per ``poke_interval`` for the watched window; yield each
        answer as ``{"from_date", "to_date", "payload"}`` (the decoded JSON, judged later by
        every watcher). Runs until the triggerer stops it, or raises on a failure waiting
        cannot cure."""
        # Loads httpx and the client: only here, in the triggerer, never when a DAG file that
        # declares a watcher is parsed.
        from airflow_provider_analytics.client.async_api import AsyncAnalyticsClient
        from airflow_provider_analytics.hooks.analytics import (
            AnalyticsHook,
            client_config_from_connection,
        )

        connection = await AnalyticsHook.aget_connection(kwargs["analytics_conn_id"])
        config = client_config_from_connection(connection)
        zone = kwargs["timezone"] or (connection.extra_dejson or {}).get("timezone") or "UTC"
        timezone = ZoneInfo(rules.time_zone(zone))
        shown = Redactor(config.secrets()).excerpt
        async with AsyncAnalyticsClient(config) as client:
            while True:
                now = dt.datetime.now(dt.UTC)
                window = watched_window(
                    now, timezone, kwargs["timeout"], kwargs["first_day"], kwargs["last_day"]
                )
                if window is not None:
                    check = DataReadyCheck(window[0], window[1], event=kwargs["event"])
                    try:
                        payload = await client.request_json(check.call())
                    except Exception as error:
                        if not is_transient(error):  # waiting cannot cure it: fail every watcher
                            message = f"data-ready poll cannot succeed: {shown(error)}"
                            raise AnalyticsError(message) from None
                        log.warning("data-ready poll failed transiently: %s", shown(error))
                    else:
                        yield {"from_date": window[0], "to_date": window[1], "payload": payload}
                await asyncio.sleep(kwargs["poke_interval"])

    async def filter_shared_stream(
        self, shared_stream: AsyncIterator[Any]
    ) -> AsyncIterator[TriggerEvent]:
        """Judge each answer with this watcher's threshold; announce the oldest ready day not
        announced yet (one per poll, so that each day gets a DAG run of its own)."""
        announced = await self._announced()
        async for answer in shared_stream:
            check = DataReadyCheck(
                answer["from_date"], answer["to_date"], event=self.event, threshold=self.threshold
            )
            try:
                readiness = check.evaluate(answer["payload"])
            except Exception as error:
                if not is_transient(error):
                    raise
                log.warning("data-ready answer refused, polling on: %s", error)  # wait for the next
                continue
            counts = readiness.detail["counts"]
            missing = set(readiness.detail["missing"])
            ready = [day for day in check.days() if day not in missing and day not in announced]
            if not ready:
                continue
            day = ready[0]
            # days that left the window can never be announced again: forget them
            announced = {seen for seen in announced if seen >= answer["from_date"]} | {day}
            await self._remember(announced)
            log.info("data for %s is ready (%s events of %s)", day, counts[day], self.event)
            yield TriggerEvent(
                {
                    "source": EVENT_SOURCE,
                    "day": day,
                    "partition_key": day,
                    "event": self.event,
                    "count": counts[day],
                    "threshold": self.threshold,
                    "announced_at": time.time(),
                }
            )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """The same poll and judging without the triggerer's sharing (tests, a lone watcher
        where the triggerer does not share streams)."""
        stream = type(self).open_shared_stream(self.serialize()[1])
        async for event in self.filter_shared_stream(stream):
            yield event

    @property
    def state_key(self) -> str:
        return f"{STATE_KEY}:{self.event}:{self.threshold}"

    def _accessors(self) -> list[Any]:
        """The state store of every asset this trigger watches. Identical watchers on several
        assets are one trigger in Airflow, and Airflow 3.3 offers no public way to list the
        assets of that trigger's accessor mapping, so its per-asset accessors are read from it
        (the mapping itself stands in when that changes)."""
        store = self.asset_state_store
        if store is None:
            return []
        found = [*getattr(store, "_by_name", {}).values(), *getattr(store, "_by_uri", {}).values()]
        return found or [store]

    async def _announced(self) -> set[str]:
        accessors = self._accessors()
        if not accessors:
            log.warning(
                "no asset state store (not run by the triggerer for an asset watcher): the days "
                "announced are kept in memory only"
            )
            return set(self._memory)
        days: set[str] = set()
        for accessor in accessors:
            stored = await accessor.aget(self.state_key, default=[])
            days.update(day for day in stored or [] if isinstance(day, str))
        return days

    async def _remember(self, days: set[str]) -> None:
        self._memory = set(days)
        for accessor in self._accessors():
            await accessor.aset(self.state_key, sorted(days))
