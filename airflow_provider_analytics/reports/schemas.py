"""Column specs of the flattened analyses, the single source of truth for column names and
types (for empty results too), the helpers that make Arrow columns fit them, and the label
strings analysis responses carry (split values such as ``-1`` or ``600~800``, measures such as
``event.$Anything.unique``, step pairs) read as typed values, once per distinct label.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, NamedTuple

import pyarrow as pa

from airflow_provider_analytics.client.answers import OVERALL_BY_VALUE as OVERALL_BY_VALUE
from airflow_provider_analytics.client.answers import label_text as label_text
from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.arrow_types import wall_clock_in
from airflow_provider_analytics.core.errors import AnalyticsUsageError, bounded_repr
from airflow_provider_analytics.core.identity import REPORT_MARK_COLUMNS
from airflow_provider_analytics.core.report_dates import (
    ACCEPTED_DATETIME_FORMATS,
    parse_report_datetime,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import numpy as np

log = logging.getLogger(__name__)


UNKNOWN_BUCKET_LABEL: Final = "未知"
"""The split label the platform uses for a bucketed property without a value ("unknown")."""

EVENT_PREFIX: Final = "event."

_NUMBER: Final = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_BUCKET_LABEL: Final = re.compile(rf"\s*(?P<lower>-∞|{_NUMBER})\s*~\s*(?P<upper>\+?∞|{_NUMBER})\s*")

_SUFFIXES: Final = {
    2: ("TRIGGER_USER_COUNT", {"TRIGGER_USER_COUNT", "TOTAL_COUNT", "AVG_COUNT"}),
    3: ("REMOVE_DUMPLICATE", {"REMOVE_DUMPLICATE", "SUM", "AVG", "MAX", "MIN", "AVG_PER"}),
}
"""By segments of the expression (``event.<id>``, ``event.<id>.<property>``): the aggregator a
``.unique`` suffix stands for, and the aggregators a suffix may name."""


class BucketBounds(NamedTuple):
    """Bounds of a bucket label; ``None`` marks an open side (or an unknown value)."""

    lower: float | None
    upper: float | None


def parse_bucket_label(label: str | None) -> BucketBounds | None:
    """Bounds of a bucketed split value such as ``-∞~600``, ``600~800`` or ``800~+∞`` (``None``
    for an open side, both for the unknown-value label or a missing value); ``None`` when the
    label is not a bucket, or a bound is beyond a double (``1e400`` is no open side)."""
    if label is None or label == UNKNOWN_BUCKET_LABEL:
        return BucketBounds(None, None)
    match = _BUCKET_LABEL.fullmatch(label)
    if match is None:
        return None
    bounds = [None if bound.endswith("∞") else float(bound) for bound in match.groups()]
    return None if any(b is not None and math.isinf(b) for b in bounds) else BucketBounds(*bounds)


def event_id_of(expression: str) -> str:
    """The event id of a step expression: ``event.$startup`` and ``$startup`` give ``$startup``."""
    return expression.removeprefix(EVENT_PREFIX)


def steps_express_matches(steps_express: str, from_step: str, to_step: str) -> bool:
    """Whether a ``stepsExpress`` such as ``$startup~$pageview`` names the given step pair
    (``event.``-prefixed or bare on either side)."""
    left, separator, right = steps_express.partition("~")
    return (
        bool(separator)
        and event_id_of(left.strip()) == event_id_of(from_step)
        and event_id_of(right.strip()) == event_id_of(to_step)
    )


def split_measure_label(label: str) -> tuple[str, str | None]:
    """Best-effort expression and aggregator of a measure label (``event.$Anything`` with
    TRIGGER_USER_COUNT comes back as ``event.$Anything.unique``): a trailing segment is an
    aggregator only where it fits the expression before it (event aggregators after
    ``event.<id>``, property ones after ``event.<id>.<property>``, ``unique`` the distinct
    count of either); otherwise the whole label is the expression, the aggregator ``None``."""
    head, dot, suffix = label.rpartition(".")
    if not dot or not head.startswith(EVENT_PREFIX):
        return label, None
    key = suffix.upper()
    distinct, named = _SUFFIXES.get(head.count(".") + 1, ("", set()))
    if key == "UNIQUE" and distinct:
        return head, distinct
    return (head, key) if key in named else (label, None)


def column_slug(expression: str) -> str:
    """Column-safe slug of an expression (``event.purchase.$city`` -> ``event_purchase_city``),
    safe in every warehouse; it may be empty."""
    return re.sub(r"[^0-9a-z]+", "_", expression.lower()).strip("_")


TIMESTAMP: Final = pa.timestamp("us", tz="UTC")
"""An instant, microseconds, UTC: the platform's wall-clock times read in the project's zone."""

REPORT_TIME_COLUMNS: Final = REPORT_MARK_COLUMNS
"""When the platform computed a report: the only columns that differ between reruns of a day
(and the columns that tell a report table from a cohort table, ``core.identity.table_holds``)."""
_REPORT_TIME_FIELDS: Final = list(zip(REPORT_TIME_COLUMNS, (TIMESTAMP, pa.string()), strict=True))

FUNNEL_SCHEMA: Final = pa.schema(
    [
        ("by_field", pa.string()),
        ("by_value", pa.string()),
        ("is_overall", pa.bool_()),
        ("date", pa.date32()),
        ("is_all_dates", pa.bool_()),
        ("step_number", pa.int64()),
        ("step_expression", pa.string()),
        ("step_event", pa.string()),
        ("converted_users", pa.int64()),
        ("conversion_rate", pa.float64()),
        ("completion_rate", pa.float64()),
        ("median_seconds_to_next", pa.int64()),
        *_REPORT_TIME_FIELDS,
    ]
)
"""Columns of :func:`~airflow_provider_analytics.reports.funnel_frame.funnel_table`."""

EVENT_SCHEMA: Final = pa.schema(
    [
        ("measure_index", pa.int64()),
        ("measure_label", pa.string()),
        ("measure_expression", pa.string()),
        ("measure_aggregator", pa.string()),
        ("period", pa.string()),
        ("period_start", TIMESTAMP),
        ("date", pa.date32()),
        ("is_total", pa.bool_()),
        ("count", pa.int64()),
        ("value", pa.float64()),
        *_REPORT_TIME_FIELDS,
    ]
)
"""Columns every event frame has after its split columns; the whole schema when unsplit."""


@dataclass(frozen=True)
class ByColumn:
    """The output columns of one event-analysis ``byFields`` entry: ``name`` holds the split
    value as text; a ``bucketed`` field adds the ``<name>_lower`` and ``<name>_upper`` bounds."""

    expression: str
    name: str
    bucketed: bool

    @property
    def names(self) -> tuple[str, ...]:
        """The split value's column, then the bounds' (lower, upper) of a bucketed field."""
        bounds = (f"{self.name}_lower", f"{self.name}_upper") if self.bucketed else ()
        return (self.name, *bounds)


def plan_by_columns(expressions: Sequence[str], bucketed: Sequence[bool]) -> tuple[ByColumn, ...]:
    """Name the split columns ``by_`` plus the expression's slug; a name (or bound column)
    already taken by an earlier field or a fixed column gets the smallest free suffix ``_2``,
    ``_3``, ..., so the names depend only on the expressions and their order."""
    taken = set(EVENT_SCHEMA.names)
    planned = []
    for expression, with_bounds in zip(expressions, bucketed, strict=True):
        base = "by_" + (column_slug(expression) or "field")
        candidate = ByColumn(expression, base, with_bounds)
        suffix = 2
        while taken.intersection(candidate.names):
            candidate = ByColumn(expression, f"{base}_{suffix}", with_bounds)
            suffix += 1
        taken.update(candidate.names)
        planned.append(candidate)
    return tuple(planned)


def event_schema_for(by_columns: Sequence[ByColumn]) -> pa.Schema:
    """The event frame's schema: these split columns, then :data:`EVENT_SCHEMA`."""
    by_fields = [
        pa.field(name, pa.float64() if bound else pa.string())
        for column in by_columns
        for bound, name in enumerate(column.names)
    ]
    return pa.schema([*by_fields, *EVENT_SCHEMA])


def table_from_columns(
    schema: pa.Schema, columns: Mapping[str, pa.Array | pa.ChunkedArray]
) -> pa.Table:
    """Assemble Arrow columns into a table with exactly ``schema``; a column of another type
    is a builder bug, refused (Arrow would otherwise cast silently)."""
    arrays = [columns[field.name] for field in schema]
    for field, array in zip(schema, arrays, strict=True):
        if not array.type.equals(field.type):
            raise AnalyticsUsageError(
                f"column {field.name} is {array.type}, the schema says {field.type}"
            )
    return pa.Table.from_arrays(arrays, schema=schema)


def gathered(
    values: Sequence[object] | np.ndarray | pa.Array, arrow_type: pa.DataType, at: np.ndarray
) -> pa.ChunkedArray:
    """``values[at]``: the per-label values broadcast to the output rows."""
    array = values if isinstance(values, pa.Array) else pa.array(values, type=arrow_type)
    # Chunked take: for many distinct strings it runs several times faster than Array.take.
    return pa.chunked_array([array], type=arrow_type).take(pa.array(at, type=pa.int64()))


def local_times_as_utc(values: Sequence[object], timezone: str) -> pa.Array:
    """Naive wall-clock datetimes, read in ``timezone`` (:func:`~airflow_provider_analytics.
    core.arrow_types.wall_clock_in`), as UTC instants; a ``timezone`` that is no zone is
    refused by name."""
    naive = pa.array(values, type=pa.timestamp("us"))
    return wall_clock_in(naive, rules.time_zone(timezone)).cast(TIMESTAMP)


REPORT_TIME_TEXT_LIMIT: Final = 200
"""Characters of ``reportUpdateTime`` kept as sent; a longer value is cut."""


def report_time_columns(
    value: str | None, timezone: str, length: int, *, what: str
) -> dict[str, pa.Array]:
    """An answer's ``reportUpdateTime``, repeated ``length`` times, as the two
    :data:`REPORT_TIME_COLUMNS`: the UTC instant (read in ``timezone``), and the text as sent,
    so that a time in no accepted form (left empty in the first, and logged: no number depends
    on it, so it never fails a report) is not lost."""
    what = f"{what} reportUpdateTime"
    try:
        updated = None if value is None else parse_report_datetime(value, what=what)
    except ValueError:
        log.warning(
            "%s %s is not a date-time in an accepted form (%s); left empty",
            what,
            bounded_repr(value),
            ACCEPTED_DATETIME_FORMATS,
        )
        updated = None
    text = None if value is None else value[:REPORT_TIME_TEXT_LIMIT]
    return {
        "report_updated_at": pa.repeat(local_times_as_utc([updated], timezone)[0], length),
        "report_updated_at_text": pa.repeat(pa.scalar(text, type=pa.string()), length),
    }
