"""An event analysis response (spec 4.17) as one long Arrow table.

One output row per (split values, measure, period), in that order; after each measure's
periods comes one more row flagged ``is_total`` holding the row's ``sum`` entry for that
measure (period null); :mod:`.frames` puts the two kinds of row in separate report tables.
Split fields become ``by_*`` columns, with numeric bounds for bucketed fields. A measure
that counts (users, events, distinct values) has its numbers in the int64 ``count``
column, any other measure in the float ``value`` column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from airflow_provider_analytics.client.answers import (
    COUNTING_AGGREGATORS,
    EXACT_IN_A_DOUBLE,
    AnswerShapeError,
    Asked,
    EventAnswer,
    EventRow,
    as_model,
)
from airflow_provider_analytics.core import rules
from airflow_provider_analytics.reports.labels import (
    is_bucket_label,
    label_text,
    parse_bucket_label,
    split_measure_label,
)
from airflow_provider_analytics.reports.schemas import (
    TIMESTAMP,
    ByColumn,
    event_schema_for,
    gathered,
    local_times_as_utc,
    plan_by_columns,
    report_time_columns,
    table_from_columns,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

_Labels = list[str | None]


def event_table(
    response: Mapping[str, Any] | EventAnswer,
    request: Mapping[str, Any] | None = None,
    *,
    timezone: str = "UTC",
) -> pa.Table:
    """Flatten an event analysis response into one row per (split values, measure, period).

    Each (split row, measure) also gets one ``is_total`` row holding the response's
    ``sum`` entry, with null period columns. Measures are paired with the request's
    ``measures`` by position, because the response does not repeat the request's strings;
    without a request, expression and aggregator are read from the label as far as it
    allows. Split columns are named from the request's ``byFields`` expressions (the
    response's without a request); bucketed fields get ``<col>_lower``/``<col>_upper``.

    The response is decoded through its declared answer
    (:class:`~airflow_provider_analytics.client.answers.EventAnswer`) with what the request
    asked: numbers are JSON numbers and finite, a counting measure's numbers are JSON
    integers >= 0, ``series`` dates are unique (and inside the asked range), and every
    length agrees.

    :param response: the decoded JSON body of ``POST /uba/api/events/analyze``, or its
        declared answer.
    :param request: the body that was posted; it makes measure columns exact and the
        schema independent of the data (see :func:`event_schema`).
    :param timezone: the project's time zone, in which ``series`` and ``reportUpdateTime``
        are written.
    :raises AnswerShapeError: when the response does not fit its declaration, naming the
        field; or when a bucketed field has a split value that is not a bucket label.
    """
    if request is None:
        answer = as_model(EventAnswer, "analyze_events", response)
        measure_labels, measure_expressions, measure_aggregators = _measures(answer, None)
        answer.check_counts(tuple(aggregator or "" for aggregator in measure_aggregators))
    else:
        requested = _request_objects(request, "measures")
        asked = Asked(
            from_date=request.get("fromDate"),
            to_date=request.get("toDate"),
            aggregators=tuple(label_text(m.get("aggregator")) or "" for m in requested),
            split_fields=len(_request_objects(request, "byFields")),
        )
        answer = as_model(EventAnswer, "analyze_events", response, asked)
        measure_labels, measure_expressions, measure_aggregators = _measures(answer, request)
    by_columns, by_labels = _split_columns(answer, request)
    rows = answer.rows
    series = answer.series
    counting = [aggregator in COUNTING_AGGREGATORS for aggregator in measure_aggregators]
    counts, values = _gather_values(rows, counting, len(series))

    n_rows, n_measures, n_block = len(rows), len(measure_labels), len(series) + 1
    size = n_rows * n_measures * n_block
    row_at = np.repeat(np.arange(n_rows), n_measures * n_block)
    measure_at = np.tile(np.repeat(np.arange(n_measures), n_block), n_rows)
    period_at = np.tile(np.arange(n_block), n_rows * n_measures)
    starts = answer.days

    columns: dict[str, pa.Array | pa.ChunkedArray] = {}
    for column, labels in zip(by_columns, by_labels, strict=True):
        columns.update(_by_column_arrays(column, labels, row_at))
    columns.update(
        {
            "measure_index": pa.array(measure_at),
            "measure_label": gathered(measure_labels, pa.string(), measure_at),
            "measure_expression": gathered(measure_expressions, pa.string(), measure_at),
            "measure_aggregator": gathered(measure_aggregators, pa.string(), measure_at),
            "period": gathered([*series, None], pa.string(), period_at),
            "period_start": gathered(
                local_times_as_utc([*starts, None], timezone), TIMESTAMP, period_at
            ),
            "date": gathered([*(start.date() for start in starts), None], pa.date32(), period_at),
            "is_total": pa.array(period_at == len(series)),
            "count": counts,
            "value": values,
            **report_time_columns(answer.reportUpdateTime, timezone, size, what="event"),
        }
    )
    return table_from_columns(event_schema_for(by_columns), columns)


def event_schema(
    request: Mapping[str, Any] | None = None, response: Mapping[str, Any] | None = None
) -> pa.Schema:
    """The Arrow schema :func:`event_table` produces for this request (or response).

    With a request, the split columns follow from its ``byFields`` alone (a field with
    non-empty ``buckets`` gets bound columns), so the schema is known before the query
    runs. With only a response, bucketed fields are recognised from their labels, which an
    empty result cannot show. With neither, it is the unsplit schema.

    :param request: the event analysis request body.
    :param response: the response, used when no request is given.
    """
    if request is None and response is not None:
        by_columns, _ = _split_columns(as_model(EventAnswer, "analyze_events", response), None)
    else:
        by_columns, _ = _split_columns(None, request)
    return event_schema_for(by_columns)


def _measures(
    answer: EventAnswer, request: Mapping[str, Any] | None
) -> tuple[_Labels, _Labels, _Labels]:
    """Label, expression and aggregator of each measure, by position."""
    response_measures = answer.measures
    if request is None:
        labels = [label_text(label) for label in response_measures or []]
        parsed = [(None, None) if label is None else split_measure_label(label) for label in labels]
        return (
            labels,
            [expression for expression, _ in parsed],
            [aggregator for _, aggregator in parsed],
        )
    requested = _request_objects(request, "measures")
    if response_measures is None:
        labels = [None] * len(requested)
    else:
        labels = [label_text(label) for label in response_measures]
    return (
        labels,
        [label_text(measure.get("expression")) for measure in requested],
        [label_text(measure.get("aggregator")) for measure in requested],
    )


def _request_objects(request: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    """The request's ``measures`` or ``byFields`` objects (the caller's input, not an answer)."""
    items = request.get(key) or []
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            rules.fail(f"request {key}[{position}]", "must be an object", item)
    return list(items)


def _split_columns(
    answer: EventAnswer | None, request: Mapping[str, Any] | None
) -> tuple[tuple[ByColumn, ...], list[_Labels]]:
    """The split columns, and each split field's value in every row as text."""
    rows = [] if answer is None else answer.rows
    if request is None:
        fields: list[Mapping[str, Any]] = [
            {"expression": field} for field in (answer.byFields if answer else None) or []
        ]
    else:
        fields = _request_objects(request, "byFields")
    labels = [[label_text(row.byValue[field]) for row in rows] for field in range(len(fields))]
    if request is None:
        bucketed = [_looks_bucketed(field_labels) for field_labels in labels]
    else:
        bucketed = [bool(field.get("buckets")) for field in fields]
    expressions = [str(field.get("expression")) for field in fields]
    return plan_by_columns(expressions, bucketed), labels


def _looks_bucketed(labels: _Labels) -> bool:
    """Whether a split field's values are all bucket labels (or unknown), at least one a bucket."""
    distinct = set(labels)
    return any(is_bucket_label(label) for label in distinct) and all(
        parse_bucket_label(label) is not None for label in distinct
    )


def _by_column_arrays(
    column: ByColumn, labels: _Labels, row_at: np.ndarray
) -> dict[str, pa.ChunkedArray]:
    """The split value column, and for a bucketed field its bound columns, in output rows."""
    arrays = {column.name: gathered(labels, pa.string(), row_at)}
    if not column.bucketed:
        return arrays
    positions: dict[str, int] = {}
    codes = np.array(
        [-1 if label is None else positions.setdefault(label, len(positions)) for label in labels],
        dtype=np.int64,
    )
    bounds = []
    for label in positions:
        parsed = parse_bucket_label(label)
        if parsed is None:
            raise AnswerShapeError(
                f"analyze_events: rows[{labels.index(label)}].byValue: split value {label!r} of "
                f"{column.expression} is not a bucket label, although the field is bucketed",
                operation="analyze_events",
            )
        bounds.append(parsed)
    # A missing label has code -1, which picks the trailing null.
    label_at = codes[row_at]
    arrays[column.lower_name] = gathered(
        [*(lower for lower, _ in bounds), None], pa.float64(), label_at
    )
    arrays[column.upper_name] = gathered(
        [*(upper for _, upper in bounds), None], pa.float64(), label_at
    )
    return arrays


def _gather_values(
    rows: Sequence[EventRow], counting: Sequence[bool], n_series: int
) -> tuple[pa.Array, pa.Array]:
    """The ``count`` and ``value`` columns: every row's per-period numbers and total, in
    output order (row, measure, periods then total), counting measures in ``count``.

    Arrow builds both from the declared answer's numbers in one pass each; it refuses an
    integer that a double cannot hold exactly (beyond +-2**53) for the ``value`` column, which
    is then named by its place.

    :param rows: the declared answer's rows (their lengths already agree).
    :param counting: per measure, whether its numbers are counts.
    :param n_series: the number of ``series`` entries.
    """
    empty = [None] * (n_series + 1)
    count_cells: list[Any] = []
    value_cells: list[Any] = []
    for row in rows:
        totals = row.sum if row.sum is not None else [None] * len(counting)
        for cells, total, is_count in zip(row.values, totals, counting, strict=True):
            block = [*cells, total]
            count_cells.extend(block if is_count else empty)
            value_cells.extend(empty if is_count else block)
    try:
        values = pa.array(value_cells, type=pa.float64())
    except (pa.ArrowInvalid, OverflowError):
        raise _beyond_a_double(rows, counting) from None
    return pa.array(count_cells, type=pa.int64()), values


def _beyond_a_double(rows: Sequence[EventRow], counting: Sequence[bool]) -> AnswerShapeError:
    """The refusal of the first integer a double cannot hold, in a measure that is not a count."""
    for position, row in enumerate(rows):
        totals = row.sum if row.sum is not None else [None] * len(counting)
        for measure, (cells, total) in enumerate(zip(row.values, totals, strict=True)):
            if counting[measure]:
                continue
            for place, value in [
                *((f"values[{measure}][{i}]", v) for i, v in enumerate(cells)),
                (f"sum[{measure}]", total),
            ]:
                if isinstance(value, int) and abs(value) > EXACT_IN_A_DOUBLE:
                    return AnswerShapeError(
                        f"analyze_events: rows[{position}].{place} is {value}, beyond +-2**53, "
                        "where the value column (a double) no longer holds it exactly",
                        operation="analyze_events",
                    )
    return AnswerShapeError(
        "analyze_events: a value does not fit a double", operation="analyze_events"
    )
