"""A funnel analysis response (spec 4.16) as one long Arrow table: one row per (split value,
date column, step), flagged overall or split value, ``$ALL`` or day. The response holds only
user counts; the rates are derived here (conversion vs the previous step, completion vs the
first step, null where the denominator is 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from airflow_provider_analytics.client.answers import (
    AnswerShapeError,
    FunnelAnswer,
    FunnelRow,
    as_model,
)
from airflow_provider_analytics.core.report_dates import ALL_DATES_LABEL
from airflow_provider_analytics.reports.schemas import (
    FUNNEL_SCHEMA,
    OVERALL_BY_VALUE,
    event_id_of,
    gathered,
    label_text,
    report_time_columns,
    steps_express_matches,
    table_from_columns,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


def funnel_table(response: Mapping[str, Any] | FunnelAnswer, *, timezone: str = "UTC") -> pa.Table:
    """Flatten a funnel analysis response into one row per (split value, date, step), with
    the columns of :data:`~airflow_provider_analytics.reports.schemas.FUNNEL_SCHEMA` (for an
    empty response too).

    The response is decoded through
    :class:`~airflow_provider_analytics.client.answers.FunnelAnswer` first. Medians are paired
    with steps by position (entry ``k`` of ``medianConvertedTime`` is step ``k+1`` to ``k+2``),
    so a ``stepsExpress`` or step named differently in a row raises ``AnswerShapeError``.

    :param response: the decoded JSON body of ``POST /uba/api/funnels/analyze``, or its
        declared answer.
    :param timezone: the project's time zone, in which ``reportUpdateTime`` is written.
    """
    answer = as_model(FunnelAnswer, "analyze_funnel", response)
    steps = answer.steps
    by_values, converted, median = _gather_cells(answer, steps)

    size = converted.size
    row_at, date_at, step_at = np.indices(converted.shape).reshape(3, size)

    is_all = np.array([label == ALL_DATES_LABEL for label in answer.dateList], dtype=bool)
    overall = by_values[:1] == [OVERALL_BY_VALUE]  # only the first row can be the overall one
    counts = converted.astype(np.float64)  # rates: null where the denominator is 0
    previous = np.concatenate([np.zeros_like(counts[..., :1]), counts[..., :-1]], axis=-1)
    first = np.broadcast_to(counts[..., :1], counts.shape)

    columns = {
        "by_field": pa.repeat(pa.scalar(label_text(answer.byField) or None, pa.string()), size),
        "by_value": gathered(by_values, pa.string(), row_at),
        "is_overall": pa.array((row_at == 0) & overall),
        "date": gathered(answer.days, pa.date32(), date_at),
        "is_all_dates": pa.array(is_all[date_at]),
        "step_number": pa.array(step_at + 1),
        "step_expression": gathered(steps, pa.string(), step_at),
        "step_event": gathered([event_id_of(step) for step in steps], pa.string(), step_at),
        "converted_users": pa.array(converted.ravel()),
        "conversion_rate": _rate(counts, previous),
        "completion_rate": _rate(counts, first),
        "median_seconds_to_next": median,
        **report_time_columns(answer.reportUpdateTime, timezone, size, what="funnel"),
    }
    return table_from_columns(FUNNEL_SCHEMA, columns)


def _rate(counts: np.ndarray, denominator: np.ndarray) -> pa.Array:
    null = denominator == 0
    rate = np.divide(counts, denominator, out=np.zeros_like(counts), where=~null)
    return pa.array(rate.ravel(), pa.float64(), mask=null.ravel())


def _gather_cells(
    answer: FunnelAnswer, steps: Sequence[str]
) -> tuple[list[str | None], np.ndarray, pa.Array]:
    """Every row's split value, then its counts as a (row, date, step) cube and its medians
    in that order (null where not sent)."""
    n_rows, n_steps, n_dates = len(answer.rows), len(steps), len(answer.dateList)
    pairs = max(n_steps - 1, 0)
    no_medians = [None] * n_dates
    counts: list[int] = []
    medians: list[int | None] = []
    labels: list[str | None] = []
    for position, row in enumerate(answer.rows):
        label = label_text(answer.split_value(position))
        labels.append(label)
        _check_pairing(row, f"rows[{position}] (byValue {label!r})", steps)
        for step in row.stepsDetail:
            counts.extend(step.convertedUser)
        entries = row.medianConvertedTime or ()
        for entry in entries:
            medians.extend(entry.median or no_medians)
        medians.extend(no_medians * (pairs - len(entries) + 1))  # the last step has no pair
    converted = pa.array(counts, pa.int64()).to_numpy().reshape(n_rows, n_steps, n_dates)
    cube = np.arange(n_rows * n_steps * n_dates).reshape(n_rows, n_steps, n_dates)
    order = cube.transpose(0, 2, 1).ravel()  # the medians' positions in output order
    return labels, converted.transpose(0, 2, 1), pa.array(medians, pa.int64()).take(order)


def _check_pairing(row: FunnelRow, where: str, steps: Sequence[str]) -> None:
    for index, (detail, step) in enumerate(zip(row.stepsDetail, steps, strict=True)):
        if detail.expression is not None and event_id_of(detail.expression) != event_id_of(step):
            raise AnswerShapeError(
                f"analyze_funnel: {where}: stepsDetail[{index}] is {detail.expression!r}, but "
                f"step {index + 1} is {step!r}",
                operation="analyze_funnel",
            )
    for index, entry in enumerate(row.medianConvertedTime or ()):
        express = entry.stepsExpress
        if express is not None and not steps_express_matches(
            express, steps[index], steps[index + 1]
        ):
            raise AnswerShapeError(
                f"analyze_funnel: {where}: medianConvertedTime[{index}].stepsExpress is "
                f"{express!r}, but steps {index + 1} and {index + 2} are {steps[index]!r} and "
                f"{steps[index + 1]!r}",
                operation="analyze_funnel",
            )
