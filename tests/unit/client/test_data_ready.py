"""The data-ready check (pure): the days it asks about and how it judges an answer."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_provider_analytics.client import AnalyticsValidationError
from airflow_provider_analytics.client.answers import AnswerShapeError
from airflow_provider_analytics.client.data_ready import DataReadyCheck
from tests.data_ready_answers import counts_response


def test_events_check_needs_every_day_to_reach_the_threshold() -> None:
    check = DataReadyCheck("2024-01-14", "2024-01-16", threshold=5)
    assert check.days() == ["2024-01-14", "2024-01-15", "2024-01-16"]
    body = check.call().body
    assert body == {
        "measures": [{"expression": "event.$Anything", "aggregator": "TOTAL_COUNT"}],
        "crowds": ["$ALL"],
        "fromDate": "2024-01-14",
        "toDate": "2024-01-16",
        "unit": "DAY",
    }
    partial = check.evaluate(counts_response(["2024-01-14", "2024-01-15"], [9, 5]))
    assert not partial.ready and partial.detail["missing"] == ["2024-01-16"]
    low = check.evaluate(counts_response(["2024-01-14", "2024-01-15", "2024-01-16"], [9, 4, None]))
    assert low.detail["missing"] == ["2024-01-15", "2024-01-16"]
    full = check.evaluate(counts_response(["2024-01-14", "2024-01-15", "2024-01-16"], [9, 5, 6]))
    assert full.ready and full.detail["counts"]["2024-01-16"] == 6


def test_a_check_of_date_objects_holds_their_text_and_judges_as_one_of_strings() -> None:
    """The rule accepts a ``datetime.date``; the check keeps its text (days, the trigger's
    kwargs), not the object (which failed ``days()`` with a bare TypeError)."""
    check = DataReadyCheck(dt.date(2024, 1, 14), dt.date(2024, 1, 15))  # type: ignore[arg-type]
    assert check == DataReadyCheck("2024-01-14", "2024-01-15")
    assert check.as_dict()["from_date"] == "2024-01-14"
    ready = check.evaluate(counts_response(["2024-01-14", "2024-01-15"], [1, 2]))
    assert ready.ready and list(ready.detail["counts"]) == ["2024-01-14", "2024-01-15"]


def test_events_check_with_no_rows_is_not_ready() -> None:
    readiness = DataReadyCheck("2024-01-15", "2024-01-15").evaluate({"series": [], "rows": []})
    assert not readiness.ready and readiness.detail["missing"] == ["2024-01-15"]


def test_plan_check_reads_data_status_of_event_or_property() -> None:
    check = DataReadyCheck("2024-01-15", "2024-01-15", source="plan", event="refund")
    assert check.call().operation.name == "list_events"
    assert not check.evaluate([{"id": "refund", "dataStatus": 0}]).ready
    assert not check.evaluate([{"id": "other", "dataStatus": 1}]).detail["found"]
    assert check.evaluate([{"id": "refund", "dataStatus": 1}]).ready
    prop = DataReadyCheck(
        "2024-01-15", "2024-01-15", source="plan", event="refund", event_property="refund_amount"
    )
    call = prop.call()
    assert (call.operation.name, call.params) == ("list_event_properties", {"eventId": "refund"})
    assert prop.evaluate([{"id": "refund_amount", "dataType": "number", "dataStatus": 1}]).ready


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"from_date": "2024-01-16", "to_date": "2024-01-15"}, "to_date"),
        ({"from_date": "2024-02-30"}, "from_date"),
        ({"event": "9lives"}, "event"),
        ({"threshold": 0}, "threshold"),
        ({"threshold": True}, "threshold"),
        ({"source": "logs"}, "source"),
        ({"event_property": "amount"}, "event_property"),
        ({"source": "plan"}, "event"),
    ],
)
def test_bad_checks_name_the_field(kwargs: dict, field: str) -> None:
    arguments = {"from_date": "2024-01-15", "to_date": "2024-01-15", **kwargs}
    with pytest.raises(AnalyticsValidationError, match=rf"^{field}:"):
        DataReadyCheck(**arguments)


@pytest.mark.parametrize(
    "form",
    [
        "{day}",
        "{day} 00:00:00",
        "{day} 00:00:00.000",
        "{slashed} 00:00:00",
    ],
)
def test_every_series_label_form_the_frames_accept_counts(form: str) -> None:
    """The check reads days with the frames' parser: a slashed label counts (it never did)."""
    days = ["2024-01-14", "2024-01-15"]
    labels = [form.format(day=d, slashed=d.replace("-", "/")) for d in days]
    readiness = DataReadyCheck(*days, threshold=5).evaluate(counts_response(labels, [7, 5]))
    assert readiness.ready, readiness.detail
    assert readiness.detail["counts"] == {"2024-01-14": 7.0, "2024-01-15": 5.0}


def test_a_series_label_in_no_accepted_form_is_refused_by_name() -> None:
    labels = ["14/01/2024", "2024-01-15T00:00:00"]
    check = DataReadyCheck("2024-01-14", "2024-01-15")
    with pytest.raises(AnswerShapeError, match=r"analyze_events: series\[0\] '14/01/2024'"):
        check.evaluate(counts_response(labels, [7, 5]))


def test_a_range_longer_than_ten_years_is_refused_by_name() -> None:
    """``to_date="9999-12-31"`` made each poke count, log and keep (XCom) three million days,
    a ~99 MB line; the longest window the event trigger watches still fits."""
    from airflow_provider_analytics.client.data_ready import DAYS_MAX
    from airflow_provider_analytics.triggers.data_ready_event import TIMEOUT_MAX, watched_window

    last = dt.date(2024, 1, 15) + dt.timedelta(days=DAYS_MAX - 1)
    assert len(DataReadyCheck("2024-01-15", last.isoformat()).days()) == DAYS_MAX
    too_late = (last + dt.timedelta(days=1)).isoformat()
    for first, to in (("2024-01-15", too_late), ("2024-01-15", "9999-12-31")):
        with pytest.raises(AnalyticsValidationError, match=r"^to_date: must be at most 3661 days"):
            DataReadyCheck(first, to)
    now = dt.datetime(2024, 3, 31, 12, tzinfo=dt.UTC)
    window = watched_window(now, dt.UTC, TIMEOUT_MAX)
    assert window is not None
    DataReadyCheck(*window)
