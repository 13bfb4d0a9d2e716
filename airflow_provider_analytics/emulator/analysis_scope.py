"""The events one analysis may see, with the property values it reads at them.

Visible are the events on days ``fromDate..toDate`` (none after ``data_until``) of users in
the requested group (``$ALL`` or the first N users for a cohort of size N) that fall in the
sample (user index % samplingFactor == 0). User property values come from the population
once per request, for the user properties the request names; a masked value (the marker
text) and a value that does not have the property's data type read as null.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from airflow_provider_analytics.emulator import catalog
from airflow_provider_analytics.emulator.eventlog_columns import (
    NULL_CODE,
    Column,
    date_to_day,
    encode_values,
)

if TYPE_CHECKING:
    import datetime
    from collections.abc import Iterable, Mapping

    from airflow_provider_analytics.emulator.analysis_expressions import (
        EventExpr,
        PropertyExpr,
    )
    from airflow_provider_analytics.emulator.analysis_validation import DateRange
    from airflow_provider_analytics.emulator.eventlog import EventLog


class Population(Protocol):
    """What the analyses need of the population: API-shaped user property values."""

    def records(self, start: int, stop: int, properties: list[str]) -> list[dict[str, Any]]: ...


class Scope:
    """Rows of the event log visible to one analysis (positions into the log, time-sorted).

    :param log: the event log.
    :param rows: visible positions, ascending.
    :param user_columns: user property id -> column indexed by user index.
    """

    def __init__(self, log: EventLog, rows: np.ndarray, user_columns: Mapping[str, Column]):
        self.log = log
        self.rows = rows
        self.users: np.ndarray = log.users[rows]
        self.times: np.ndarray = log.times[rows]
        self.days: np.ndarray = log.days[rows]
        self.event_codes: np.ndarray = log.event_codes[rows]
        self._user_columns = user_columns

    def __len__(self) -> int:
        return len(self.rows)

    def subset(self, mask: np.ndarray) -> Scope:
        """The rows where ``mask`` holds, keeping the loaded user properties."""
        return Scope(self.log, self.rows[mask], self._user_columns)

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
        by_user = self._user_columns[expression.property_id]
        known = self.users < len(by_user)
        codes = np.full(len(self), NULL_CODE, dtype=np.int32)
        codes[known] = by_user.codes[self.users[known]]
        return Column(by_user.data_type, codes, by_user.dictionary)

    def user_column(self, expression: PropertyExpr, users: np.ndarray) -> Column:
        """Values of a user property for the given user indexes."""
        by_user = self._user_columns[expression.property_id]
        known = users < len(by_user)
        codes = np.full(len(users), NULL_CODE, dtype=np.int32)
        codes[known] = by_user.codes[users[known]]
        return Column(by_user.data_type, codes, by_user.dictionary)


def _load_user_columns(
    population: Population, expressions: Iterable[PropertyExpr], user_count: int
) -> dict[str, Column]:
    wanted = {e.property_id: e.data_type for e in expressions if e.scope == "user"}
    if not wanted:
        return {}
    ids = sorted(wanted)
    records = population.records(0, user_count, ids) if user_count > 0 else []
    return {
        prop_id: encode_values(
            data_type, (_unmasked(record.get(prop_id)) for record in records), strict=False
        )
        for prop_id, data_type in wanted.items()
    }


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
    user_count = int(log.users[rows].max()) + 1 if len(rows) else 0
    return Scope(log, rows, _load_user_columns(population, expressions, user_count))
