"""Column specs of the flattened analyses, the single source of truth for column names and
types (for empty results too), and the helpers that make Arrow columns fit them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_analytics.core.errors import AnalyticsUsageError
from airflow_provider_analytics.core.identity import REPORT_MARK_COLUMNS
from airflow_provider_analytics.core.report_dates import (
    ACCEPTED_DATETIME_FORMATS,
    parse_report_datetime,
    shown_label,
)
from airflow_provider_analytics.reports.labels import column_slug

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import numpy as np

log = logging.getLogger(__name__)

TIMESTAMP: Final = pa.timestamp("us", tz="UTC")
"""An instant, microseconds, UTC: the platform's wall-clock times read in the project's zone."""

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
        ("report_updated_at", TIMESTAMP),
        ("report_updated_at_text", pa.string()),
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
        ("report_updated_at", TIMESTAMP),
        ("report_updated_at_text", pa.string()),
    ]
)
"""Columns every event frame has after its split columns; the whole schema when unsplit."""

BY_COLUMN_PREFIX: Final = "by_"
BUCKET_SUFFIXES: Final = ("_lower", "_upper")


@dataclass(frozen=True)
class ByColumn:
    """The output columns of one event-analysis ``byFields`` entry: ``name`` holds the split
    value as text; a ``bucketed`` field adds the ``<name>_lower`` and ``<name>_upper`` bounds."""

    expression: str
    name: str
    bucketed: bool

    @property
    def lower_name(self) -> str:
        return self.name + BUCKET_SUFFIXES[0]

    @property
    def upper_name(self) -> str:
        return self.name + BUCKET_SUFFIXES[1]

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, self.lower_name, self.upper_name) if self.bucketed else (self.name,)

    def fields(self) -> list[pa.Field]:
        bounds = [pa.field(name, pa.float64()) for name in self.names[1:]]
        return [pa.field(self.name, pa.string()), *bounds]


def plan_by_columns(expressions: Sequence[str], bucketed: Sequence[bool]) -> tuple[ByColumn, ...]:
    """Name the split columns ``by_`` plus the expression's slug; a name (or bound column)
    already taken by an earlier field or a fixed column gets the smallest free suffix ``_2``,
    ``_3``, ..., so the names depend only on the expressions and their order."""
    taken = set(EVENT_SCHEMA.names)
    planned = []
    for expression, with_bounds in zip(expressions, bucketed, strict=True):
        base = BY_COLUMN_PREFIX + (column_slug(expression) or "field")
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
    by_fields = [field for column in by_columns for field in column.fields()]
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
    """Naive wall-clock datetimes, read in ``timezone``, as UTC instants; a time that occurs
    twice or not at all (summer time) is read as the earlier instant, so a report never fails
    over a clock change."""
    naive = pa.array(values, type=pa.timestamp("us"))
    local = pc.assume_timezone(naive, timezone, ambiguous="earliest", nonexistent="earliest")
    return local.cast(TIMESTAMP)


REPORT_TIME_COLUMNS: Final = REPORT_MARK_COLUMNS
"""When the platform computed a report: the only columns that differ between reruns of a day
(and the columns that tell a report table from a cohort table, ``core.identity.table_holds``)."""

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
            shown_label(value),
            ACCEPTED_DATETIME_FORMATS,
        )
        updated = None
    text = None if value is None else value[:REPORT_TIME_TEXT_LIMIT]
    return {
        "report_updated_at": pa.repeat(local_times_as_utc([updated], timezone)[0], length),
        "report_updated_at_text": pa.repeat(pa.scalar(text, type=pa.string()), length),
    }
