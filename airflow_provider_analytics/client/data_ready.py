"""Has the platform got the data for a date range? The check behind the data-ready sensor
(docs/sensors/data_ready.md), its request as data (:meth:`DataReadyCheck.call`) so the sensor
(synchronous client) and its trigger (asynchronous) ask and judge alike."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

from airflow_provider_analytics.client.operations import (
    ANALYZE_EVENTS,
    LIST_EVENT_PROPERTIES,
    LIST_EVENTS,
    ApiCall,
)
from airflow_provider_analytics.core import rules

DAYS_MAX: Final = 3661
"""The most days one check covers: ten years, the longest window the data-ready event trigger
watches (its longest ``timeout``, and the day that ended last)."""


@dataclass(frozen=True)
class Readiness:
    """The outcome of one check: ready or not, and what was seen (JSON-able)."""

    ready: bool
    detail: dict[str, Any]


@dataclass(frozen=True)
class DataReadyCheck:
    """What "the data has landed" means for one run (``threshold``: events per day needed
    with ``events``; ``event_property``: with ``plan``, a property of ``event`` that must have
    data)."""

    from_date: str
    to_date: str
    event: str = "$Anything"
    threshold: float = 1
    source: Literal["events", "plan"] = "events"
    event_property: str | None = None

    def __post_init__(self) -> None:
        days = rules.date_range(  # each day is counted, logged and kept in the XCom
            self.from_date,
            self.to_date,
            from_field="from_date",
            to_field="to_date",
            max_days=DAYS_MAX,
        )
        for name, day in zip(("from_date", "to_date"), days, strict=True):  # a date as its text
            object.__setattr__(self, name, day)
        rules.id_ref(self.event, "event")
        rules.one_of(self.source, "source", ("events", "plan"))
        if self.event_property is not None:
            rules.id_ref(self.event_property, "event_property")
            if self.source != "plan":
                rules.fail("event_property", "is only used with source='plan'")
        rules.positive(self.threshold, "threshold")
        if self.source == "plan" and self.event == "$Anything":
            rules.fail("event", "must name a real event when source='plan'", self.event)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def days(self) -> list[str]:
        first, last = dt.date.fromisoformat(self.from_date), dt.date.fromisoformat(self.to_date)
        return [(first + dt.timedelta(days=n)).isoformat() for n in range((last - first).days + 1)]

    def call(self) -> ApiCall:
        from airflow_provider_analytics.client.analysis_requests import EventRequest, Measure

        if self.source == "events":
            request = EventRequest(
                measures=[Measure(f"event.{self.event}", "TOTAL_COUNT")],
                from_date=self.from_date,
                to_date=self.to_date,
                unit="DAY",
            )
            return ApiCall(ANALYZE_EVENTS, body=request.sent(), asked=request.asked())
        if self.event_property is not None:
            return ApiCall(LIST_EVENT_PROPERTIES, {"eventId": self.event})
        return ApiCall(LIST_EVENTS)

    def evaluate(self, payload: Any) -> Readiness:
        """Judge the call's JSON answer through its declared answer: ready when every day has
        one count at or above ``threshold`` (``events``), or the plan shows ``dataStatus`` 1.
        An answer that does not fit raises :class:`AnswerShapeError` (the sensor waits on)."""
        from airflow_provider_analytics.client.answers import AnswerShapeError, decode

        call = self.call()
        answer = decode(call.operation.name, payload, asked=call.asked)
        if self.source == "plan":
            wanted = self.event_property if self.event_property is not None else self.event
            found = next((item for item in answer if item.id == wanted), None)
            status = None if found is None else found.dataStatus
            return Readiness(
                status == 1,
                {
                    "event": self.event,
                    "event_property": self.event_property,
                    "found": found is not None,
                    "dataStatus": status,
                },
            )
        if len(answer.rows) > 1:
            raise AnswerShapeError(
                f"analyze_events: rows holds {len(answer.rows)} rows, but the data-ready check "
                "asked for no split (at most one row)",
                operation="analyze_events",
            )
        counts: dict[str, int | None] = dict.fromkeys(self.days())
        values = answer.rows[0].values[0] if answer.rows else [None] * len(answer.series)
        listed: dict[str, int] = {}
        for position, (start, value) in enumerate(zip(answer.days, values, strict=True)):
            day = start.date().isoformat()
            if day in listed:
                raise AnswerShapeError(
                    f"analyze_events: series[{position}] is day {day} again (series"
                    f"[{listed[day]}]); each day must be counted once",
                    operation="analyze_events",
                )
            listed[day] = position
            counts[day] = None if value is None else int(value)
        missing = [day for day, count in counts.items() if count is None or count < self.threshold]
        return Readiness(
            not missing,
            {
                "event": self.event,
                "counts": counts,
                "threshold": self.threshold,
                "missing": missing,
            },
        )
