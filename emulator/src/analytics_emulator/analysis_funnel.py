"""Funnel analysis (spec 4.16) computed from the event log.

Semantics:

- Only events visible to the request count (analysis_scope): days ``fromDate..toDate``,
  nothing after ``data_until``, the requested user group and sample, and the global
  ``filter``. Every step of a funnel therefore happens inside the date range.
- A user enters the funnel at their first step-1 event (matching the step's filter). They
  reach step N+1 at their first matching step-N+1 event strictly later (in whole seconds)
  than their step-N event and at most the conversion window after their step-1 event
  (window inclusive). Events in the same second are taken in log order. Each user enters
  once, so counts never grow from one step to the next.
- The window is ``convertTime`` ``convertTimeUnit`` (DAY, HOUR or MINUTE); without both it
  is 1 DAY. Giving only one of the two is a 400.
- ``dateList`` is ``$ALL`` then every day of the range (``2024/01/05 00:00:00``); a user
  is counted under the day they entered (so the day columns add up to ``$ALL``).
- ``byField`` splits users by one property: a user property, or an event property read at
  the step ``byStepIndex`` points to (0-based; -1, the default, means the entering step-1
  event). A user who never reached that step, or whose value is null, is under ``未知``.
  Split values are ordered by how many users entered, most first, ties in label order
  (analysis_splits); ``limit`` keeps that many of them. The ``-1`` row is the unsplit
  result and always comes first.
- ``median`` of a step pair lists, per ``dateList`` column, the median seconds from step N
  to step N+1 over the users who made that conversion (the mean of the two middle values
  for an even count, rounded down). A column where nobody converted holds null; when
  nobody converted in the whole range the ``median`` itself is null.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from analytics_emulator.analysis_expressions import (
    EventExpr,
    PropertyExpr,
    parse_event_expression,
)
from analytics_emulator.analysis_filters import Filter, filter_mask, parse_filter
from analytics_emulator.analysis_splits import split_labels
from analytics_emulator.analysis_validation import (
    DateRange,
    Split,
    check_use_cache,
    integer,
    parse_crowd,
    parse_dates,
    parse_sampling,
    parse_split,
    require_list,
    require_object,
)
from analytics_emulator.errors import BadRequest
from analytics_emulator.eventlog_columns import Column

if TYPE_CHECKING:
    from collections.abc import Mapping

    from analytics_emulator.analysis_scope import Scope


WINDOW_UNIT_SECONDS: Final = {"DAY": 86_400, "HOUR": 3_600, "MINUTE": 60}
DEFAULT_WINDOW_SECONDS: Final = 86_400
_MAX_WINDOW_SECONDS: Final = 10**11
"""Windows are capped far beyond any date range, which keeps the arithmetic in int64."""
ANY_STEP: Final = -1


@dataclass(frozen=True)
class FunnelStep:
    event: EventExpr
    filter: Filter | None


@dataclass(frozen=True)
class FunnelQuery:
    """A checked funnel request."""

    steps: tuple[FunnelStep, ...]
    dates: DateRange
    user_limit: int | None
    sampling: int
    global_filter: Filter | None
    window_seconds: int
    split: Split | None
    split_step: int
    limit: int | None

    def property_expressions(self) -> list[PropertyExpr]:
        found = [] if self.global_filter is None else self.global_filter.expressions()
        for step in self.steps:
            found += [] if step.filter is None else step.filter.expressions()
        return found if self.split is None else [*found, self.split.expression]


def _steps(body: Mapping[str, Any]) -> tuple[FunnelStep, ...]:
    raw = require_list(body.get("steps"), "steps", non_empty=True)
    if len(raw) < 2:
        raise BadRequest("a funnel needs at least two steps", ["steps"])
    steps = []
    for i, item in enumerate(raw):
        step = require_object(item, f"steps[{i}]")
        event = parse_event_expression(step.get("expression"), f"steps[{i}].expression")
        steps.append(FunnelStep(event, parse_filter(step.get("filter"), f"steps[{i}].filter")))
    return tuple(steps)


def _window_seconds(body: Mapping[str, Any]) -> int:
    amount, unit = body.get("convertTime"), body.get("convertTimeUnit")
    if amount is None and unit is None:
        return DEFAULT_WINDOW_SECONDS
    if amount is None:
        raise BadRequest("convertTimeUnit needs convertTime", ["convertTime"])
    if unit is None:
        raise BadRequest("convertTime needs convertTimeUnit", ["convertTimeUnit"])
    count = integer(amount, "convertTime", minimum=1)
    if not isinstance(unit, str) or unit not in WINDOW_UNIT_SECONDS:
        raise BadRequest(
            f"convertTimeUnit must be one of {sorted(WINDOW_UNIT_SECONDS)}", ["convertTimeUnit"]
        )
    return min(count * WINDOW_UNIT_SECONDS[unit], _MAX_WINDOW_SECONDS)


def parse_funnel(body: Mapping[str, Any], cohorts: Mapping[str, int]) -> FunnelQuery:
    """Check a funnel body (spec 4.16) and turn it into a :class:`FunnelQuery`.

    :raises BadRequest: naming the offending parameters.
    """
    steps = _steps(body)
    split = None if body.get("byField") is None else parse_split(body["byField"], "byField")
    split_step = ANY_STEP
    if body.get("byStepIndex") is not None:
        split_step = integer(
            body["byStepIndex"], "byStepIndex", minimum=ANY_STEP, maximum=len(steps) - 1
        )
    limit = None if body.get("limit") is None else integer(body["limit"], "limit", minimum=1)
    check_use_cache(body)
    return FunnelQuery(
        steps=steps,
        dates=parse_dates(body),
        user_limit=parse_crowd(body, cohorts),
        sampling=parse_sampling(body),
        global_filter=parse_filter(body.get("filter"), "filter"),
        window_seconds=_window_seconds(body),
        split=split,
        split_step=split_step,
        limit=limit,
    )


def _walk_steps(query: FunnelQuery, scope: Scope) -> list[np.ndarray]:
    """Per step and distinct user of the scope, the position of the event that reached it.

    Users are numbered densely in ascending index order; -1 marks a user who did not reach
    the step.
    """
    distinct, dense_users = np.unique(scope.users, return_inverse=True)
    reached: list[np.ndarray] = []
    for step in query.steps:
        candidates = np.nonzero(scope.event_mask(step.event) & filter_mask(step.filter, scope))[0]
        users = dense_users[candidates]
        if reached:
            previous = reached[-1][users]
            entered = np.where(previous >= 0, reached[0][users], 0)
            times = scope.times[candidates]
            ok = (
                (previous >= 0)
                & (times > scope.times[np.maximum(previous, 0)])
                & (times - scope.times[entered] <= query.window_seconds)
            )
            candidates, users = candidates[ok], users[ok]
        position = np.full(len(distinct), -1, dtype=np.int64)
        # Candidates are in log order, so the first per user is the earliest event.
        first_users, first = np.unique(users, return_index=True)
        position[first_users] = candidates[first]
        reached.append(position)
    return reached


def _split_rows(
    query: FunnelQuery, scope: Scope, reached: list[np.ndarray], entrants: np.ndarray
) -> tuple[np.ndarray, list[str]]:
    """Row number (1-based; -1 = cut by ``limit``) of every entrant, and the row labels."""
    if query.split is None:
        return np.full(len(entrants), -1, dtype=np.int64), []
    expression = query.split.expression
    if expression.scope == "user":
        column = scope.user_column(expression, scope.users[reached[0][entrants]])
    else:
        step = 0 if query.split_step == ANY_STEP else query.split_step
        positions = reached[step][entrants]
        at_events = scope.column(expression)
        codes = np.where(positions >= 0, at_events.codes[np.maximum(positions, 0)], -1)
        column = Column(at_events.data_type, codes.astype(np.int32), at_events.dictionary)
    split = split_labels(column, query.split.buckets)
    sizes = np.bincount(split.ids, minlength=len(split.labels))
    present = [i for i in range(len(split.labels)) if sizes[i] > 0]
    present.sort(key=lambda i: (-int(sizes[i]), split.sort_keys[i]))
    kept = present if query.limit is None else present[: query.limit]
    row_of_label = np.full(len(split.labels), -1, dtype=np.int64)
    row_of_label[kept] = np.arange(1, len(kept) + 1)
    return row_of_label[split.ids], [split.labels[i] for i in kept]


def _cell_keys(rows: np.ndarray, columns: np.ndarray, n_columns: int) -> np.ndarray:
    """Cells a user counts in: overall and own row, each under ``$ALL`` and their day."""
    in_row = rows >= 0
    return np.concatenate(
        [
            np.zeros(len(rows), dtype=np.int64),
            columns,
            rows[in_row] * n_columns,
            rows[in_row] * n_columns + columns[in_row],
        ]
    )


def _repeat_for_cells(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return np.concatenate([values, values, values[rows >= 0], values[rows >= 0]])


def _grouped_medians(keys: np.ndarray, values: np.ndarray, n_cells: int) -> list[int | None]:
    """Median of ``values`` per key (mean of the middle two, rounded down); None if empty."""
    medians: list[int | None] = [None] * n_cells
    if len(keys) == 0:
        return medians
    order = np.lexsort((values, keys))
    keys, values = keys[order], values[order]
    cells, start, count = np.unique(keys, return_index=True, return_counts=True)
    middle = (values[start + (count - 1) // 2] + values[start + count // 2]) // 2
    for cell, median in zip(cells.tolist(), middle.tolist(), strict=True):
        medians[cell] = median
    return medians


def compute_funnel(query: FunnelQuery, scope: Scope) -> dict[str, Any]:
    """The funnel response body without ``reportUpdateTime``."""
    scope = scope.subset(filter_mask(query.global_filter, scope))
    dates = query.dates.dates()
    n_columns = len(dates) + 1
    reached = _walk_steps(query, scope)
    entrants = np.nonzero(reached[0] >= 0)[0]
    columns = scope.days[reached[0][entrants]] - query.dates.first_day + 1
    rows, labels = _split_rows(query, scope, reached, entrants)
    n_rows = len(labels) + 1
    n_cells = n_rows * n_columns
    keys = _cell_keys(rows, columns, n_columns)

    step_counts = []
    for position in reached:
        hit = _repeat_for_cells(position[entrants] >= 0, rows)
        step_counts.append(np.bincount(keys[hit], minlength=n_cells).reshape(n_rows, n_columns))
    pair_medians = []
    for before, after in itertools.pairwise(reached):
        converted = after[entrants] >= 0
        seconds = np.zeros(len(entrants), dtype=np.int64)
        seconds[converted] = (
            scope.times[after[entrants][converted]] - scope.times[before[entrants][converted]]
        )
        hit = _repeat_for_cells(converted, rows)
        medians = _grouped_medians(keys[hit], _repeat_for_cells(seconds, rows)[hit], n_cells)
        pair_medians.append([medians[r * n_columns : (r + 1) * n_columns] for r in range(n_rows)])

    body_rows = []
    for r, by_value in enumerate(["-1", *labels]):
        body_rows.append(
            {
                "byValue": by_value,
                "stepsDetail": [
                    {"expression": step.event.text, "convertedUser": counts[r].tolist()}
                    for step, counts in zip(query.steps, step_counts, strict=True)
                ],
                "medianConvertedTime": [
                    {
                        "stepsExpress": f"{first.event.bare}~{second.event.bare}",
                        "median": None if medians[r][0] is None else medians[r],
                    }
                    for first, second, medians in zip(
                        query.steps, query.steps[1:], pair_medians, strict=False
                    )
                ],
            }
        )
    return {
        "dateList": ["$ALL", *(d.strftime("%Y/%m/%d 00:00:00") for d in dates)],
        "byField": "" if query.split is None else query.split.expression.text,
        "byValues": ["-1", *labels],
        "stepEvents": [step.event.text for step in query.steps],
        "rows": body_rows,
    }
