"""The declared answers against the spec's and the platform documentation's own examples.

Each example below is written out as the interface spec (section 2 and 4) or the platform's
documentation (``API_NOTES.md``: "Shapes seen in the documentation's examples") shows it;
each must be accepted, and read as the documents say.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from airflow_provider_analytics.client import operations as ops
from airflow_provider_analytics.client.answers import (
    ANSWERS,
    AnswerShapeError,
    Asked,
    CohortPage,
    EventAnswer,
    FunnelAnswer,
    decode,
)

UTM_RECORD = {  # spec 2.1: every field, nullable ones null
    "id": 12,
    "campaignId": "1001",
    "utmType": None,
    "callbackUrl": None,
    "pageUrl": "https://shop.example.com/landing",
    "utmCampaign": "spring",
    "utmMedium": "cpc",
    "utmSource": "search",
    "utmContent": "banner",
    "utmTerm": "shoes",
    "checkUrl": None,
    "checkShort": None,
    "checkQrcode": None,
    "url": "https://shop.example.com/landing?campaign_id=1001&utm_campaign=spring",
    "shortUrl": "aB3dE",
    "qrcode": None,
    "remarks": "",
    "appKey": "app-key",
    "userId": 3,
    "status": 1,
    "createTime": 1_561_939_200_000,
    "updateTime": 1_561_939_200_000,
    "canOperated": 1,
    "createName": None,
    "loginName": None,
    "email": None,
    "phone": None,
    "uniqueSign": "x1",
    "batchNum": None,
    "project": None,
    "originUrl": None,
}
USER_PROPERTY = {  # spec 2.2
    "id": "$city",
    "name": "City",
    "enable": 1,
    "visible": 1,
    "preset": 1,
    "dataType": "string",
    "plan": 1,
    "dataStatus": 1,
    "dict": 0,
    "masking": 0,
}
EVENT = {  # spec 2.3
    "id": "$startup",
    "name": "Start",
    "plan": 1,
    "dataStatus": 1,
    "preset": 1,
    "enable": 1,
    "remark": "",
    "platform": "android",
}
EVENT_PROPERTY = {  # spec 2.4: name and remark nullable
    "id": "$url",
    "name": None,
    "remark": None,
    "enable": 1,
    "global": 1,
    "preset": 1,
    "dataType": "string",
    "plan": 1,
    "dataStatus": 1,
    "dict": 0,
    "masking": 0,
}
FUNNEL = {  # the documentation's funnel example: $ALL first, slashed dates, -1 first
    "dateList": ["$ALL", "2019/06/17 00:00:00", "2019/06/18 00:00:00"],
    "byField": "event.$city",
    "byValues": ["-1", "北京"],
    "stepEvents": ["event.$startup", "event.$pageview"],
    "rows": [
        {
            "byValue": "-1",
            "stepsDetail": [
                {"expression": "event.$startup", "convertedUser": [30, 20, 10]},
                {"expression": "event.$pageview", "convertedUser": [12, 8, 4]},
            ],
            "medianConvertedTime": [{"stepsExpress": "$startup~$pageview", "median": [64, 60, 70]}],
        },
        {
            "byValue": "北京",
            "stepsDetail": [
                {"expression": "event.$startup", "convertedUser": [3, 2, 1]},
                {"expression": "event.$pageview", "convertedUser": [0, 0, 0]},
            ],
            "medianConvertedTime": [{"stepsExpress": "$startup~$pageview", "median": None}],
        },
    ],
    "reportUpdateTime": "2019-06-19 08:00:00",
}
EVENTS = {  # the documentation's event example: .unique labels, bucket and unknown labels
    "measures": ["event.$Anything.unique"],
    "byFields": ["event.purchase.price"],
    "series": ["2019-06-17", "2019-06-18"],
    "rows": [
        {"byValue": ["-∞~600"], "values": [[3, 4]], "sum": [6]},
        {"byValue": ["600~800"], "values": [[1, 0]], "sum": [1]},
        {"byValue": ["800~+∞"], "values": [[2, 2]], "sum": [3]},
        {"byValue": ["未知"], "values": [[0, 1]], "sum": [1]},
    ],
    "numRows": 4,
    "reportUpdateTime": "2019-06-19 08:00:00",
}
EXAMPLES: dict[str, Any] = {
    "create_utm": {"success": 0, "campaignId": 1001},  # spec 4.1: a number
    "get_utm": UTM_RECORD,
    "get_utm_conversion": {"success": 0},  # spec 4.3: the only field shown
    "delete_utm": {"success": 0},
    "list_user_properties": [USER_PROPERTY],
    "list_events": [EVENT],
    "list_event_properties": [EVENT_PROPERTY],
    "add_user_property": {"success": 0},
    "add_event": {"success": 0},
    "update_user_property": {"success": 0},
    "update_event": {"success": 0},
    "update_event_property": {"success": 0},
    "get_cohort_users": {  # spec 4.12 with paging from the documentation
        "count": 2,
        "page": 1,
        "size": 2,
        "users": [
            {"distinct_id": 4255875062385414000, "$city": "北京", "tag.vip": "gold"},
            {"distinct_id": -4635244755532264000, "$city": None, "tag.vip": None},
        ],
    },
    "export_cohort_users": {"code": 500, "msg": "internal error", "data": None},
    "register_account": {"userId": 7, "email": "ana@example.com"},  # spec 4.14
    "set_account_activation": {"success": 0},
    "analyze_funnel": FUNNEL,
    "analyze_events": EVENTS,
    "data_ready_trigger": {"status": "success", "detail": {"counts": {"2024-01-15": 3}}},
}


def test_every_operation_of_the_spec_has_a_declared_answer() -> None:
    operations = {value.name for value in vars(ops).values() if isinstance(value, ops.Operation)}
    assert len(operations) == 18  # the spec's 17 sections, 4.11 holding two operations
    # and the event the data-ready trigger hands the sensor back
    assert set(ANSWERS) == operations | {"data_ready_trigger"} == set(EXAMPLES)


@pytest.mark.parametrize("operation", sorted(EXAMPLES))
def test_the_documented_example_is_accepted(operation: str) -> None:
    decode(operation, EXAMPLES[operation])


def test_the_funnel_example_reads_as_documented() -> None:
    answer: FunnelAnswer = decode(
        "analyze_funnel", FUNNEL, asked=Asked(from_date="2019-06-17", to_date="2019-06-18", steps=2)
    )
    assert answer.days == [None, dt.date(2019, 6, 17), dt.date(2019, 6, 18)]
    assert answer.steps == ["event.$startup", "event.$pageview"]
    assert answer.rows[1].medianConvertedTime is not None
    assert answer.rows[1].medianConvertedTime[0].median is None


def test_the_event_example_pairs_measures_by_position() -> None:
    asked = Asked(
        from_date="2019-06-17",
        to_date="2019-06-18",
        aggregators=("TRIGGER_USER_COUNT",),
        split_fields=1,
    )
    answer: EventAnswer = decode("analyze_events", EVENTS, asked=asked)
    assert [start.date() for start in answer.days] == [dt.date(2019, 6, 17), dt.date(2019, 6, 18)]
    assert [row.byValue for row in answer.rows][-1] == ["未知"]


def test_large_ids_in_a_page_stay_exact_integers() -> None:
    page: CohortPage = decode("get_cohort_users", EXAMPLES["get_cohort_users"])
    assert page.users[0]["distinct_id"] == 4255875062385414000


def test_an_undeclared_field_is_kept_as_sent() -> None:
    answer = decode("get_utm", {**UTM_RECORD, "newField": [1, "x"]})
    assert answer.model_extra == {
        key: value
        for key, value in {**UTM_RECORD, "newField": [1, "x"]}.items()
        if key not in type(answer).model_fields
    }


@pytest.mark.parametrize(
    ("operation", "answer", "says"),
    [
        ("create_utm", {"success": 0, "campaignId": "1001"}, None),  # text in some deployments
        (
            "create_utm",
            {"success": 0, "campaignId": ""},
            "campaignId must be a JSON integer or non-empty text",
        ),
        (  # an id the client's methods would refuse to take back (a path, a blank)
            "create_utm",
            {"success": 0, "campaignId": "../drop/7"},
            "campaignId must be a JSON integer or text of 1 to 64 letters",
        ),
        ("get_utm", {**UTM_RECORD, "campaignId": " "}, "campaignId must be a JSON integer or text"),
        ("list_events", [{**EVENT, "plan": 2}], r"\[0\]\.plan must be <= 1, got 2"),
        ("list_events", [{**EVENT, "plan": True}], r"\[0\]\.plan must be a JSON integer"),
        ("list_user_properties", [{**USER_PROPERTY, "dataType": "int"}], "dataType must be one of"),
        ("register_account", {"userId": 7}, "email is missing"),
        ("get_cohort_users", {"count": 2, "size": 3, "users": []}, "size is 3, but users holds 0"),
    ],
)
def test_what_the_documents_leave_open_is_read_by_the_rules(
    operation: str, answer: Any, says: str | None
) -> None:
    if says is None:
        decode(operation, answer)
        return
    with pytest.raises(AnswerShapeError, match=f"^{operation}: .*{says}"):
        decode(operation, answer)


def test_secrets_given_to_decode_still_reach_every_message() -> None:
    """Deprecated ``secrets=``: the values are remembered, so the refusal masks them."""
    from airflow_provider_analytics.core.redaction import known

    with pytest.deprecated_call(match="remember"), pytest.raises(AnswerShapeError) as caught:
        decode("get_utm", {"campaignId": "Answer-Secret-77"}, secrets=("Answer-Secret-77",))
    assert "Answer-Secret-77" not in str(caught.value)
    assert known().text("Answer-Secret-77") == "***"


@pytest.mark.parametrize("steps", [1, 3])
def test_rows_of_another_step_count_than_asked_are_refused_without_step_events(
    steps: int,
) -> None:
    """The rows' steps keep their relation with the request when ``stepEvents`` is left out
    (the steps are then read from the rows)."""
    answer = {key: value for key, value in FUNNEL.items() if key != "stepEvents"}
    asked = Asked(from_date="2019-06-17", to_date="2019-06-18", steps=steps)
    with pytest.raises(
        AnswerShapeError, match=rf"rows\[0\]\.stepsDetail has 2 entries, expected {steps}"
    ):
        decode("analyze_funnel", answer, asked=asked)
    assert decode("analyze_funnel", answer, asked=Asked(steps=2)).steps == FUNNEL["stepEvents"]
