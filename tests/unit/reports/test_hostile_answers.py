"""Hostile answers and arguments given to the report tables: each is refused by name."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_provider_analytics.client.answers import AnswerShapeError
from airflow_provider_analytics.core.errors import AnalyticsValidationError
from airflow_provider_analytics.reports.frames import event_tables, funnel_tables
from airflow_provider_analytics.reports.job import date_windows, event_headline, funnel_headline


def funnel_answer() -> dict:
    return {
        "dateList": ["$ALL", "2024-05-01"],
        "stepEvents": ["event.a", "event.b"],
        "rows": [
            {
                "byValue": "-1",
                "stepsDetail": [{"convertedUser": [3, 3]}, {"convertedUser": [1, 1]}],
            }
        ],
        "reportUpdateTime": "2024-05-02 08:00:00",
    }


def event_answer() -> dict:
    return {
        "series": ["2024-05-01"],
        "measures": ["event.a.TOTAL_COUNT"],
        "rows": [{"byValue": [], "values": [[5]], "sum": [5]}],
        "reportUpdateTime": "2024-05-02 08:00:00",
    }


@pytest.mark.parametrize("zone", ["Mars/Olympus", "", "UTC\x00", "\ud800", 8])
def test_a_timezone_that_is_no_zone_is_refused_by_name(zone: object) -> None:
    for tables, answer in ((funnel_tables, funnel_answer()), (event_tables, event_answer())):
        with pytest.raises(AnalyticsValidationError, match="timezone: must be a time zone"):
            tables(answer, timezone=zone)  # type: ignore[operator]


def test_an_event_answer_without_measures_or_request_has_one_unnamed_measure_per_number() -> None:
    answer = {"series": ["2024-05-01"], "rows": [{"values": [[5]], "sum": [6]}]}
    table = event_tables(answer)["events"]
    assert table.select(["measure_index", "measure_label", "count", "value"]).to_pylist() == [
        {"measure_index": 0, "measure_label": None, "count": None, "value": 5.0}
    ]


def test_an_event_answer_without_measures_whose_rows_differ_is_refused_by_name() -> None:
    answer = {
        "series": ["2024-05-01"],
        "rows": [{"values": [[5]], "sum": [5]}, {"values": [[5], [7]], "sum": [5, 6]}],
    }
    with pytest.raises(AnswerShapeError, match=r"rows\[1\]\.values has 2 entries, expected 1"):
        event_tables(answer)


@pytest.mark.parametrize(
    ("request_body", "refusal"),
    [
        ({"measures": "abc"}, "request measures: must be an array"),
        ({"measures": [], "byFields": 5}, "request byFields: must be an array"),
        ({"fromDate": 20240501, "toDate": 20240502}, "fromDate: must be a date written"),
        ({"fromDate": "2024-13-01", "toDate": "2024-05-01"}, "fromDate: must be a date that"),
        ({"fromDate": "2024-05-02", "toDate": "2024-05-01"}, "toDate: must not be before"),
        ({"measures": [{"expression": "\ud800"}]}, r"measures\[0\]\.expression: must not"),
        ({"measures": [{"expression": 5}]}, r"measures\[0\]\.expression: must be a string"),
        ({"measures": [{"aggregator": ["SUM"]}]}, r"measures\[0\]\.aggregator: must be a"),
    ],
)
def test_a_request_of_the_wrong_shape_is_refused_as_the_request(
    request_body: dict, refusal: str
) -> None:
    request = {"measures": [{"expression": "event.a", "aggregator": "TOTAL_COUNT"}]}
    with pytest.raises(AnalyticsValidationError, match=refusal):
        event_tables(event_answer(), {**request, **request_body})


def _with_row_label(label: str) -> dict:
    answer = funnel_answer()
    answer["rows"][0]["byValue"] = label
    return answer


@pytest.mark.parametrize(
    ("tables", "answer", "field"),
    [
        (funnel_tables, _with_row_label("\ud800"), r"rows\[0\]\.byValue"),
        (funnel_tables, {**funnel_answer(), "byField": "user.\udc80"}, "byField"),
        (
            funnel_tables,
            {**funnel_answer(), "stepEvents": ["event.\ud800", "b"]},
            r"stepEvents\[0\]",
        ),
        (funnel_tables, {**funnel_answer(), "reportUpdateTime": "\ud800"}, "reportUpdateTime"),
        (event_tables, {**event_answer(), "measures": ["event.\ud800.SUM"]}, r"measures\[0\]"),
    ],
)
def test_text_holding_a_lone_surrogate_is_refused_naming_the_field(
    tables: object, answer: dict, field: str
) -> None:
    """json.loads reads a lone surrogate escape; no UTF-8 (so no Arrow string) can hold it,
    which let UnicodeEncodeError escape from the table's columns."""
    with pytest.raises(AnswerShapeError, match=f"{field} holds a lone surrogate"):
        tables(answer)  # type: ignore[operator]


def test_a_label_with_a_nul_arrives_exactly() -> None:
    table = funnel_tables(_with_row_label("a\x00b"))["funnel_by_value"]
    assert set(table.column("by_value").to_pylist()) == {"a\x00b"}


def test_a_funnel_answer_that_names_its_steps_nowhere_is_refused() -> None:
    """Without stepEvents the steps are the first row's expressions; a missing one became
    the text "None" in step_expression and step_event."""
    answer = funnel_answer()
    del answer["stepEvents"]
    with pytest.raises(AnswerShapeError, match=r"stepEvents is missing, and rows\[0\] does not"):
        funnel_tables(answer)
    answer["rows"][0]["stepsDetail"][0]["expression"] = "event.a"
    answer["rows"][0]["stepsDetail"][1]["expression"] = "event.b"
    table = funnel_tables(answer)["funnel"]
    assert table.column("step_expression").to_pylist() == ["event.a", "event.b"]


@pytest.mark.parametrize("label", ["600~1e400", "-1e999~5"])
def test_a_bucket_bound_beyond_a_double_is_no_open_side(label: str) -> None:
    """float("1e400") is inf: the bound became infinite, as an open side is not (null)."""
    answer = {**event_answer(), "byFields": ["event.a.x"]}
    answer["rows"] = [{"byValue": [label], "values": [[5]], "sum": [5]}]
    unbucketed = event_tables(answer)["events"]
    assert "by_event_a_x_lower" not in unbucketed.column_names  # read as text, as sent
    request = {
        "measures": [{"expression": "event.a", "aggregator": "TOTAL_COUNT"}],
        "byFields": [{"expression": "event.a.x", "buckets": [600]}],
    }
    with pytest.raises(AnswerShapeError, match="is not a bucket label"):
        event_tables(answer, request)


def test_headline_totals_beyond_int64_are_exact() -> None:
    """Arrow's int64 sum wrapped around: two split values of 2**62 events made -2**63."""
    answer = {**event_answer(), "byFields": ["x"]}
    answer["rows"] = [
        {"byValue": [value], "values": [[2**62]], "sum": [2**62]} for value in ("a", "b")
    ]
    (measure,) = event_headline(event_tables(answer))["measures"]
    assert measure["total"] == 2**63
    funnel = funnel_answer()
    funnel["rows"][0]["stepsDetail"] = [{"convertedUser": [2**62, 2**62]}] * 2
    totals = funnel_tables(funnel)["funnel_totals"]
    windows = {"funnel_totals": pa.concat_tables([totals, totals])}  # two query windows
    assert funnel_headline(windows)["first_step_users"] == 2**63


def test_windows_wider_than_any_range_or_at_the_calendars_end_do_not_overflow() -> None:
    """A window of 10**10 days, or one ending past 9999-12-31, let OverflowError escape."""
    assert date_windows("2024-01-01", "2024-01-05", 10**10) == [("2024-01-01", "2024-01-05")]
    assert date_windows("9999-12-29", "9999-12-31", 2) == [
        ("9999-12-29", "9999-12-30"),
        ("9999-12-31", "9999-12-31"),
    ]
    with pytest.raises(AnalyticsValidationError, match="fromDate: must be a date that exists"):
        date_windows("2024-13-01", "2024-12-31", 2)


def test_a_request_that_is_no_object_is_refused_by_name() -> None:
    with pytest.raises(AnalyticsValidationError, match="request: must be an object"):
        event_tables(event_answer(), "measures")  # type: ignore[arg-type]
