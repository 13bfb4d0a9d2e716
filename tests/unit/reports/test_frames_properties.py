"""Property tests of the report tables: responses of the spec's shape, generated at random.

Each property is checked against an independent, cell-by-cell reading of the generated
response: row counts, the rate definitions, every input number landing in exactly one
output cell, and the schema staying the same for empty results.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_analytics.reports.frames import FUNNEL_SCHEMA, event_schema
from tests.report_frames import event_frame, funnel_frame

FUNNEL_DATE_FORMATS = ("%Y/%m/%d 00:00:00", "%Y-%m-%d", "%Y-%m-%d 00:00:00")
SERIES_FORMATS = ("%Y-%m-%d", "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S", "%Y/%m/%d %H:%M:%S")
EVENT_IDS = ("$startup", "$pageview", "search", "add_to_cart", "purchase", "share")
MEASURE_LABELS = ("event.$Anything.unique", "event.purchase.total", "event.purchase.amount.sum")
EXACT_INTEGERS = st.integers(min_value=-(2**53), max_value=2**53)
PLAIN_FLOATS = st.floats(allow_nan=False, allow_infinity=False)
MAYBE_NUMBER = st.none() | EXACT_INTEGERS | PLAIN_FLOATS


def as_python(value: Any) -> Any:
    return None if value is pd.NA or value is None else value


def column(frame: pd.DataFrame, name: str) -> list[Any]:
    return [as_python(value) for value in frame[name].tolist()]


@dataclass
class FunnelCase:
    response: dict[str, Any]
    counts: list[list[list[int]]]  # [row][step][date]
    medians: list[list[list[int | None]]]  # [row][pair][date], None where not sent


@st.composite
def funnel_cases(draw: st.DrawFn) -> FunnelCase:
    n_steps = draw(st.integers(1, 4))
    n_days = draw(st.integers(0, 3))
    with_all = draw(st.booleans())
    date_format = draw(st.sampled_from(FUNNEL_DATE_FORMATS))
    start = date(2019, 6, 17)
    dates = [(start + timedelta(days=day)).strftime(date_format) for day in range(n_days)]
    date_list = ["$ALL", *dates] if with_all else dates
    steps = [
        f"event.{event}"
        for event in draw(st.lists(st.sampled_from(EVENT_IDS), min_size=n_steps, max_size=n_steps))
    ]
    split = draw(st.lists(st.text(max_size=4), max_size=3, unique=True))  # one row a value
    by_values = ["-1", *split] if draw(st.booleans()) else split
    bare_express = draw(st.booleans())

    counts, medians, rows = [], [], []
    for by_value in by_values:
        row_counts = [
            draw(st.lists(st.integers(0, 6), min_size=len(date_list), max_size=len(date_list)))
            for _ in steps
        ]
        row_medians, entries = [], []
        for pair in range(n_steps - 1):
            whole_null = draw(st.booleans())
            median = (
                None
                if whole_null
                else draw(
                    st.lists(
                        st.none() | st.integers(0, 10**6),
                        min_size=len(date_list),
                        max_size=len(date_list),
                    )
                )
            )
            row_medians.append([None] * len(date_list) if median is None else median)
            left, right = steps[pair], steps[pair + 1]
            if bare_express:
                left, right = left.removeprefix("event."), right.removeprefix("event.")
            entries.append({"stepsExpress": f"{left}~{right}", "median": median})
        counts.append(row_counts)
        medians.append(row_medians)
        rows.append(
            {
                "byValue": by_value,
                "stepsDetail": [
                    {"expression": step, "convertedUser": step_counts}
                    for step, step_counts in zip(steps, row_counts, strict=True)
                ],
                "medianConvertedTime": entries,
            }
        )
    response = {
        "dateList": date_list,
        "byField": draw(st.none() | st.just("user.$city")),
        "byValues": by_values,
        "stepEvents": steps,
        "rows": rows,
        "reportUpdateTime": "2019-06-20 01:02:03",
    }
    return FunnelCase(response, counts, medians)


@settings(max_examples=100, deadline=None)
@given(funnel_cases())
def test_funnel_rows_rates_and_numbers_round_trip(case: FunnelCase) -> None:
    frame = funnel_frame(case.response)
    date_list = case.response["dateList"]
    n_rows, n_dates, n_steps = len(case.counts), len(date_list), len(case.response["stepEvents"])

    assert len(frame) == n_rows * n_dates * n_steps
    assert (
        pa.Table.from_pandas(frame, preserve_index=False).schema.remove_metadata() == FUNNEL_SCHEMA
    )

    converted = column(frame, "converted_users")
    conversion = column(frame, "conversion_rate")
    completion = column(frame, "completion_rate")
    median = column(frame, "median_seconds_to_next")
    overall = column(frame, "is_overall")
    for row in range(n_rows):
        for day in range(n_dates):
            for step in range(n_steps):
                at = (row * n_dates + day) * n_steps + step
                counts = [case.counts[row][k][day] for k in range(n_steps)]
                assert converted[at] == counts[step]
                expected_conversion = (
                    None if step == 0 or counts[step - 1] == 0 else counts[step] / counts[step - 1]
                )
                expected_completion = None if counts[0] == 0 else counts[step] / counts[0]
                assert conversion[at] == expected_conversion
                assert completion[at] == expected_completion
                expected_median = case.medians[row][step][day] if step < n_steps - 1 else None
                assert median[at] == expected_median
                assert overall[at] == (row == 0 and case.response["byValues"][0] == "-1")

    sent_counts = [count for row in case.counts for step in row for count in step]
    sent_medians = [m for row in case.medians for pair in row for m in pair if m is not None]
    assert Counter(converted) == Counter(sent_counts)
    assert Counter(m for m in median if m is not None) == Counter(sent_medians)


@dataclass
class EventCase:
    response: dict[str, Any]
    request: dict[str, Any]
    bounds: list[list[tuple[float | None, float | None] | None]]  # [row][field], None if unbucketed


@st.composite
def bucket_labels(draw: st.DrawFn) -> tuple[str, tuple[float | None, float | None]]:
    lower = draw(st.none() | PLAIN_FLOATS)
    upper = draw(st.none() | PLAIN_FLOATS)
    if draw(st.integers(0, 5)) == 0:
        return "未知", (None, None)
    text = f"{'-∞' if lower is None else repr(lower)}~{'+∞' if upper is None else repr(upper)}"
    return text, (lower, upper)


@st.composite
def event_cases(draw: st.DrawFn) -> EventCase:
    bucketed = draw(st.lists(st.booleans(), max_size=3))
    expressions = [f"event.purchase.p{field}" for field in range(len(bucketed))]
    n_measures = draw(st.integers(1, 3))
    labels = draw(
        st.lists(st.sampled_from(MEASURE_LABELS), min_size=n_measures, max_size=n_measures)
    )
    series_format = draw(st.sampled_from(SERIES_FORMATS))
    start = date(2024, 1, 1)
    series = [
        (start + timedelta(days=day)).strftime(series_format)
        for day in range(draw(st.integers(0, 4)))
    ]

    rows, bounds = [], []
    for _ in range(draw(st.integers(0, 4))):
        by_value, row_bounds = [], []
        for with_buckets in bucketed:
            if with_buckets:
                label, bound = draw(bucket_labels())
            else:
                label, bound = draw(st.text(max_size=4)), None
            by_value.append(label)
            row_bounds.append(bound)
        if by_value and by_value in [row["byValue"] for row in rows]:
            continue  # one row per combination of split values
        values = [
            draw(st.lists(MAYBE_NUMBER, min_size=len(series), max_size=len(series))) for _ in labels
        ]
        rows.append(
            {
                "byValue": by_value,
                "values": values,
                "sum": draw(st.lists(MAYBE_NUMBER, min_size=n_measures, max_size=n_measures)),
            }
        )
        bounds.append(row_bounds)
    request = {
        "measures": [
            {"expression": label.rsplit(".", 1)[0], "aggregator": "SUM"} for label in labels
        ],
        "byFields": [
            {"expression": expression, "buckets": [1, 2] if with_buckets else None}
            for expression, with_buckets in zip(expressions, bucketed, strict=True)
        ],
    }
    response = {
        "measures": labels,
        "byFields": expressions,
        "series": series,
        "rows": rows,
        "numRows": len(rows),
    }
    return EventCase(response, request, bounds)


@settings(max_examples=100, deadline=None)
@given(event_cases())
def test_event_rows_and_numbers_round_trip(case: EventCase) -> None:
    frame = event_frame(case.response, case.request)
    rows = case.response["rows"]
    n_measures, n_series = len(case.response["measures"]), len(case.response["series"])
    block = n_series + 1

    assert len(frame) == len(rows) * n_measures * block
    assert pa.Table.from_pandas(
        frame, preserve_index=False
    ).schema.remove_metadata() == event_schema(case.request)

    value = column(frame, "value")
    is_total = column(frame, "is_total")
    measure_index = column(frame, "measure_index")
    sent = []
    for row_position, row in enumerate(rows):
        for measure in range(n_measures):
            cells = [*row["values"][measure], row["sum"][measure]]
            sent.extend(float(cell) for cell in cells if cell is not None)
            for period, cell in enumerate(cells):
                at = (row_position * n_measures + measure) * block + period
                assert value[at] == (None if cell is None else float(cell))
                assert is_total[at] == (period == n_series)
                assert measure_index[at] == measure
    assert Counter(v for v in value if v is not None) == Counter(sent)


@settings(max_examples=100, deadline=None)
@given(event_cases())
def test_event_split_columns_and_bounds(case: EventCase) -> None:
    frame = event_frame(case.response, case.request)
    names = [name for name in event_schema(case.request).names if name.startswith("by_")]
    block = len(case.response["measures"]) * (len(case.response["series"]) + 1)

    assert len(names) == len(set(names))
    for row_position, row in enumerate(case.response["rows"]):
        block_rows = frame.iloc[row_position * block : (row_position + 1) * block]
        output = {name: set(column(block_rows, name)) for name in names}
        fields = zip(row["byValue"], case.bounds[row_position], strict=True)
        for field, (label, bound) in enumerate(fields):
            name = f"by_event_purchase_p{field}"
            assert output[name] == {label}
            if bound is None:
                assert f"{name}_lower" not in output
            else:
                assert output[f"{name}_lower"] == {bound[0]}
                assert output[f"{name}_upper"] == {bound[1]}


@settings(max_examples=60, deadline=None)
@given(event_cases(), funnel_cases())
def test_empty_results_keep_the_schema(event_case: EventCase, funnel_case: FunnelCase) -> None:
    full_event = event_frame(event_case.response, event_case.request)
    full_funnel = funnel_frame(funnel_case.response)
    empty_event = event_frame({**event_case.response, "rows": []}, event_case.request)
    empty_funnel = funnel_frame({**funnel_case.response, "rows": [], "byValues": []})

    assert len(empty_event) == len(empty_funnel) == 0
    assert empty_event.dtypes.equals(full_event.dtypes)
    assert empty_funnel.dtypes.equals(full_funnel.dtypes)
    assert list(empty_event.columns) == list(full_event.columns)
    assert list(empty_funnel.columns) == list(full_funnel.columns)


def test_report_tables_as_dataframes_keep_arrow_types_and_hold_no_object_column() -> None:
    from airflow_provider_analytics.reports.frames import as_dataframes, funnel_tables

    response = {
        "dateList": ["$ALL", "2024-01-01"],
        "byValues": ["-1"],
        "stepEvents": ["event.a", "event.b"],
        "rows": [
            {
                "byValue": "-1",
                "stepsDetail": [
                    {"expression": "event.a", "convertedUser": [4, 4]},
                    {"expression": "event.b", "convertedUser": [1, 1]},
                ],
                "medianConvertedTime": [{"stepsExpress": "a~b", "median": [None, 30]}],
            }
        ],
    }
    tables = funnel_tables(response)
    frames = as_dataframes(tables)
    assert set(frames) == set(tables)
    for name, frame in frames.items():
        assert len(frame) == tables[name].num_rows
        assert all(isinstance(dtype, pd.ArrowDtype) for dtype in frame.dtypes), name
    assert frames["funnel"]["converted_users"].tolist() == [4, 1]
    assert frames["funnel"]["median_seconds_to_next"].tolist()[0] == 30
