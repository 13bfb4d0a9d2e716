"""A funnel analysis response (spec 4.16) as one long Arrow table.

One output row per (split value, date column, step), in that order, with flags telling the
overall row from split values and the ``$ALL`` column from days; :mod:`.grains` cuts it
into the report tables, one grain each. The response holds only user counts; the rates
are derived here: conversion against the previous step, completion against the first step,
both null where the denominator is 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from airflow_provider_analytics.tabular.labels import (
    ALL_DATES_LABEL,
    OVERALL_BY_VALUE,
    event_id_of,
    label_text,
    parse_funnel_date,
    steps_express_matches,
)
from airflow_provider_analytics.tabular.schemas import (
    FUNNEL_SCHEMA,
    gathered,
    json_numbers,
    json_object,
    repeated,
    report_updated_at,
    report_updated_at_text,
    table_from_columns,
    with_nulls,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


@dataclass(frozen=True)
class _FunnelCells:
    """The response's numbers as (split row, step, date column) cubes."""

    by_values: list[str | None]
    converted: np.ndarray
    median: np.ndarray
    median_null: np.ndarray


def funnel_table(response: Mapping[str, Any], *, timezone: str = "UTC") -> pa.Table:
    """Flatten a funnel analysis response into one row per (split value, date, step).

    Columns and types are :data:`~airflow_provider_analytics.tabular.schemas.FUNNEL_SCHEMA`
    (documented in ``docs/report_tables.md``); a response without rows gives an empty table
    with the same columns. Medians are paired with steps by position (entry ``k`` of
    ``medianConvertedTime`` is step ``k+1`` to ``k+2``); a ``stepsExpress`` that names a
    different pair is an error, since the pairing would then be wrong.

    :param response: the decoded JSON body of ``POST /uba/api/funnels/analyze``.
    :param timezone: the project's time zone, in which ``reportUpdateTime`` is written.
    :raises ValueError: when the response's lengths disagree (steps, dates, medians,
        split values), a count is missing or not a whole number, or a date label is not
        in an accepted format; the message names the row and the lengths.
    """
    date_labels = list(response.get("dateList") or [])
    rows = list(response.get("rows") or [])
    steps = _step_expressions(response, rows)
    cells = _gather_cells(rows, steps, len(date_labels), response.get("byValues"))

    n_rows, n_steps, n_dates = cells.converted.shape
    size = n_rows * n_dates * n_steps
    row_at = np.repeat(np.arange(n_rows), n_dates * n_steps)
    date_at = np.tile(np.repeat(np.arange(n_dates), n_steps), n_rows)
    step_at = np.tile(np.arange(n_steps), n_rows * n_dates)

    is_all = np.array([label == ALL_DATES_LABEL for label in date_labels], dtype=bool)
    dates = [
        None if all_dates else parse_funnel_date(label, what=f"funnel dateList[{position}]")
        for position, (label, all_dates) in enumerate(zip(date_labels, is_all, strict=True))
    ]
    is_overall = np.array(
        [
            position == 0 and value == OVERALL_BY_VALUE
            for position, value in enumerate(cells.by_values)
        ],
        dtype=bool,
    )
    conversion, conversion_null, completion, completion_null = _rates(cells.converted)

    def in_output_order(cube: np.ndarray) -> np.ndarray:
        return np.transpose(cube, (0, 2, 1)).ravel()

    columns = {
        "by_field": repeated(label_text(response.get("byField")) or None, pa.string(), size),
        "by_value": gathered(cells.by_values, pa.string(), row_at),
        "is_overall": pa.array(is_overall[row_at]),
        "date": gathered(dates, pa.date32(), date_at),
        "is_all_dates": pa.array(is_all[date_at]),
        "step_number": pa.array(step_at + 1),
        "step_expression": gathered(steps, pa.string(), step_at),
        "step_event": gathered([event_id_of(step) for step in steps], pa.string(), step_at),
        "converted_users": pa.array(in_output_order(cells.converted)),
        "conversion_rate": with_nulls(
            in_output_order(conversion), in_output_order(conversion_null), pa.float64()
        ),
        "completion_rate": with_nulls(
            in_output_order(completion), in_output_order(completion_null), pa.float64()
        ),
        "median_seconds_to_next": with_nulls(
            in_output_order(cells.median), in_output_order(cells.median_null), pa.int64()
        ),
        "report_updated_at": report_updated_at(response, timezone, size, what="funnel"),
        "report_updated_at_text": report_updated_at_text(response, size),
    }
    return table_from_columns(FUNNEL_SCHEMA, columns)


def _step_expressions(response: Mapping[str, Any], rows: Sequence[Any]) -> list[str]:
    """The steps in order: ``stepEvents``, or the first row's ``stepsDetail`` without it."""
    step_events = response.get("stepEvents")
    if step_events is not None:
        return [str(step) for step in step_events]
    if not rows:
        return []
    details = json_object(rows[0], "funnel rows[0]").get("stepsDetail") or []
    return [
        str(json_object(detail, "funnel rows[0].stepsDetail").get("expression"))
        for detail in details
    ]


def _gather_cells(
    rows: Sequence[Any], steps: Sequence[str], n_dates: int, by_values: Sequence[Any] | None
) -> _FunnelCells:
    """Check every row's shape against the steps and dates and gather its numbers."""
    n_steps = len(steps)
    if by_values is not None and len(by_values) != len(rows):
        raise ValueError(
            f"funnel byValues has {len(by_values)} entries but rows has {len(rows)}; "
            "they must be one per split value"
        )
    labels: list[str | None] = []
    counts: list[Any] = []
    medians: list[Any] = []
    for position, raw_row in enumerate(rows):
        row = json_object(raw_row, f"funnel rows[{position}]")
        listed = None if by_values is None else by_values[position]
        label = label_text(row.get("byValue", listed))
        where = f"funnel rows[{position}] (byValue {label!r})"
        if by_values is not None and label_text(listed) != label:
            raise ValueError(f"{where} does not match byValues[{position}] {listed!r}")
        labels.append(label)
        counts.extend(_row_counts(row, where, steps, n_dates))
        medians.extend(_row_medians(row, where, steps, n_dates))

    n_rows = len(labels)

    def count_at(index: int) -> str:
        row, rest = divmod(index, n_steps * n_dates)
        return f"funnel rows[{row}].stepsDetail[{rest // n_dates}].convertedUser[{rest % n_dates}]"

    def median_at(index: int) -> str:
        row, rest = divmod(index, (n_steps - 1) * n_dates)
        return f"funnel rows[{row}].medianConvertedTime[{rest // n_dates}].median[{rest % n_dates}]"

    converted, converted_null = json_numbers(counts, integral=True, where=count_at)
    if converted_null.any():
        raise ValueError(
            f"{count_at(int(np.flatnonzero(converted_null)[0]))} is null, expected a user count"
        )
    median, median_null = json_numbers(medians, integral=True, where=median_at)

    pairs = max(n_steps - 1, 0)
    median_cube = np.zeros((n_rows, n_steps, n_dates))
    null_cube = np.ones((n_rows, n_steps, n_dates), dtype=bool)
    median_cube[:, :pairs, :] = median.reshape(n_rows, pairs, n_dates)
    null_cube[:, :pairs, :] = median_null.reshape(n_rows, pairs, n_dates)
    return _FunnelCells(
        by_values=labels,
        converted=converted.astype(np.int64).reshape(n_rows, n_steps, n_dates),
        median=np.where(null_cube, 0, median_cube).astype(np.int64),
        median_null=null_cube,
    )


def _row_counts(
    row: Mapping[str, Any], where: str, steps: Sequence[str], n_dates: int
) -> list[Any]:
    """One row's ``convertedUser`` numbers, step by step, after checking their shape."""
    details = row.get("stepsDetail")
    if not isinstance(details, list) or len(details) != len(steps):
        count = len(details) if isinstance(details, list) else details
        raise ValueError(
            f"{where}: stepsDetail has {count} entries, expected {len(steps)} (one per step)"
        )
    counts: list[Any] = []
    for index, (raw_detail, step) in enumerate(zip(details, steps, strict=True)):
        detail = json_object(raw_detail, f"{where} stepsDetail[{index}]")
        expression = detail.get("expression")
        if expression is not None and event_id_of(str(expression)) != event_id_of(step):
            raise ValueError(
                f"{where}: stepsDetail[{index}] is {expression!r}, but step {index + 1} is {step!r}"
            )
        converted = detail.get("convertedUser")
        if not isinstance(converted, list) or len(converted) != n_dates:
            count = len(converted) if isinstance(converted, list) else converted
            raise ValueError(
                f"{where}: stepsDetail[{index}].convertedUser has {count} entries, "
                f"expected {n_dates} (one per dateList entry)"
            )
        counts.extend(converted)
    return counts


def _row_medians(
    row: Mapping[str, Any], where: str, steps: Sequence[str], n_dates: int
) -> list[Any]:
    """One row's median seconds per step pair (``None`` where not sent), after checking them."""
    pairs = max(len(steps) - 1, 0)
    entries = row.get("medianConvertedTime")
    if entries is None:
        return [None] * (pairs * n_dates)
    if not isinstance(entries, list) or len(entries) != pairs:
        count = len(entries) if isinstance(entries, list) else entries
        raise ValueError(
            f"{where}: medianConvertedTime has {count} entries, expected {pairs} "
            f"(one fewer than the {len(steps)} steps)"
        )
    medians: list[Any] = []
    for index, raw_entry in enumerate(entries):
        entry = json_object(raw_entry, f"{where} medianConvertedTime[{index}]")
        express = entry.get("stepsExpress")
        if express is not None and not steps_express_matches(
            str(express), steps[index], steps[index + 1]
        ):
            raise ValueError(
                f"{where}: medianConvertedTime[{index}].stepsExpress is {express!r}, but steps "
                f"{index + 1} and {index + 2} are {steps[index]!r} and {steps[index + 1]!r}"
            )
        median = entry.get("median")
        if median is None:
            medians.extend([None] * n_dates)
        elif not isinstance(median, list) or len(median) != n_dates:
            count = len(median) if isinstance(median, list) else median
            raise ValueError(
                f"{where}: medianConvertedTime[{index}].median has {count} entries, "
                f"expected {n_dates} (one per dateList entry)"
            )
        else:
            medians.extend(median)
    return medians


def _rates(converted: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Conversion (vs previous step) and completion (vs first step) rates with their null masks.

    :param converted: user counts shaped (split row, step, date column).
    """
    counts = converted.astype(np.float64)
    previous = np.concatenate([np.zeros_like(counts[:, :1, :]), counts[:, :-1, :]], axis=1)
    first = np.broadcast_to(counts[:, :1, :], counts.shape)
    conversion_null = previous == 0
    completion_null = first == 0
    conversion = np.divide(counts, previous, out=np.zeros_like(counts), where=~conversion_null)
    completion = np.divide(counts, first, out=np.zeros_like(counts), where=~completion_null)
    return conversion, conversion_null, completion, completion_null
