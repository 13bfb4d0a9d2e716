"""Event analysis (spec 4.17) computed from the event log.

Semantics:

- Only events visible to the request count (analysis_scope) and that pass the global
  ``filter``; a measure then counts the events of its event (any event for
  ``$Anything``) that pass its own ``filter``.
- Event aggregators: TRIGGER_USER_COUNT (distinct users), TOTAL_COUNT (events),
  AVG_COUNT (events per distinct user). Property aggregators read the property at those
  events: REMOVE_DUMPLICATE (distinct non-null values, any data type), SUM, AVG, MAX, MIN
  (over non-null values) and AVG_PER (the sum divided by the distinct users of the
  measure's events, including events whose value is null); the last five need a number
  property. A cell without events or values reports 0.
- ``series``: DAY (default) one entry per day ``yyyy-MM-dd``; HOUR the 24 hours of a
  single-day range ``yyyy-MM-dd HH:00``; WEEK the Monday of every week the range touches;
  MONTH the first of every month it touches (``yyyy-MM-01``). A week or month cut by the
  range only counts its days inside the range. Other units are a 400.
- ``byFields`` split events by the labels of their property values (analysis_splits):
  one row per combination present among the counted events of any measure, ordered by
  label order field by field. Without ``byFields`` there is exactly one row (``byValue``
  ``[]``), also when nothing happened. There is no separate overall row.
- ``values[m][s]`` is measure m in series entry s; ``sum[m]`` is measure m computed over
  the whole range (so distinct counts are not the sum of the per-series values).
- ``measures`` in the response repeat the request's expressions, in request order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from analytics_emulator.analysis_expressions import (
    EventExpr,
    PropertyExpr,
    parse_expression,
)
from analytics_emulator.analysis_filters import Filter, filter_mask, parse_filter
from analytics_emulator.analysis_splits import split_labels
from analytics_emulator.analysis_validation import (
    DateRange,
    Split,
    check_use_cache,
    parse_crowd,
    parse_dates,
    parse_sampling,
    parse_split,
    require_list,
    require_object,
)
from analytics_emulator.errors import BadRequest
from analytics_emulator.eventlog_columns import day_to_date

if TYPE_CHECKING:
    from collections.abc import Mapping

    from analytics_emulator.analysis_scope import Scope
    from analytics_emulator.eventlog_columns import Column

EVENT_AGGREGATORS: Final = frozenset({"TRIGGER_USER_COUNT", "TOTAL_COUNT", "AVG_COUNT"})
PROPERTY_AGGREGATORS: Final = frozenset(
    {"REMOVE_DUMPLICATE", "SUM", "AVG", "MAX", "MIN", "AVG_PER"}
)
NUMBER_ONLY_AGGREGATORS: Final = PROPERTY_AGGREGATORS - {"REMOVE_DUMPLICATE"}
SUPPORTED_UNITS: Final = ("HOUR", "DAY", "WEEK", "MONTH")
KNOWN_UNITS: Final = frozenset(
    {"SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"}
)


@dataclass(frozen=True)
class Measure:
    expression: EventExpr | PropertyExpr
    aggregator: str
    filter: Filter | None

    @property
    def event(self) -> EventExpr:
        """The events the measure counts."""
        if isinstance(self.expression, EventExpr):
            return self.expression
        event_id = str(self.expression.event_id)
        return EventExpr(f"event.{event_id}", event_id)


@dataclass(frozen=True)
class EventQuery:
    """A checked event analysis request."""

    measures: tuple[Measure, ...]
    dates: DateRange
    user_limit: int | None
    sampling: int
    global_filter: Filter | None
    unit: str
    splits: tuple[Split, ...]

    def property_expressions(self) -> list[PropertyExpr]:
        found = [] if self.global_filter is None else self.global_filter.expressions()
        for measure in self.measures:
            found += [] if measure.filter is None else measure.filter.expressions()
        return found + [split.expression for split in self.splits]


def _measure(value: object, where: str) -> Measure:
    body = require_object(value, where)
    expression = parse_expression(body.get("expression"), f"{where}.expression")
    aggregator = body.get("aggregator")
    if isinstance(expression, PropertyExpr) and expression.scope == "user":
        raise BadRequest(
            f"{where}.expression must be an event or an event property", [f"{where}.expression"]
        )
    allowed = EVENT_AGGREGATORS if isinstance(expression, EventExpr) else PROPERTY_AGGREGATORS
    if not isinstance(aggregator, str) or aggregator not in allowed:
        kind = "an event" if isinstance(expression, EventExpr) else "a property"
        raise BadRequest(
            f"aggregator {aggregator!r} does not apply to {kind} expression; "
            f"use one of {sorted(allowed)}",
            [f"{where}.aggregator"],
        )
    if (
        isinstance(expression, PropertyExpr)
        and aggregator in NUMBER_ONLY_AGGREGATORS
        and expression.data_type != "number"
    ):
        raise BadRequest(
            f"{aggregator} needs a number property, {expression.text} is {expression.data_type}",
            [f"{where}.aggregator"],
        )
    return Measure(expression, aggregator, parse_filter(body.get("filter"), f"{where}.filter"))


def _unit(body: Mapping[str, Any], dates: DateRange) -> str:
    unit = body.get("unit")
    if unit is None:
        return "DAY"
    if not isinstance(unit, str) or unit not in KNOWN_UNITS:
        raise BadRequest(f"unknown unit {unit!r}", ["unit"])
    if unit not in SUPPORTED_UNITS:
        raise BadRequest(f"unit {unit} is not supported; use {list(SUPPORTED_UNITS)}", ["unit"])
    if unit == "HOUR" and dates.first != dates.last:
        raise BadRequest("unit HOUR needs fromDate equal to toDate", ["unit"])
    return unit


def parse_events(body: Mapping[str, Any], cohorts: Mapping[str, int]) -> EventQuery:
    """Check an event analysis body (spec 4.17) and turn it into an :class:`EventQuery`.

    :raises BadRequest: naming the offending parameters.
    """
    measures = tuple(
        _measure(item, f"measures[{i}]")
        for i, item in enumerate(require_list(body.get("measures"), "measures", non_empty=True))
    )
    raw_splits = body.get("byFields")
    splits = (
        ()
        if raw_splits is None
        else tuple(
            parse_split(item, f"byFields[{i}]")
            for i, item in enumerate(require_list(raw_splits, "byFields", non_empty=False))
        )
    )
    check_use_cache(body)
    dates = parse_dates(body)
    return EventQuery(
        measures=measures,
        dates=dates,
        user_limit=parse_crowd(body, cohorts),
        sampling=parse_sampling(body),
        global_filter=parse_filter(body.get("filter"), "filter"),
        unit=_unit(body, dates),
        splits=splits,
    )


def _months(days: np.ndarray) -> np.ndarray:
    return days.astype("datetime64[D]").astype("datetime64[M]").astype(np.int64)


def _mondays(days: np.ndarray) -> np.ndarray:
    # Day 0 (1970-01-01) was a Thursday.
    return days - (days + 3) % 7


def _series(query: EventQuery, scope: Scope) -> tuple[np.ndarray, list[str]]:
    """Series position of every row and the series labels."""
    first, last = query.dates.first_day, query.dates.last_day
    if query.unit == "HOUR":
        day = query.dates.first.isoformat()
        return (scope.times // 3600) % 24, [f"{day} {h:02d}:00" for h in range(24)]
    if query.unit == "DAY":
        return scope.days - first, [d.isoformat() for d in query.dates.dates()]
    if query.unit == "WEEK":
        start = int(_mondays(np.asarray([first]))[0])
        count = (int(_mondays(np.asarray([last]))[0]) - start) // 7 + 1
        labels = [day_to_date(start + 7 * i).isoformat() for i in range(count)]
        return (_mondays(scope.days) - start) // 7, labels
    start_month = int(_months(np.asarray([first]))[0])
    count = int(_months(np.asarray([last]))[0]) - start_month + 1
    month_starts = np.arange(start_month, start_month + count).astype("datetime64[M]")
    labels = [str(m.astype("datetime64[D]")) for m in month_starts]
    return _months(scope.days) - start_month, labels


def _distinct_per_key(keys: np.ndarray, values: np.ndarray, n_keys: int) -> np.ndarray:
    """Number of distinct ``values`` per key."""
    if len(keys) == 0:
        return np.zeros(n_keys, dtype=np.int64)
    _distinct, dense = np.unique(values, return_inverse=True)
    width = int(dense.max()) + 1
    pairs = np.unique(keys.astype(np.int64) * width + dense)
    return np.bincount(pairs // width, minlength=n_keys)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    safe = np.where(denominator > 0, denominator, 1)
    return np.where(denominator > 0, numerator / safe, 0.0)


def _aggregate(
    aggregator: str, keys: np.ndarray, n_keys: int, users: np.ndarray, values: Column | None
) -> list[Any]:
    """One measure per key over the measure's events.

    :param keys: the cell (or row) of every event.
    :param users: the user of every event.
    :param values: the property at every event for a property measure, None for an event
        measure.
    """
    user_counts = _distinct_per_key(keys, users, n_keys)
    if values is None:
        event_counts = np.bincount(keys, minlength=n_keys)
        if aggregator == "TOTAL_COUNT":
            return event_counts.tolist()
        if aggregator == "TRIGGER_USER_COUNT":
            return user_counts.tolist()
        return _ratio(event_counts, user_counts).tolist()
    known = values.codes >= 0
    if aggregator == "REMOVE_DUMPLICATE":
        return _distinct_per_key(keys[known], values.codes[known], n_keys).tolist()
    numbers, keys = values.numbers()[known], keys[known]
    totals = np.bincount(keys, weights=numbers, minlength=n_keys)
    counts = np.bincount(keys, minlength=n_keys)
    if aggregator == "SUM":
        return totals.tolist()
    if aggregator == "AVG":
        return _ratio(totals, counts).tolist()
    if aggregator == "AVG_PER":
        return _ratio(totals, user_counts).tolist()
    extreme = np.full(n_keys, -np.inf if aggregator == "MAX" else np.inf)
    (np.maximum if aggregator == "MAX" else np.minimum).at(extreme, keys, numbers)
    return np.where(counts > 0, extreme, 0.0).tolist()


@dataclass(frozen=True)
class _Groups:
    """Row of every counted event, and per row its labels."""

    of_event: np.ndarray
    by_values: list[list[str]]


def _groups(query: EventQuery, scope: Scope, counted: np.ndarray) -> _Groups:
    if not query.splits:
        return _Groups(np.zeros(len(counted), dtype=np.int64), [[]])
    if len(counted) == 0:
        return _Groups(np.zeros(0, dtype=np.int64), [])
    labelled = []
    for split in query.splits:
        expression = split.expression
        column = (
            scope.user_column(expression, scope.users[counted])
            if expression.scope == "user"
            else scope.column(expression).take(counted)
        )
        labelled.append(split_labels(column, split.buckets))
    ids = np.stack([found.ids for found in labelled], axis=1)
    combos, inverse = np.unique(ids, axis=0, return_inverse=True)
    order = sorted(
        range(len(combos)),
        key=lambda c: [found.sort_keys[i] for found, i in zip(labelled, combos[c], strict=True)],
    )
    rank = np.empty(len(combos), dtype=np.int64)
    rank[order] = np.arange(len(combos))
    by_values = [
        [found.labels[i] for found, i in zip(labelled, combos[c], strict=True)] for c in order
    ]
    return _Groups(rank[inverse.reshape(-1)], by_values)


def compute_events(query: EventQuery, scope: Scope) -> dict[str, Any]:
    """The event analysis response body without ``reportUpdateTime``."""
    scope = scope.subset(filter_mask(query.global_filter, scope))
    selected = [scope.event_mask(m.event) & filter_mask(m.filter, scope) for m in query.measures]
    counted = np.nonzero(np.logical_or.reduce(selected))[0]
    series, series_labels = _series(query, scope)
    groups = _groups(query, scope, counted)
    n_series, n_rows = len(series_labels), len(groups.by_values)
    cell = groups.of_event * n_series + series[counted]

    values: list[list[list[Any]]] = [[] for _ in range(n_rows)]
    sums: list[list[Any]] = [[] for _ in range(n_rows)]
    for measure, mask in zip(query.measures, selected, strict=True):
        inside = mask[counted]
        rows = counted[inside]
        users = scope.users[rows]
        column = (
            scope.column(measure.expression).take(rows)
            if isinstance(measure.expression, PropertyExpr)
            else None
        )
        per_cell = _aggregate(measure.aggregator, cell[inside], n_rows * n_series, users, column)
        per_row = _aggregate(measure.aggregator, groups.of_event[inside], n_rows, users, column)
        for r in range(n_rows):
            values[r].append(per_cell[r * n_series : (r + 1) * n_series])
            sums[r].append(per_row[r])
    return {
        "measures": [m.expression.text for m in query.measures],
        "byFields": [split.expression.text for split in query.splits],
        "series": series_labels,
        "rows": [
            {"byValue": groups.by_values[r], "values": values[r], "sum": sums[r]}
            for r in range(n_rows)
        ],
        "numRows": n_rows,
    }
