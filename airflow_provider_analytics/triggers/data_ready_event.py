"""AnalyticsDataReadyEventTrigger: announce each day whose data has landed, for DAGs scheduled
on an ``Asset`` with an ``AssetWatcher``, with one event
(``{"source": "analytics.data_ready", "day": ..., "partition_key": ...}``). The days announced
are written to the asset's state store before the event is handed over, so a restarted
triggerer never announces a day twice; docs/event_driven.md tells the whole story.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from typing import TYPE_CHECKING, Annotated, Any, Final
from zoneinfo import ZoneInfo

from airflow.triggers.base import BaseEventTrigger, TriggerEvent
from pydantic import TypeAdapter, ValidationError

from airflow_provider_analytics.client.data_ready import DAYS_MAX, DataReadyCheck
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
DEFAULT_TIMEOUT: Final = 7 * 24 * 3600.0  # the sensor's default timeout
TIMEOUT_MAX: Final = (DAYS_MAX - 1) * 24 * 3600.0  # ten years: a window one check covers
_SETTINGS: Final = (
    *("analytics_conn_id", "event", "threshold", "poke_interval", "timeout", "timezone"),
    *("first_day", "last_day"),
)
ANNOUNCED: Final = TypeAdapter(list[Annotated[str, rules.check(rules.date)]] | None)
"""The declared shape of the days stored under a watcher's state key: ``yyyy-MM-dd`` dates."""


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
    last = now.astimezone(timezone).date() - dt.timedelta(days=1)
    # the oldest day watched is the one ``timeout`` ago falls in (it ends after that moment)
    first = (now - dt.timedelta(seconds=timeout)).astimezone(timezone).date()
    if first_day is not None:
        first = max(first, dt.date.fromisoformat(first_day))
    if last_day is not None:
        last = min(last, dt.date.fromisoformat(last_day))
    if first > last:
        return None
    return first.isoformat(), last.isoformat()


class AnalyticsDataReadyEventTrigger(BaseEventTrigger):
    """Fire one event for each complete day whose events have landed on the platform (the
    trigger of an ``AssetWatcher``).

    :param analytics_conn_id: id of the ``analytics`` connection.
    :param event: event id to count; ``$Anything`` (default) is any event.
    :param threshold: events a day needs to be ready.
    :param poke_interval: seconds between polls.
    :param timeout: seconds after its end that a day is watched (default seven days, at most
        ten years).
    :param timezone: IANA zone (or offset, ``+08:00``) of the days; default the connection's
        ``timezone`` extra, else UTC.
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
        positive = {"threshold": threshold, "poke_interval": poke_interval, "timeout": timeout}
        for field, value in positive.items():
            rules.positive(value, field)
        if timeout > TIMEOUT_MAX:
            rules.fail("timeout", f"must be at most {TIMEOUT_MAX:.0f} seconds (ten years)", timeout)
        if timezone is not None:
            rules.time_zone(timezone)
        # kept as yyyy-MM-dd text (a date object did not survive serialization nor the window)
        days = {"first_day": first_day, "last_day": last_day}
        first_day, last_day = (None if v is None else rules.date(v, k) for k, v in days.items())
        if first_day is not None and last_day is not None:
            rules.date_range(first_day, last_day, from_field="first_day", to_field="last_day")
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
        path = f"{type(self).__module__}.{type(self).__qualname__}"
        return path, {name: getattr(self, name) for name in _SETTINGS}

    def shared_stream_key(self) -> Hashable:
        """Everything that decides what is asked, and how often; not ``threshold``, which only
        decides how each watcher judges the shared answer."""
        return (EVENT_SOURCE, *(getattr(self, name) for name in _SETTINGS if name != "threshold"))

    @classmethod
    async def open_shared_stream(cls, kwargs: dict[str, Any]) -> AsyncIterator[Any]:
        """Poll once per ``poke_interval`` for the watched window; yield each answer as
        ``{"from_date", "to_date", "payload"}`` for every watcher to judge. Runs until the
        triggerer stops it, or raises on a failure waiting cannot cure."""
        # httpx and the client load here, in the triggerer, never when a DAG file is parsed
        from airflow_provider_analytics.client.async_api import AsyncAnalyticsClient
        from airflow_provider_analytics.hooks.analytics import (
            AnalyticsHook,
            client_config_from_connection,
        )

        connection = await AnalyticsHook.aget_connection(kwargs["analytics_conn_id"])
        config = client_config_from_connection(connection)
        zone = rules.time_zone(kwargs["timezone"] or config.timezone or "UTC")  # or the conn's
        # a fixed offset (+08:00) is no zone name: ZoneInfo refused it with a bare KeyError
        timezone = (
            dt.datetime.strptime(zone, "%z").tzinfo or dt.UTC if zone[0] in "+-" else ZoneInfo(zone)
        )
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
            self._memory = set(announced)
            for accessor in self._accessors():
                await accessor.aset(self.state_key, sorted(announced))
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
        """The same poll and judging without the triggerer's sharing."""
        stream = type(self).open_shared_stream(self.serialize()[1])
        async for event in self.filter_shared_stream(stream):
            yield event

    @property
    def state_key(self) -> str:
        return f"{STATE_KEY}:{self.event}:{self.threshold}"

    def _accessors(self) -> list[Any]:
        """The state store of every asset this trigger watches: identical watchers on several
        assets are one trigger, and Airflow 3.3 offers no public way to list that mapping's
        per-asset accessors (the mapping itself stands in when that changes)."""
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
            try:
                days.update(ANNOUNCED.validate_python(stored) or ())
            except ValidationError as error:  # not what this trigger writes: refused by name
                raise rules.refusal(error, f"asset state {self.state_key}") from None
        return days
