"""Event analysis responses -> tidy DataFrames (reports/event_frame.py): worked examples."""

from __future__ import annotations

import copy
import datetime as dt
import re

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_analytics.reports.frames import EVENT_SCHEMA, event_schema
from tests.report_frames import event_frame


def documented_request() -> dict:
    return {
        "measures": [
            {"expression": "event.$Anything", "aggregator": "TRIGGER_USER_COUNT"},
            {"expression": "event.purchase.amount", "aggregator": "SUM"},
        ],
        "byFields": [
            {"expression": "event.purchase.$city"},
            {"expression": "event.purchase.price", "buckets": [600, 800]},
        ],
        "crowds": ["$ALL"],
        "fromDate": "2024-01-01",
        "toDate": "2024-01-02",
        "unit": "DAY",
    }


def documented_response() -> dict:
    """The documentation's shape: `.unique` measure labels, bucket labels, the unknown label."""
    return {
        "measures": ["event.$Anything.unique", "event.purchase.amount.sum"],
        "byFields": ["event.purchase.$city", "event.purchase.price"],
        "series": ["2024-01-01", "2024-01-02"],
        "rows": [
            {"byValue": ["北京", "-∞~600"], "values": [[3, 4], [120.5, None]], "sum": [6, 120.5]},
            {"byValue": ["北京", "600~800"], "values": [[1, 0], [0, 700]], "sum": [1, 700]},
            {"byValue": ["上海", "800~+∞"], "values": [[2, 2], [900, 1800]], "sum": [3, 2700]},
            {"byValue": ["上海", "未知"], "values": [[0, 1], [None, None]], "sum": [1, None]},
        ],
        "numRows": 4,
        "reportUpdateTime": "2024-01-03 06:00:00",
    }


def cells(frame: pd.DataFrame, column: str) -> list:
    """A column as plain Python values with nulls as None."""
    return [None if value is pd.NA or value is None else value for value in frame[column].tolist()]


def test_worked_example_with_request() -> None:
    frame = event_frame(documented_response(), documented_request())
    first = frame.iloc[:6]

    assert len(frame) == 4 * 2 * (2 + 1)
    assert list(frame.columns) == [
        "by_event_purchase_city",
        "by_event_purchase_price",
        "by_event_purchase_price_lower",
        "by_event_purchase_price_upper",
        *EVENT_SCHEMA.names,
    ]
    assert cells(first, "measure_index") == [0, 0, 0, 1, 1, 1]
    assert (
        cells(first, "measure_label")
        == ["event.$Anything.unique"] * 3 + ["event.purchase.amount.sum"] * 3
    )
    assert (
        cells(first, "measure_expression")
        == ["event.$Anything"] * 3 + ["event.purchase.amount"] * 3
    )
    assert cells(first, "measure_aggregator") == ["TRIGGER_USER_COUNT"] * 3 + ["SUM"] * 3
    assert cells(first, "period") == ["2024-01-01", "2024-01-02", None] * 2
    assert (
        cells(first, "period_start")
        == [pd.Timestamp("2024-01-01", tz="UTC"), pd.Timestamp("2024-01-02", tz="UTC"), None] * 2
    )
    assert cells(first, "date") == [dt.date(2024, 1, 1), dt.date(2024, 1, 2), None] * 2
    assert cells(first, "is_total") == [False, False, True] * 2
    # distinct users are a count (int64 ``count``), a sum of amounts a ``value``
    assert cells(first, "count") == [3, 4, 6, None, None, None]
    assert cells(first, "value") == [None, None, None, 120.5, None, 120.5]
    assert cells(frame, "count")[-6:] == [0, 1, 1, None, None, None]
    assert cells(frame, "value")[-6:] == [None, None, None, None, None, None]
    assert set(cells(frame, "report_updated_at")) == {pd.Timestamp("2024-01-03 06:00:00Z")}


def test_times_are_read_in_the_project_time_zone() -> None:
    frame = event_frame(documented_response(), documented_request(), timezone="Asia/Shanghai")
    assert cells(frame, "period_start")[:3] == [
        pd.Timestamp("2023-12-31 16:00:00Z"),
        pd.Timestamp("2024-01-01 16:00:00Z"),
        None,
    ]
    assert cells(frame, "date")[:2] == [dt.date(2024, 1, 1), dt.date(2024, 1, 2)]
    assert set(cells(frame, "report_updated_at")) == {pd.Timestamp("2024-01-02 22:00:00Z")}


def test_a_counting_measure_with_a_fraction_is_refused() -> None:
    response = documented_response()
    response["rows"][0]["values"][0][1] = 2.5
    with pytest.raises(
        ValueError,
        match=r"rows\[0\]\.values\[0\]\[1\] is 2\.5, but measure 0 .* counts",
    ):
        event_frame(response, documented_request())


def test_bucket_bounds_and_unknown_label() -> None:
    frame = event_frame(documented_response(), documented_request())
    per_row = frame.iloc[::6]

    assert cells(per_row, "by_event_purchase_city") == ["北京", "北京", "上海", "上海"]
    assert cells(per_row, "by_event_purchase_price") == ["-∞~600", "600~800", "800~+∞", "未知"]
    assert cells(per_row, "by_event_purchase_price_lower") == [None, 600.0, 800.0, None]
    assert cells(per_row, "by_event_purchase_price_upper") == [600.0, 800.0, None, None]


def test_without_request_measures_are_read_from_labels_and_buckets_from_values() -> None:
    with_request = event_frame(documented_response(), documented_request())
    without = event_frame(documented_response())

    assert without.equals(with_request)


def test_request_strings_win_over_unreadable_labels() -> None:
    response = documented_response()
    response["measures"] = ["用户数", "金额"]

    with_request = event_frame(response, documented_request())
    without = event_frame(response)

    assert cells(with_request, "measure_label")[::3] == ["用户数", "金额"] * 4
    assert (
        cells(with_request, "measure_expression")[::3]
        == ["event.$Anything", "event.purchase.amount"] * 4
    )
    assert cells(without, "measure_expression")[::3] == ["用户数", "金额"] * 4
    assert cells(without, "measure_aggregator") == [None] * 24


def test_a_field_the_request_does_not_bucket_gets_no_bound_columns() -> None:
    request = documented_request()
    request["byFields"][1]["buckets"] = []

    frame = event_frame(documented_response(), request)

    assert "by_event_purchase_price_lower" not in frame.columns
    assert event_schema(request).names == list(frame.columns)


def test_a_bucketed_field_with_a_plain_value_is_refused() -> None:
    response = documented_response()
    response["rows"][2]["byValue"][1] = "expensive"

    with pytest.raises(
        ValueError, match=r"rows\[2\].*'expensive' of event.purchase.price is not a bucket"
    ):
        event_frame(response, documented_request())
    assert "by_event_purchase_price_lower" not in event_frame(response).columns


@pytest.mark.parametrize(
    ("period", "start"),
    [
        ("2024-01-01", dt.datetime(2024, 1, 1)),
        ("2024-01-01 13:00", dt.datetime(2024, 1, 1, 13)),
        ("2024-01-01 13:05:09", dt.datetime(2024, 1, 1, 13, 5, 9)),
        ("2024/01/01 13:05:09", dt.datetime(2024, 1, 1, 13, 5, 9)),
    ],
)
def test_period_formats(period, start) -> None:
    response = {
        "measures": ["event.search.TOTAL_COUNT"],
        "series": [period],
        "rows": [{"byValue": [], "values": [[7]], "sum": [7]}],
    }
    frame = event_frame(response)

    assert cells(frame, "period") == [period, None]
    assert cells(frame, "period_start") == [pd.Timestamp(start, tz="UTC"), None]
    assert cells(frame, "date") == [start.date(), None]
    assert cells(frame, "measure_aggregator") == ["TOTAL_COUNT"] * 2
    assert cells(frame, "report_updated_at") == [None, None]


def test_unsplit_response_has_the_fixed_schema() -> None:
    response = {
        "measures": ["event.search.unique"],
        "byFields": [],
        "series": ["2024-01-01"],
        "rows": [{"byValue": [], "values": [[None]], "sum": [None]}],
    }
    frame = event_frame(response)

    assert (
        pa.Table.from_pandas(frame, preserve_index=False).schema.remove_metadata() == EVENT_SCHEMA
    )
    assert cells(frame, "value") == [None, None]


def test_split_column_names_are_collision_safe_and_deterministic() -> None:
    request = {
        "measures": [{"expression": "event.search", "aggregator": "TOTAL_COUNT"}],
        "byFields": [
            {"expression": "event.a.b_c"},
            {"expression": "event.a.b.c"},
            {"expression": "event.x.lower"},
            {"expression": "event.X", "buckets": [1]},
            {"expression": "人"},
        ],
    }
    assert event_schema(request).names[:9] == [
        "by_event_a_b_c",
        "by_event_a_b_c_2",
        "by_event_x_lower",
        "by_event_x_2",
        "by_event_x_2_lower",
        "by_event_x_2_upper",
        "by_field",
        "measure_index",
        "measure_label",
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda r, q: r["rows"][1]["values"].pop(),
            r"rows\[1\]\.values has 1 entries, expected 2",
        ),
        (
            lambda r, q: r["rows"][2]["values"][1].append(5),
            r"rows\[2\].*values\[1\] has 3 entries, expected 2",
        ),
        (lambda r, q: r["rows"][3]["sum"].append(5), r"rows\[3\].*sum has 3 entries, expected 2"),
        (
            lambda r, q: r["rows"][0]["byValue"].pop(),
            r"rows\[0\]\.byValue has 1 entries, expected 2",
        ),
        (
            lambda r, q: q["measures"].pop(),
            r"measures has 2 entries, expected 1",
        ),
        (
            lambda r, q: q["byFields"].pop(),
            r"byFields has 2 entries, expected 1",
        ),
        (
            lambda r, q: r["rows"][1]["values"][0].__setitem__(1, "many"),
            r"rows\[1\]\.values\[0\]\[1\] must be a JSON number.*got 'many'",
        ),
        (
            lambda r, q: r["rows"][2]["sum"].__setitem__(0, [1]),
            r"rows\[2\]\.sum\[0\] must be a JSON number.*got a JSON array",
        ),
        (lambda r, q: r["series"].__setitem__(1, "Jan 2"), r"series\[1\] 'Jan 2' is not a date"),
        (  # one combination of split values twice: a sum over them would count it twice
            lambda r, q: r["rows"][1].__setitem__("byValue", ["北京", "-∞~600"]),
            r"rows\[1\]\.byValue \('北京', '-∞~600'\) repeats rows\[0\]'s",
        ),
    ],
)
def test_mismatched_lengths_raise_naming_row_and_lengths(change, message) -> None:
    response, request = copy.deepcopy(documented_response()), copy.deepcopy(documented_request())
    change(response, request)

    with pytest.raises(ValueError, match=message):
        event_frame(response, request)


def test_missing_sum_gives_null_totals() -> None:
    response = documented_response()
    del response["rows"][0]["sum"]

    frame = event_frame(response, documented_request())

    assert cells(frame, "count")[:6] == [3, 4, None, None, None, None]
    assert cells(frame, "value")[:6] == [None, None, None, 120.5, None, None]


def test_empty_result_keeps_the_request_schema() -> None:
    response = documented_response()
    response["rows"] = []
    request = documented_request()

    empty = event_frame(response, request)
    full = event_frame(documented_response(), request)

    assert len(empty) == 0
    assert list(empty.columns) == list(full.columns)
    assert empty.dtypes.equals(full.dtypes)
    for frame in (empty, full):
        assert pa.Table.from_pandas(
            frame, preserve_index=False
        ).schema.remove_metadata() == event_schema(request)


def test_event_schema_without_anything_is_the_unsplit_schema() -> None:
    assert event_schema() == EVENT_SCHEMA
    assert event_schema(response=documented_response()) == event_schema(documented_request())


def test_parquet_gets_clean_types(tmp_path) -> None:
    frame = event_frame(documented_response(), documented_request())
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "events.parquet")

    read_back = pq.read_table(tmp_path / "events.parquet")

    assert read_back.schema.remove_metadata() == event_schema(documented_request())
    assert read_back.column("count").null_count == 4 * 3
    assert read_back.column("value").null_count == 4 * 3 + 4
    assert read_back.column("period").null_count == 8
    assert read_back.column("by_event_purchase_price_lower").null_count == 2 * 6


@pytest.mark.parametrize(
    ("row", "place"), [(1, "rows[1].values[1][1]"), (2, "rows[2].sum[1]")], ids=["cell", "sum"]
)
def test_an_integer_a_double_cannot_hold_is_refused_by_its_place(row: int, place: str) -> None:
    from airflow_provider_analytics.client.answers import AnswerShapeError
    from airflow_provider_analytics.reports.event_frame import event_table

    response = documented_response()
    if place.endswith("sum[1]"):
        response["rows"][row]["sum"][1] = 2**53 + 1
    else:
        response["rows"][row]["values"][1][1] = 2**53 + 1
    with pytest.raises(AnswerShapeError, match=rf"{re.escape(place)} is {2**53 + 1}, beyond"):
        event_table(response, documented_request())
    response = documented_response()
    response["rows"][row]["values"][0][1] = 2**53 + 1  # a count holds it exactly
    assert event_table(response, documented_request()).num_rows == 24
