"""Label strings of analysis responses and split-column names (reports/schemas.py)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from airflow_provider_analytics.core.report_dates import (
    parse_funnel_date,
    parse_report_datetime,
)
from airflow_provider_analytics.reports.schemas import (
    BucketBounds,
    column_slug,
    label_text,
    parse_bucket_label,
    plan_by_columns,
    report_time_columns,
    split_measure_label,
    steps_express_matches,
    table_from_columns,
)


@pytest.mark.parametrize(
    ("label", "bounds"),
    [
        ("-∞~600", BucketBounds(None, 600.0)),
        ("600~800", BucketBounds(600.0, 800.0)),
        ("800~+∞", BucketBounds(800.0, None)),
        ("800~∞", BucketBounds(800.0, None)),
        ("-2.5~-1", BucketBounds(-2.5, -1.0)),
        ("0.5 ~ 1e3", BucketBounds(0.5, 1000.0)),
        ("未知", BucketBounds(None, None)),
        (None, BucketBounds(None, None)),
        ("北京", None),
        ("600", None),
        ("+∞~600", None),
        ("600~-∞", None),
        ("a~b", None),
    ],
)
def test_bucket_labels(label, bounds) -> None:
    assert parse_bucket_label(label) == bounds


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2019-06-17", dt.datetime(2019, 6, 17)),
        ("2019-06-17 08:30", dt.datetime(2019, 6, 17, 8, 30)),
        ("2019-06-17 08:30:05", dt.datetime(2019, 6, 17, 8, 30, 5)),
        ("2019-07-30 09:59:06.345", dt.datetime(2019, 7, 30, 9, 59, 6, 345000)),
        ("2019-07-30 09:59:06.5", dt.datetime(2019, 7, 30, 9, 59, 6, 500000)),
        ("2019/06/17 08:30:05", dt.datetime(2019, 6, 17, 8, 30, 5)),
    ],
)
def test_report_datetimes(text, expected) -> None:
    assert parse_report_datetime(text, what="x") == expected


@pytest.mark.parametrize(
    "text",
    [
        "2019/06/17",
        "2019-6-17",
        "17/06/2019",
        "2019-06-17T08:30:05",
        "2019-06-17 08:30:05.",
        "2019-06-17 08:30:05.1234567",
        "2019-13-01",
        "",
        None,
        20190617,
    ],
)
def test_other_datetime_forms_are_refused_naming_the_value(text) -> None:
    with pytest.raises(ValueError, match=rf"series\[4\] {text!r} is not a date"):
        parse_report_datetime(text, what="series[4]")


def test_funnel_dates_are_whole_days() -> None:
    assert parse_funnel_date("2019/06/17 00:00:00", what="d") == dt.date(2019, 6, 17)
    assert parse_funnel_date("2019-06-17", what="d") == dt.date(2019, 6, 17)
    assert parse_funnel_date("2019-06-17 00:00:00", what="d") == dt.date(2019, 6, 17)
    with pytest.raises(ValueError, match="not a whole day"):
        parse_funnel_date("2019-06-17 00:00:01", what="d")


@pytest.mark.parametrize(
    ("label", "expression", "aggregator"),
    [
        ("event.$Anything.unique", "event.$Anything", "TRIGGER_USER_COUNT"),
        ("event.search.TOTAL_COUNT", "event.search", "TOTAL_COUNT"),
        ("event.search.avg_count", "event.search", "AVG_COUNT"),
        ("event.purchase.amount.sum", "event.purchase.amount", "SUM"),
        ("event.purchase.product_id.unique", "event.purchase.product_id", "REMOVE_DUMPLICATE"),
        ("event.purchase.amount.AVG_PER", "event.purchase.amount", "AVG_PER"),
        # An event aggregator after a property, or a property one after an event, is not read.
        ("event.purchase.sum", "event.purchase.sum", None),
        ("event.purchase.amount.TOTAL_COUNT", "event.purchase.amount.TOTAL_COUNT", None),
        ("event.purchase.amount", "event.purchase.amount", None),
        ("event.search", "event.search", None),
        ("用户数", "用户数", None),
    ],
)
def test_measure_labels(label, expression, aggregator) -> None:
    assert split_measure_label(label) == (expression, aggregator)


def test_steps_express_accepts_both_forms_and_checks_the_pair() -> None:
    assert steps_express_matches("$startup~$pageview", "event.$startup", "event.$pageview")
    assert steps_express_matches(
        "event.$startup~event.$pageview", "event.$startup", "event.$pageview"
    )
    assert steps_express_matches("$startup~$pageview", "$startup", "$pageview")
    assert not steps_express_matches("$pageview~$startup", "event.$startup", "event.$pageview")
    assert not steps_express_matches("$startup", "event.$startup", "event.$pageview")


def test_label_text_writes_numbers_and_booleans_as_json_does() -> None:
    assert [label_text(v) for v in ("-1", -1, 2.5, True, None)] == ["-1", "-1", "2.5", "true", None]


def test_column_slug_and_plan() -> None:
    assert column_slug("event.purchase.$city") == "event_purchase_city"
    assert column_slug("user.$Last-Visit Time") == "user_last_visit_time"
    planned = plan_by_columns(
        ["user.age", "user.age", "event.e.measure_index"], [True, False, False]
    )
    assert [column.names for column in planned] == [
        ("by_user_age", "by_user_age_lower", "by_user_age_upper"),
        ("by_user_age_2",),
        ("by_event_e_measure_index",),
    ]


def test_a_column_of_the_wrong_type_is_refused_not_cast() -> None:
    schema = pa.schema([("converted_users", pa.int64())])

    with pytest.raises(TypeError, match="converted_users is double, the schema says int64"):
        table_from_columns(schema, {"converted_users": pa.array([1.5])})


@pytest.mark.parametrize(
    ("label", "day"),
    [
        ("2024-01-15", "2024-01-15"),
        ("2024-01-15 00:00:00", "2024-01-15"),
        ("2024-01-15 00:00:00.000", "2024-01-15"),
        ("2024/01/15 00:00:00", "2024-01-15"),
        ("2024-01-15 23:59", "2024-01-15"),
        ("2024/01/15", None),
        ("15/01/2024", None),
        ("2024-01-15T00:00:00", None),
        (20240115, None),
        (None, None),
    ],
)
def test_series_labels_name_the_day_or_are_refused(label: object, day: str | None) -> None:
    """The one parser the declared answers, the data-ready check and the frames share."""
    if day is None:
        with pytest.raises(ValueError, match="not a date"):
            parse_report_datetime(label, what="x")
    else:
        assert parse_report_datetime(label, what="x").date().isoformat() == day


def test_an_unreadable_metadata_time_is_left_empty_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("WARNING"):
        odd = report_time_columns("x" * 10_000, "UTC", 2, what="event")
        missing = report_time_columns(None, "UTC", 2, what="event")
    assert odd["report_updated_at"].to_pylist() == [None, None]
    assert odd["report_updated_at_text"].to_pylist() == ["x" * 200] * 2
    assert missing["report_updated_at_text"].to_pylist() == [None, None]
    (record,) = caplog.records
    assert "event reportUpdateTime" in record.getMessage()
    assert len(record.getMessage()) < 400
