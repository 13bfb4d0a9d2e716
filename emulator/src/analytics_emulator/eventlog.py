"""The emulator's event log: who did what, when, with which event property values.

Events are held column-wise and sorted by time (stable, so events of the same second keep
the order they were given in; analyses break ties by that order):

- ``users``: int64 user index into the population,
- ``event_codes``: int32 index into ``event_ids``,
- ``times``: int64 seconds since 1970-01-01 00:00:00 on the project's local clock
  (catalog.PROJECT_TIMEZONE). Timestamps are written and read as local wall time; the
  project's zone has no daylight saving, so differences of these numbers are real elapsed
  seconds. ``days`` (``times // 86400``) is the local calendar day key,
- ``properties``: one dictionary-encoded :class:`Column` per event property id, covering
  both the event-defined and the common (global) properties, null where an event does not
  carry the property.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from analytics_emulator import catalog
from analytics_emulator.eventlog_columns import (
    LOCAL_EPOCH,
    InvalidValue,
    concat_columns,
    encode_values,
    null_column,
)
from analytics_emulator.eventlog_synthetic import synthesize

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from analytics_emulator.eventlog_columns import Column

SECONDS_PER_DAY: Final = 86_400
_TIME_PATTERN: Final = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", re.ASCII)


def _event_property_types() -> dict[str, str]:
    types: dict[str, str] = {p.id: p.data_type for p in catalog.GLOBAL_EVENT_PROPERTIES}
    for event in catalog.EVENTS:
        for prop in event.properties:
            types.setdefault(prop.id, prop.data_type)
    return types


EVENT_PROPERTY_TYPES: Final[dict[str, str]] = _event_property_types()
"""Data type of every event property id of the catalog (an id has one type everywhere)."""


def parse_event_time(text: object) -> int:
    """Local-epoch seconds of an event time written ``yyyy-MM-dd HH:mm:ss``.

    :raises ValueError: for any other shape or an impossible date.
    """
    if not isinstance(text, str) or _TIME_PATTERN.fullmatch(text) is None:
        raise ValueError(f"event time must be yyyy-MM-dd HH:mm:ss, got {text!r}")
    return int((datetime.strptime(text, "%Y-%m-%d %H:%M:%S") - LOCAL_EPOCH).total_seconds())


def format_event_time(seconds: int) -> str:
    """The ``yyyy-MM-dd HH:mm:ss`` text of local-epoch seconds."""
    return (LOCAL_EPOCH + timedelta(seconds=int(seconds))).strftime("%Y-%m-%d %H:%M:%S")


class EventLog:
    """An immutable, time-sorted, column-wise event log (see the module docstring).

    :param users: user index per event.
    :param event_codes: index into ``event_ids`` per event.
    :param event_ids: the distinct event ids.
    :param times: local-epoch seconds per event.
    :param properties: event property id -> column aligned with the events.
    """

    def __init__(
        self,
        *,
        users: np.ndarray,
        event_codes: np.ndarray,
        event_ids: Iterable[str],
        times: np.ndarray,
        properties: Mapping[str, Column],
    ) -> None:
        order = np.argsort(np.asarray(times, dtype=np.int64), kind="stable")
        self.users: np.ndarray = np.asarray(users, dtype=np.int64)[order]
        self.event_codes: np.ndarray = np.asarray(event_codes, dtype=np.int32)[order]
        self.event_ids: tuple[str, ...] = tuple(event_ids)
        self.times: np.ndarray = np.asarray(times, dtype=np.int64)[order]
        self.days: np.ndarray = self.times // SECONDS_PER_DAY
        self.properties: dict[str, Column] = {
            prop_id: column.take(order) for prop_id, column in properties.items()
        }
        for prop_id, column in self.properties.items():
            if len(column) != len(self.times):
                raise ValueError(f"column {prop_id!r} does not match the number of events")

    def __len__(self) -> int:
        return len(self.times)

    def column(self, property_id: str) -> Column:
        """Values of an event property for every event (all null when nobody reported it)."""
        found = self.properties.get(property_id)
        if found is not None:
            return found
        return null_column(EVENT_PROPERTY_TYPES.get(property_id, "string"), len(self))

    def event_code(self, event_id: str) -> int | None:
        """Position of ``event_id`` in ``event_ids``, None when the log has no such event."""
        try:
            return self.event_ids.index(event_id)
        except ValueError:
            return None

    def day_slice(self, first_day: int, last_day: int) -> slice:
        """Rows whose local day key lies in ``[first_day, last_day]`` (the log is time-sorted)."""
        start = np.searchsorted(self.times, first_day * SECONDS_PER_DAY, side="left")
        stop = np.searchsorted(self.times, (last_day + 1) * SECONDS_PER_DAY, side="left")
        return slice(int(start), int(stop))

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]]) -> EventLog:
        """Build a log from event dicts (hand-built logs for tests).

        :param records: ``{"user": int, "event": str, "time": "yyyy-MM-dd HH:mm:ss",
            "properties": {property_id: value}}``; ``properties`` may be omitted. Property
            ids must be event properties of the catalog and values must have its data type
            (see eventlog_columns.normalise_value).
        :raises ValueError: naming the first record that does not fit.
        """
        users: list[int] = []
        events: list[str] = []
        times: list[int] = []
        raw: dict[str, list[Any]] = {}
        for position, record in enumerate(records):
            user = record.get("user")
            if isinstance(user, bool) or not isinstance(user, int) or not 0 <= user < 2**63:
                raise ValueError(f"record {position}: user must be a non-negative int64")
            event_id = record.get("event")
            if not isinstance(event_id, str) or not event_id:
                raise ValueError(f"record {position}: event must be a non-empty string")
            times.append(parse_event_time(record.get("time")))
            users.append(user)
            events.append(event_id)
            for prop_id, _value in (record.get("properties") or {}).items():
                if prop_id not in EVENT_PROPERTY_TYPES:
                    raise ValueError(f"record {position}: unknown event property {prop_id!r}")
                raw.setdefault(prop_id, [None] * position)
            for prop_id, values in raw.items():
                values.append((record.get("properties") or {}).get(prop_id))
        event_ids = sorted(set(events))
        codes = {event_id: code for code, event_id in enumerate(event_ids)}
        properties: dict[str, Column] = {}
        for prop_id, values in raw.items():
            try:
                properties[prop_id] = encode_values(
                    EVENT_PROPERTY_TYPES[prop_id], values, strict=True
                )
            except InvalidValue as exc:
                raise ValueError(f"property {prop_id!r}: {exc}") from exc
        return cls(
            users=np.asarray(users, dtype=np.int64),
            event_codes=np.asarray([codes[e] for e in events], dtype=np.int32),
            event_ids=event_ids,
            times=np.asarray(times, dtype=np.int64),
            properties=properties,
        )

    def with_events(self, added: EventLog) -> EventLog:
        """A new log holding this log's events and ``added``'s (events that arrived late: any
        day, past days included). At the same second, this log's events come first.

        :param added: the events to add (e.g. :meth:`from_records` of a few records).
        """
        event_ids = [*self.event_ids, *(e for e in added.event_ids if e not in self.event_ids)]
        recode = np.asarray([event_ids.index(e) for e in added.event_ids], dtype=np.int32)
        added_codes = recode[added.event_codes] if len(added) else added.event_codes
        properties = {
            prop_id: concat_columns(self.column(prop_id), added.column(prop_id))
            for prop_id in [
                *self.properties,
                *(p for p in added.properties if p not in self.properties),
            ]
        }
        return EventLog(
            users=np.concatenate([self.users, added.users]),
            event_codes=np.concatenate([self.event_codes, added_codes]),
            event_ids=event_ids,
            times=np.concatenate([self.times, added.times]),
            properties=properties,
        )

    def to_records(self) -> list[dict[str, Any]]:
        """The log as from_records dicts, in log order, with only non-null properties.

        Meant for small logs and slices (tests, the oracle); it loops in Python.
        """
        records: list[dict[str, Any]] = []
        for row in range(len(self)):
            properties = {}
            for prop_id, column in self.properties.items():
                value = column.python_value(row)
                if value is not None:
                    properties[prop_id] = value
            records.append(
                {
                    "user": int(self.users[row]),
                    "event": self.event_ids[int(self.event_codes[row])],
                    "time": format_event_time(int(self.times[row])),
                    "properties": properties,
                }
            )
        return records

    def select(self, rows: np.ndarray | slice) -> EventLog:
        """A new log holding only ``rows`` (for slicing big logs down for the oracle)."""
        picked = np.arange(len(self))[rows]
        return EventLog(
            users=self.users[picked],
            event_codes=self.event_codes[picked],
            event_ids=self.event_ids,
            times=self.times[picked],
            properties={pid: column.take(picked) for pid, column in self.properties.items()},
        )


def generate_event_log(seed: int) -> EventLog:
    """The deterministic synthetic event log of users 0..catalog.EVENT_LOG_USERS-1.

    It covers catalog.EVENT_LOG_DAYS days from catalog.EVENT_LOG_START; see
    eventlog_synthetic for the behaviour it models. The same seed gives the same log.

    :param seed: seed of the random generator.
    """
    synthetic = synthesize(seed)
    return EventLog(
        users=synthetic.users,
        event_codes=synthetic.event_codes,
        event_ids=synthetic.event_ids,
        times=synthetic.times,
        properties=synthetic.properties,
    )
