"""The events one analysis may see, with the property values it reads at them.

Visible are the events on days ``fromDate..toDate`` (none after ``data_until``) of users in
the requested group (``$ALL`` or the first N users for a cohort of size N) that fall in the
sample (user index % samplingFactor == 0). User property values come from the population
once per request, for the user properties the request names; a masked value (the marker
text) and a value that does not have the property's data type read as null.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

import numpy as np

from analytics_emulator import catalog
from analytics_emulator.eventlog_columns import (
    NULL_CODE,
    Column,
    date_to_day,
    encode_values,
)

if TYPE_CHECKING:
    import datetime
    from collections.abc import Iterable, Mapping

    from analytics_emulator.analysis_expressions import (
        EventExpr,
        PropertyExpr,
    )
    from analytics_emulator.analysis_validation import DateRange
    from analytics_emulator.eventlog import EventLog

_MAX_RANGE_GAP: Final = 4096
"""Users further apart than this are fetched from the population in separate ranges."""


class Population(Protocol):
    """What the analyses need of the population: API-shaped user property values."""

    def records(self, start: int, stop: int, properties: list[str]) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class UserValues:
    """User property columns for a sorted set of user indexes.

    :param users: distinct user indexes, ascending.
    :param columns: property id -> column aligned with ``users``.
    """

    users: np.ndarray
    columns: Mapping[str, Column]

    def lookup(self, property_id: str, users: np.ndarray) -> Column:
        """Values of a user property for the given user indexes (null for unknown users)."""
        by_user = self.columns[property_id]
        position = np.searchsorted(self.users, users)
        inside = position < len(self.users)
        found = inside.copy()
        found[inside] = self.users[position[inside]] == users[inside]
        codes = np.full(len(users), NULL_CODE, dtype=np.int32)
        codes[found] = by_user.codes[position[found]]
        return Column(by_user.data_type, codes, by_user.dictionary)


class Scope:
    """Rows of the event log visible to one analysis (positions into the log, time-sorted).

    :param log: the event log.
    :param rows: visible positions, ascending.
    :param user_values: the user properties the request reads, for the users of the rows.
    """

    def __init__(self, log: EventLog, rows: np.ndarray, user_values: UserValues):
        self.log = log
        self.rows = rows
        self.users: np.ndarray = log.users[rows]
        self.times: np.ndarray = log.times[rows]
        self.days: np.ndarray = log.days[rows]
        self.event_codes: np.ndarray = log.event_codes[rows]
        self._user_values = user_values

    def __len__(self) -> int:
        return len(self.rows)

    def subset(self, mask: np.ndarray) -> Scope:
        """The rows where ``mask`` holds, keeping the loaded user properties."""
        return Scope(self.log, self.rows[mask], self._user_values)

    def event_mask(self, expression: EventExpr) -> np.ndarray:
        """Rows that are events of ``expression`` (all rows for ``$Anything``)."""
        if expression.is_any:
            return np.ones(len(self), dtype=bool)
        code = self.log.event_code(expression.event_id)
        if code is None:
            return np.zeros(len(self), dtype=bool)
        return self.event_codes == code

    def column(self, expression: PropertyExpr) -> Column:
        """Values of a property at every row: the event's own value or its user's value."""
        if expression.scope == "event":
            return self.log.column(expression.property_id).take(self.rows)
        return self.user_column(expression, self.users)

    def user_column(self, expression: PropertyExpr, users: np.ndarray) -> Column:
        """Values of a user property for the given user indexes."""
        return self._user_values.lookup(expression.property_id, users)


def _user_ranges(users: np.ndarray) -> list[tuple[int, int]]:
    """Few ``[start, stop)`` ranges covering sorted distinct users, merging small gaps."""
    if len(users) == 0:
        return []
    breaks = np.nonzero(np.diff(users) > _MAX_RANGE_GAP)[0]
    starts = [int(users[0]), *(int(users[i + 1]) for i in breaks)]
    stops = [*(int(users[i]) + 1 for i in breaks), int(users[-1]) + 1]
    return list(zip(starts, stops, strict=True))


def _load_user_values(
    population: Population, expressions: Iterable[PropertyExpr], users: np.ndarray
) -> UserValues:
    wanted = {e.property_id: e.data_type for e in expressions if e.scope == "user"}
    if not wanted:
        return UserValues(users, {})
    ids = sorted(wanted)
    values: dict[str, list[Any]] = {prop_id: [] for prop_id in wanted}
    for start, stop in _user_ranges(users):
        records = population.records(start, stop, ids)
        picked = users[(users >= start) & (users < stop)] - start
        for prop_id, column in values.items():
            column.extend(
                _unmasked(records[i].get(prop_id)) if i < len(records) else None
                for i in picked.tolist()
            )
    return UserValues(
        users,
        {
            prop_id: encode_values(wanted[prop_id], raw, strict=False)
            for prop_id, raw in values.items()
        },
    )


def _unmasked(value: Any) -> Any:
    return None if value == catalog.MASKED_MARKER else value


def visible_scope(
    log: EventLog,
    *,
    dates: DateRange,
    user_limit: int | None,
    sampling: int,
    data_until: datetime.date | None,
    population: Population,
    expressions: Iterable[PropertyExpr],
) -> Scope:
    """The scope of one request (see the module docstring).

    :param log: the event log.
    :param dates: the requested days.
    :param user_limit: users below this index are in the group; None for everyone.
    :param sampling: the sampling factor k (1 = all users).
    :param data_until: last day with visible data, None when all data is visible.
    :param population: source of user property values.
    :param expressions: every property expression of the request, so the user properties
        among them are loaded once.
    """
    last_day = dates.last_day
    if data_until is not None:
        last_day = min(last_day, date_to_day(data_until))
    window = log.day_slice(dates.first_day, last_day)
    rows = np.arange(window.start, window.stop, dtype=np.int64)
    users = log.users[rows]
    keep = users % sampling == 0
    if user_limit is not None:
        keep &= users < user_limit
    rows = rows[keep]
    users = np.unique(log.users[rows])
    return Scope(log, rows, _load_user_values(population, expressions, users))
