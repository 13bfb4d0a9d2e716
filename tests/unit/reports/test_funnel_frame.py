"""Funnel analysis responses -> tidy DataFrames (reports/funnel_frame.py): worked examples."""

from __future__ import annotations

import copy
import datetime as dt
import math

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_analytics.client.answers import AnswerShapeError
from airflow_provider_analytics.reports.frames import FUNNEL_SCHEMA
from tests.report_frames import funnel_frame

STEPS = ["event.$startup", "event.$pageview", "event.purchase"]


def documented_response() -> dict:
    """The documentation's shape: `$ALL` then slash dates, `-1` first, bare stepsExpress."""
    return {
        "dateList": ["$ALL", "2019/06/17 00:00:00", "2019/06/18 00:00:00"],
        "byField": "user.$city",
        "byValues": ["-1", "北京"],
        "stepEvents": list(STEPS),
        "rows": [
            {
                "byValue": "-1",
                "stepsDetail": [
                    {"expression": STEPS[0], "convertedUser": [100, 60, 40]},
                    {"expression": STEPS[1], "convertedUser": [50, 30, 20]},
                    {"expression": STEPS[2], "convertedUser": [10, 0, 10]},
                ],
                "medianConvertedTime": [
                    {"stepsExpress": "$startup~$pageview", "median": [120, None, 90]},
                    {"stepsExpress": "$pageview~purchase", "median": None},
                ],
            },
            {
                "byValue": "北京",
                "stepsDetail": [
                    {"expression": STEPS[0], "convertedUser": [20, 20, 0]},
                    {"expression": STEPS[1], "convertedUser": [0, 0, 0]},
                    {"expression": STEPS[2], "convertedUser": [0, 0, 0]},
                ],
                "medianConvertedTime": [
                    {"stepsExpress": "$startup~$pageview", "median": [None, None, None]},
                    {"stepsExpress": "$pageview~purchase", "median": [0, 0, 0]},
                ],
            },
        ],
        "reportUpdateTime": "2019-06-19 08:30:00",
    }


def cells(frame: pd.DataFrame, column: str) -> list:
    """A column as plain Python values with nulls as None."""
    return [None if value is pd.NA or value is None else value for value in frame[column].tolist()]


def test_overall_row_worked_example_in_output_order() -> None:
    frame = funnel_frame(documented_response())
    overall = frame[frame["by_value"] == "-1"]

    assert len(frame) == 2 * 3 * 3
    assert list(frame.columns) == FUNNEL_SCHEMA.names
    assert cells(overall, "is_all_dates") == [True] * 3 + [False] * 6
    assert (
        cells(overall, "date")
        == [None] * 3 + [dt.date(2019, 6, 17)] * 3 + [dt.date(2019, 6, 18)] * 3
    )
    assert cells(overall, "step_number") == [1, 2, 3] * 3
    assert cells(overall, "step_event") == ["$startup", "$pageview", "purchase"] * 3
    assert cells(overall, "step_expression") == STEPS * 3
    assert cells(overall, "converted_users") == [100, 50, 10, 60, 30, 0, 40, 20, 10]
    assert cells(overall, "conversion_rate") == [None, 0.5, 0.2, None, 0.5, 0.0, None, 0.5, 0.5]
    assert cells(overall, "completion_rate") == [1.0, 0.5, 0.1, 1.0, 0.5, 0.0, 1.0, 0.5, 0.25]
    assert cells(overall, "median_seconds_to_next") == [
        120,
        None,
        None,
        None,
        None,
        None,
        90,
        None,
        None,
    ]
    assert cells(overall, "is_overall") == [True] * 9
    assert set(cells(frame, "by_field")) == {"user.$city"}
    assert set(cells(frame, "report_updated_at")) == {pd.Timestamp("2019-06-19 08:30:00Z")}


def test_zero_denominators_give_null_rates_never_nan_or_inf() -> None:
    frame = funnel_frame(documented_response())
    beijing = frame[frame["by_value"] == "北京"]

    assert cells(beijing, "is_overall") == [False] * 9
    assert cells(beijing, "converted_users") == [20, 0, 0, 20, 0, 0, 0, 0, 0]
    assert cells(beijing, "conversion_rate") == [None, 0.0, None, None, 0.0, None, None, None, None]
    assert cells(beijing, "completion_rate") == [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, None, None, None]
    assert cells(beijing, "median_seconds_to_next") == [None, 0, None] * 3
    for column in ("conversion_rate", "completion_rate"):
        present = frame[column].dropna().astype(float)
        assert all(math.isfinite(value) for value in present)


def test_unsplit_funnel_has_null_by_field_and_accepts_dash_dates() -> None:
    response = {
        "dateList": ["$ALL", "2024-01-01", "2024-01-02 00:00:00"],
        "byField": None,
        "byValues": ["-1"],
        "stepEvents": STEPS[:2],
        "rows": [
            {
                "byValue": "-1",
                "stepsDetail": [
                    {"expression": STEPS[0], "convertedUser": [3, 2, 1]},
                    {"expression": STEPS[1], "convertedUser": [3, 1, 1]},
                ],
                "medianConvertedTime": [
                    {"stepsExpress": "event.$startup~event.$pageview", "median": [5, 6, 7]}
                ],
            }
        ],
    }
    frame = funnel_frame(response)

    assert cells(frame, "by_field") == [None] * 6
    assert (
        cells(frame, "date") == [None, None] + [dt.date(2024, 1, 1)] * 2 + [dt.date(2024, 1, 2)] * 2
    )
    assert cells(frame, "median_seconds_to_next") == [5, None, 6, None, 7, None]
    assert cells(frame, "conversion_rate") == [None, 1.0, None, 0.5, None, 1.0]
    assert cells(frame, "report_updated_at") == [None] * 6


def test_minus_one_later_in_the_split_list_is_a_real_value_not_the_overall_row() -> None:
    response = documented_response()
    response["byValues"] = ["-1", "-1"]
    response["rows"][1]["byValue"] = -1
    frame = funnel_frame(response)

    assert cells(frame, "by_value") == ["-1"] * 18
    assert cells(frame, "is_overall") == [True] * 9 + [False] * 9


@pytest.mark.parametrize(("first", "second"), [("北京", "北京"), (5, "5"), (1.5, "1.5")])
def test_a_split_value_given_to_two_rows_is_refused(first: object, second: object) -> None:
    """As the table writes them (``5`` and ``"5"`` are one text): two rows of one grain, which
    a sum over split values counts twice."""
    response = documented_response()
    response["rows"].append(copy.deepcopy(response["rows"][1]))
    response["byValues"] = ["-1", first, second]
    response["rows"][1]["byValue"], response["rows"][2]["byValue"] = first, second
    with pytest.raises(AnswerShapeError, match=r"rows\[2\]\.byValue .* repeats rows\[1\]'s"):
        funnel_frame(response)


def test_steps_come_from_steps_detail_when_step_events_are_missing() -> None:
    response = documented_response()
    del response["stepEvents"]
    del response["byValues"]

    frame = funnel_frame(response)

    assert cells(frame, "step_expression")[:3] == STEPS
    assert frame.equals(funnel_frame(documented_response()))


def test_rows_without_by_value_take_it_from_by_values() -> None:
    response = documented_response()
    for row in response["rows"]:
        del row["byValue"]

    assert funnel_frame(response).equals(funnel_frame(documented_response()))


def test_whole_median_missing_means_every_median_null() -> None:
    response = documented_response()
    for row in response["rows"]:
        del row["medianConvertedTime"]

    assert cells(funnel_frame(response), "median_seconds_to_next") == [None] * 18


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda r: r["rows"][1]["stepsDetail"].pop(),
            r"rows\[1\].*stepsDetail has 2 entries, expected 3",
        ),
        (
            lambda r: r["rows"][0]["stepsDetail"][2]["convertedUser"].pop(),
            r"rows\[0\].*stepsDetail\[2\]\.convertedUser has 2 entries, expected 3",
        ),
        (
            lambda r: r["rows"][1]["medianConvertedTime"].pop(),
            r"rows\[1\].*medianConvertedTime has 1 entries, expected 2",
        ),
        (
            lambda r: r["rows"][1]["medianConvertedTime"][1]["median"].append(4),
            r"rows\[1\].*medianConvertedTime\[1\]\.median has 4 entries, expected 3",
        ),
        (
            lambda r: r["byValues"].append("上海"),
            r"byValues has 3 entries, expected 2",
        ),
        (
            lambda r: r["byValues"].__setitem__(1, "上海"),
            r"rows\[1\]\.byValue '北京' differs from byValues\[1\]",
        ),
        (
            lambda r: r["rows"][0]["medianConvertedTime"][0].__setitem__(
                "stepsExpress", "$startup~purchase"
            ),
            r"rows\[0\].*stepsExpress is '\$startup~purchase'"
            r".*'event.\$startup' and 'event.\$pageview'",
        ),
        (
            lambda r: r["rows"][0]["stepsDetail"][1].__setitem__("expression", "event.search"),
            r"rows\[0\].*stepsDetail\[1\] is 'event.search', but step 2 is 'event.\$pageview'",
        ),
        (
            lambda r: r["rows"][0]["stepsDetail"][1]["convertedUser"].__setitem__(2, None),
            r"rows\[0\]\.stepsDetail\[1\]\.convertedUser\[2\] must be a JSON integer.*got None",
        ),
        (
            lambda r: r["rows"][1]["stepsDetail"][0]["convertedUser"].__setitem__(0, 2.5),
            r"rows\[1\]\.stepsDetail\[0\]\.convertedUser\[0\] must be a JSON integer.*got 2\.5",
        ),
        (
            lambda r: r["rows"][1]["medianConvertedTime"][1]["median"].__setitem__(1, "soon"),
            r"rows\[1\]\.medianConvertedTime\[1\]\.median\[1\] must be a JSON integer.*got 'soon'",
        ),
        (
            lambda r: r["dateList"].__setitem__(2, "06/18/2019"),
            r"dateList\[2\] '06/18/2019' is not a date",
        ),
        (
            lambda r: r["dateList"].__setitem__(1, "2019/06/17 12:00:00"),
            r"dateList\[1\] '2019/06/17 12:00:00' is not a whole day",
        ),
    ],
)
def test_malformed_responses_raise_naming_the_place_and_lengths(change, message) -> None:
    response = copy.deepcopy(documented_response())
    change(response)

    with pytest.raises(ValueError, match=message):
        funnel_frame(response)


def test_whole_float_counts_are_refused_since_counts_are_json_integers() -> None:
    """The platform's documents show counts only as JSON integers, so ``100.0`` is refused."""
    response = documented_response()
    response["rows"][0]["stepsDetail"][0]["convertedUser"] = [100.0, 60.0, 40.0]
    with pytest.raises(AnswerShapeError, match=r"convertedUser\[0\] must be a JSON integer"):
        funnel_frame(response)


@pytest.mark.parametrize(
    "response",
    [
        {"dateList": [], "rows": []},
        {
            "dateList": ["$ALL", "2019/06/17 00:00:00"],
            "byValues": [],
            "stepEvents": STEPS,
            "rows": [],
        },
    ],
)
def test_empty_results_have_the_same_columns_and_types(response) -> None:
    empty = funnel_frame(response)
    full = funnel_frame(documented_response())

    assert len(empty) == 0
    assert list(empty.columns) == list(full.columns)
    assert empty.dtypes.equals(full.dtypes)
    assert (
        pa.Table.from_pandas(empty, preserve_index=False).schema.remove_metadata() == FUNNEL_SCHEMA
    )


def test_parquet_gets_clean_types(tmp_path) -> None:
    frame = funnel_frame(documented_response())
    table = pa.Table.from_pandas(frame, preserve_index=False)
    pq.write_table(table, tmp_path / "funnel.parquet")

    read_back = pq.read_table(tmp_path / "funnel.parquet")
    read = read_back.schema.remove_metadata()

    assert table.schema.remove_metadata() == FUNNEL_SCHEMA
    assert read.field("date").type == pa.date32()
    assert read.field("report_updated_at").type == pa.timestamp("us", tz="UTC")
    assert read.field("median_seconds_to_next").type == pa.int64()
    assert read.field("conversion_rate").type == pa.float64()
    assert read.field("by_value").type == pa.string()
    assert read.field("is_overall").type == pa.bool_()
    assert read_back.column("conversion_rate").null_count == 3 + 7
    assert read_back.column("median_seconds_to_next").null_count == 7 + 6


def test_report_time_is_read_in_the_project_time_zone() -> None:
    frame = funnel_frame(documented_response(), timezone="Asia/Shanghai")
    assert set(cells(frame, "report_updated_at")) == {pd.Timestamp("2019-06-19 00:30:00Z")}


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("2019-07-30 09:59:06.345", "2019-07-30 09:59:06.345000+00:00"),
        ("2019-07-30 09:59:06", "2019-07-30 09:59:06+00:00"),
        ("2019-07-30", "2019-07-30 00:00:00+00:00"),
        ("2019/07/30 09:59:06", "2019-07-30 09:59:06+00:00"),
    ],
)
def test_report_update_time_in_every_documented_form(written: str, expected: str) -> None:
    response = copy.deepcopy(documented_response())
    response["reportUpdateTime"] = written
    frame = funnel_frame(response)
    assert {str(value) for value in frame["report_updated_at"]} == {expected}


def test_an_unreadable_report_update_time_is_logged_not_fatal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    response = copy.deepcopy(documented_response())
    response["reportUpdateTime"] = "yesterday"
    with caplog.at_level("WARNING"):
        frame = funnel_frame(response)
    assert len(frame) > 0
    assert frame["report_updated_at"].isna().all()
    assert set(frame["report_updated_at_text"]) == {"yesterday"}  # kept as sent
    assert "funnel reportUpdateTime 'yesterday' is not a date-time" in caplog.text
