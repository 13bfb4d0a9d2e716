"""An event analysis response (spec 4.17) as one long Arrow table.

One output row per (split values, measure, period), in that order; after each measure's
periods comes one more row flagged ``is_total`` holding the row's ``sum`` entry for that
measure (period null); :mod:`.grains` puts the two kinds of row in separate report tables.
Split fields become ``by_*`` columns, with numeric bounds for bucketed fields. A measure
that counts (users, events, distinct values) has its numbers in the int64 ``count``
column, any other measure in the float ``value`` column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import numpy as np
import pyarrow as pa

from airflow_provider_analytics.tabular.labels import (
    is_bucket_label,
    label_text,
    parse_bucket_label,
    parse_report_datetime,
    split_measure_label,
)
from airflow_provider_analytics.tabular.schemas import (
    TIMESTAMP,
    ByColumn,
    event_schema_for,
    gathered,
    json_numbers,
    json_object,
    local_times_as_utc,
    plan_by_columns,
    report_updated_at,
    report_updated_at_text,
    table_from_columns,
    with_nulls,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

_Labels = list[str | None]

COUNTING_AGGREGATORS: Final = frozenset({"TRIGGER_USER_COUNT", "TOTAL_COUNT", "REMOVE_DUMPLICATE"})
"""Aggregators whose numbers are counts (users, events, distinct values): the ``count`` column."""


def event_table(
    response: Mapping[str, Any],
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

    :param response: the decoded JSON body of ``POST /uba/api/events/analyze``.
    :param request: the body that was posted; it makes measure columns exact and the
        schema independent of the data (see :func:`event_schema`).
    :param timezone: the project's time zone, in which ``series`` and ``reportUpdateTime``
        are written.
    :raises ValueError: when lengths disagree (values vs measures vs series, byValue vs
        byFields, request vs response), naming the row and the lengths; when a value is
        not a number, or a counting measure's value not a whole number; when a series label
        is not a date in an accepted format; or when a
        bucketed field has a split value that is not a bucket label.
    """
    rows = _rows(response)
    measure_labels, measure_expressions, measure_aggregators = _measures(response, request)
    series = [label_text(period) for period in response.get("series") or []]
    by_columns, by_labels = _split_columns(response, request, rows)
    counting = np.array(
        [aggregator in COUNTING_AGGREGATORS for aggregator in measure_aggregators], dtype=bool
    )
    values, null = _gather_values(rows, counting, len(series))

    n_rows, n_measures, n_block = len(rows), len(measure_labels), len(series) + 1
    size = n_rows * n_measures * n_block
    row_at = np.repeat(np.arange(n_rows), n_measures * n_block)
    measure_at = np.tile(np.repeat(np.arange(n_measures), n_block), n_rows)
    period_at = np.tile(np.arange(n_block), n_rows * n_measures)
    starts = [
        parse_report_datetime(period, what=f"event series[{position}]")
        for position, period in enumerate(series)
    ]
    is_count = counting[measure_at]

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
            "count": with_nulls(
                np.where(null | ~is_count, 0, values).astype(np.int64),
                null | ~is_count,
                pa.int64(),
            ),
            "value": with_nulls(values, null | is_count, pa.float64()),
            "report_updated_at": report_updated_at(response, timezone, size, what="event"),
            "report_updated_at_text": report_updated_at_text(response, size),
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
    response = response or {}
    by_columns, _ = _split_columns(response, request, _rows(response))
    return event_schema_for(by_columns)


def _rows(response: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [
        json_object(row, f"event rows[{position}]")
        for position, row in enumerate(response.get("rows") or [])
    ]


def _measures(
    response: Mapping[str, Any], request: Mapping[str, Any] | None
) -> tuple[_Labels, _Labels, _Labels]:
    """Label, expression and aggregator of each measure, by position."""
    response_measures = response.get("measures")
    if request is None:
        labels = [label_text(label) for label in response_measures or []]
        parsed = [(None, None) if label is None else split_measure_label(label) for label in labels]
        return (
            labels,
            [expression for expression, _ in parsed],
            [aggregator for _, aggregator in parsed],
        )
    requested = [
        json_object(measure, f"request measures[{position}]")
        for position, measure in enumerate(request.get("measures") or [])
    ]
    if response_measures is None:
        labels = [None] * len(requested)
    elif len(response_measures) != len(requested):
        raise ValueError(
            f"the request has {len(requested)} measures but the response has "
            f"{len(response_measures)}; they are paired by position"
        )
    else:
        labels = [label_text(label) for label in response_measures]
    return (
        labels,
        [label_text(measure.get("expression")) for measure in requested],
        [label_text(measure.get("aggregator")) for measure in requested],
    )


def _split_columns(
    response: Mapping[str, Any],
    request: Mapping[str, Any] | None,
    rows: Sequence[Mapping[str, Any]],
) -> tuple[tuple[ByColumn, ...], list[_Labels]]:
    """The split columns, and each split field's value in every row as text."""
    fields = _by_fields(response, request)
    labels = _by_label_columns(rows, len(fields))
    if request is None:
        bucketed = [_looks_bucketed(field_labels) for field_labels in labels]
    else:
        bucketed = [bool(field.get("buckets")) for field in fields]
    expressions = [str(field.get("expression")) for field in fields]
    return plan_by_columns(expressions, bucketed), labels


def _by_fields(
    response: Mapping[str, Any], request: Mapping[str, Any] | None
) -> list[Mapping[str, Any]]:
    """The split fields as ``{expression, buckets}`` objects: the request's, else the response's."""
    response_fields = response.get("byFields")
    if request is None:
        return [{"expression": str(field)} for field in response_fields or []]
    requested = [
        json_object(field, f"request byFields[{position}]")
        for position, field in enumerate(request.get("byFields") or [])
    ]
    if response_fields is not None and len(response_fields) != len(requested):
        raise ValueError(
            f"the request has {len(requested)} byFields but the response has {len(response_fields)}"
        )
    return requested


def _by_label_columns(rows: Sequence[Mapping[str, Any]], n_fields: int) -> list[_Labels]:
    """Each split field's value in every row, as text, after checking ``byValue`` lengths."""
    by_rows = []
    for position, row in enumerate(rows):
        by_value = row.get("byValue") or []
        if not isinstance(by_value, list) or len(by_value) != n_fields:
            count = len(by_value) if isinstance(by_value, list) else by_value
            raise ValueError(
                f"event rows[{position}]: byValue has {count} entries, expected {n_fields} "
                "(one per byFields entry)"
            )
        by_rows.append(by_value)
    return [[label_text(by_value[field]) for by_value in by_rows] for field in range(n_fields)]


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
            raise ValueError(
                f"event rows[{labels.index(label)}]: split value {label!r} of {column.expression} "
                "is not a bucket label, although the field is bucketed"
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
    rows: Sequence[Mapping[str, Any]], counting: np.ndarray, n_series: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every row's per-period values and totals, in output order, with their null mask.

    :param rows: the response's rows.
    :param counting: per measure, whether its numbers are counts (must be whole).
    :param n_series: the number of ``series`` entries.
    """
    n_measures = len(counting)
    per_period: list[Any] = []
    totals: list[Any] = []
    for position, row in enumerate(rows):
        where = f"event rows[{position}] (byValue {row.get('byValue')!r})"
        values = row.get("values")
        if not isinstance(values, list) or len(values) != n_measures:
            count = len(values) if isinstance(values, list) else values
            raise ValueError(
                f"{where}: values has {count} lists, expected {n_measures} (one per measure)"
            )
        for measure, measure_values in enumerate(values):
            if not isinstance(measure_values, list) or len(measure_values) != n_series:
                count = len(measure_values) if isinstance(measure_values, list) else measure_values
                raise ValueError(
                    f"{where}: values[{measure}] has {count} entries, "
                    f"expected {n_series} (one per series date)"
                )
            per_period.extend(measure_values)
        row_totals = row.get("sum")
        if row_totals is None:
            totals.extend([None] * n_measures)
        elif not isinstance(row_totals, list) or len(row_totals) != n_measures:
            count = len(row_totals) if isinstance(row_totals, list) else row_totals
            raise ValueError(
                f"{where}: sum has {count} entries, expected {n_measures} (one per measure)"
            )
        else:
            totals.extend(row_totals)

    def period_at(index: int) -> str:
        row, rest = divmod(index, n_measures * n_series)
        return f"event rows[{row}].values[{rest // n_series}][{rest % n_series}]"

    def total_at(index: int) -> str:
        row, measure = divmod(index, n_measures)
        return f"event rows[{row}].sum[{measure}]"

    shape = (len(rows), n_measures)
    period_values, period_null = json_numbers(per_period, integral=False, where=period_at)
    total_values, total_null = json_numbers(totals, integral=False, where=total_at)
    values = np.concatenate(
        [period_values.reshape(*shape, n_series), total_values.reshape(*shape, 1)], axis=2
    )
    null = np.concatenate(
        [period_null.reshape(*shape, n_series), total_null.reshape(*shape, 1)], axis=2
    )
    fractional = counting[None, :, None] & ~null & (values != np.round(values))
    if fractional.any():
        at_row, at_measure, at_block = (int(axis[0]) for axis in np.nonzero(fractional))
        place = (
            total_at(at_row * n_measures + at_measure)
            if at_block == n_series
            else period_at((at_row * n_measures + at_measure) * n_series + at_block)
        )
        raise ValueError(
            f"{place} is {float(values[at_row, at_measure, at_block])!r}, not a whole number, "
            f"although measure {at_measure} counts"
        )
    return values.ravel(), null.ravel()
