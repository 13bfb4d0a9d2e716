"""An event analysis response (spec 4.17) as one long Arrow table: one row per (split values,
measure, period), then one ``is_total`` row per measure holding the row's ``sum`` entry.
Split fields become ``by_*`` columns (with numeric bounds when bucketed); a counting measure's
numbers go to the int64 ``count`` column, any other's to the float ``value`` column.
"""

from __future__ import annotations

from collections.abc import Mapping
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
from airflow_provider_analytics.reports.schemas import (
    TIMESTAMP,
    UNKNOWN_BUCKET_LABEL,
    ByColumn,
    event_schema_for,
    gathered,
    label_text,
    local_times_as_utc,
    parse_bucket_label,
    plan_by_columns,
    report_time_columns,
    split_measure_label,
    table_from_columns,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

_Labels = list[str | None]


def event_table(
    response: Mapping[str, Any] | EventAnswer,
    request: Mapping[str, Any] | None = None,
    *,
    timezone: str = "UTC",
) -> pa.Table:
    """Flatten an event analysis response into one row per (split values, measure, period),
    plus one ``is_total`` row per (split row, measure).

    Measures are paired with the request's by position (the response does not repeat its
    strings); without a request, expression and aggregator are read from the label as far as
    it allows. The response is decoded through
    :class:`~airflow_provider_analytics.client.answers.EventAnswer` with what the request
    asked; a misfit raises ``AnswerShapeError`` naming the field.

    :param response: the decoded JSON body of ``POST /uba/api/events/analyze``, or its
        declared answer.
    :param request: the body that was posted; it makes measure columns exact and the
        schema independent of the data (see :func:`event_schema`).
    :param timezone: the project's time zone, in which the platform writes date-times.
    """
    if request is None:
        answer = as_model(EventAnswer, "analyze_events", response)
        unnamed = [None] * len(answer.rows[0].values if answer.rows else ())
        measure_labels = [label_text(label) for label in answer.measures or unnamed]
        measures: list[tuple[str | None, str | None]] = [
            split_measure_label(t) if t is not None else (None, None) for t in measure_labels
        ]
        # every row holds as many measures as the first, and counts are counts
        aggregators = tuple(aggregator or "" for _, aggregator in measures)
        answer = as_model(EventAnswer, "analyze_events", answer, Asked(aggregators=aggregators))
    else:
        requested = _request_objects(request, "measures")
        measures = [
            (label_text(m.get("expression")), label_text(m.get("aggregator"))) for m in requested
        ]
        dates = (request.get("fromDate"), request.get("toDate"))
        first, last = rules.date_range(*dates) if None not in dates else (None, None)
        asked = Asked(
            from_date=first,
            to_date=last,
            aggregators=tuple(aggregator or "" for _, aggregator in measures),
            split_fields=len(_request_objects(request, "byFields")),
        )
        answer = as_model(EventAnswer, "analyze_events", response, asked)
        measure_labels = [label_text(label) for label in answer.measures or [None] * len(measures)]
    by_columns, by_labels = _split_columns(answer, request)
    series = answer.series
    counting = [aggregator in COUNTING_AGGREGATORS for _, aggregator in measures]
    counts, values = _gather_values(answer.rows, counting, len(series))
    starts, shape = answer.days, (len(answer.rows), len(measure_labels), len(series) + 1)
    row_at, measure_at, period_at = np.indices(shape).reshape(3, -1)

    columns: dict[str, pa.Array | pa.ChunkedArray] = {}
    for column, labels in zip(by_columns, by_labels, strict=True):
        columns.update(_by_column_arrays(column, labels, row_at))
    columns.update(
        {
            "measure_index": pa.array(measure_at),
            "measure_label": gathered(measure_labels, pa.string(), measure_at),
            "measure_expression": gathered([e for e, _ in measures], pa.string(), measure_at),
            "measure_aggregator": gathered([a for _, a in measures], pa.string(), measure_at),
            "period": gathered([*series, None], pa.string(), period_at),
            "period_start": gathered(
                local_times_as_utc([*starts, None], timezone), TIMESTAMP, period_at
            ),
            "date": gathered([*(start.date() for start in starts), None], pa.date32(), period_at),
            "is_total": pa.array(period_at == len(series)),
            "count": counts,
            "value": values,
            **report_time_columns(answer.reportUpdateTime, timezone, row_at.size, what="event"),
        }
    )
    return table_from_columns(event_schema_for(by_columns), columns)


def event_schema(
    request: Mapping[str, Any] | None = None, response: Mapping[str, Any] | None = None
) -> pa.Schema:
    """The Arrow schema :func:`event_table` produces for this request (known before the query
    runs), or else for this response (bucketed fields recognised from their labels), or else
    the unsplit schema.

    :param request: the event analysis request body.
    :param response: the response, used when no request is given.
    """
    read = request is None and response is not None
    answer = as_model(EventAnswer, "analyze_events", response) if read else None
    return event_schema_for(_split_columns(answer, request)[0])


def _request_objects(request: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    """The request's ``measures`` or ``byFields`` objects (the caller's input, not an answer),
    their expressions and aggregators text fit to be sent."""
    if not isinstance(request, Mapping):
        rules.fail("request", "must be an object", request)
    items = request.get(key) or []
    if not isinstance(items, list):
        rules.fail(f"request {key}", "must be an array", items)
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            rules.fail(f"request {key}[{position}]", "must be an object", item)
        for name in ("expression", "aggregator"):
            if item.get(name) is not None:
                rules.string(item[name], f"request {key}[{position}].{name}")
    return list(items)


def _split_columns(
    answer: EventAnswer | None, request: Mapping[str, Any] | None
) -> tuple[tuple[ByColumn, ...], list[_Labels]]:
    """The split columns (bucketed as the request says, else as the labels look) and each
    split field's labels, by row."""
    rows = [] if answer is None else answer.rows
    if request is None:
        fields: list[Mapping[str, Any]] = [
            {"expression": f} for f in (answer and answer.byFields) or []
        ]
    else:
        fields = _request_objects(request, "byFields")
    labels = [[label_text(row.byValue[field]) for row in rows] for field in range(len(fields))]
    bucketed = [
        _looks_bucketed(values) if request is None else bool(field.get("buckets"))
        for field, values in zip(fields, labels, strict=True)
    ]
    expressions = [str(field.get("expression")) for field in fields]
    return plan_by_columns(expressions, bucketed), labels


def _looks_bucketed(labels: _Labels) -> bool:
    """Whether a split field's values are all bucket labels (or unknown), at least one a bucket."""
    known = set(labels) - {None, UNKNOWN_BUCKET_LABEL}
    return bool(known) and all(parse_bucket_label(label) is not None for label in known)


def _by_column_arrays(
    column: ByColumn, labels: _Labels, row_at: np.ndarray
) -> dict[str, pa.ChunkedArray]:
    arrays = {column.name: gathered(labels, pa.string(), row_at)}
    if not column.bucketed:
        return arrays
    encoded = pa.array(labels, pa.string()).dictionary_encode()
    bounds = []
    for label in encoded.dictionary.to_pylist():
        parsed = parse_bucket_label(label)
        if parsed is None:
            raise AnswerShapeError(
                f"analyze_events: rows[{labels.index(label)}].byValue: split value {label!r} of "
                f"{column.expression} is not a bucket label, although the field is bucketed",
                operation="analyze_events",
            )
        bounds.append(parsed)
    # A missing label picks the trailing null.
    label_at = encoded.indices.fill_null(len(bounds)).to_numpy()[row_at]
    for side, name in enumerate(column.names[1:]):
        arrays[name] = gathered([*(bound[side] for bound in bounds), None], pa.float64(), label_at)
    return arrays


def _gather_values(
    rows: Sequence[EventRow], counting: Sequence[bool], n_series: int
) -> tuple[pa.Array, pa.Array]:
    """The ``count`` and ``value`` columns in output order (row, measure, periods then total).
    Arrow refuses an integer a double cannot hold exactly (beyond +-2**53) for ``value``; the
    refusal names its place."""
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
        beyond = (
            i
            for i, value in enumerate(value_cells)
            if isinstance(value, int) and abs(value) > EXACT_IN_A_DOUBLE
        )
        at = next(beyond, None)
        if at is None:  # refused for another reason: not a number
            raise AnswerShapeError(
                "analyze_events: a row's values are not numbers", operation="analyze_events"
            ) from None
        position, offset = divmod(at, len(counting) * (n_series + 1))
        measure, period = divmod(offset, n_series + 1)
        place = f"values[{measure}][{period}]" if period < n_series else f"sum[{measure}]"
        raise AnswerShapeError(
            f"analyze_events: rows[{position}].{place} is {value_cells[at]}, beyond +-2**53, "
            "where the value column (a double) no longer holds it exactly",
            operation="analyze_events",
        ) from None
    return pa.array(count_cells, type=pa.int64()), values
