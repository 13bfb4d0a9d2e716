"""sync_tracking_plan / apply_changes against requests-mock: the exact requests sent."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from airflow_provider_analytics.client import (
    AnalyticsBadRequestError,
    AnalyticsClient,
    ClientConfig,
)
from airflow_provider_analytics.plan.diff import (
    Change,
    ChangeKind,
    FieldChange,
    LivePlan,
    Target,
    plan_changes,
    untracked,
)
from airflow_provider_analytics.plan.file import parse_tracking_plan
from airflow_provider_analytics.plan.sync import (
    SyncResult,
    TrackingPlanChangedError,
    TrackingPlanConflictError,
    apply_changes,
    sync_tracking_plan,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    import requests_mock as rm

BASE = "https://analytics.example.com:4005"
SCHEMA = f"{BASE}/uba/api/schema"
TOKEN, APP_KEY = "tok-plan-4e1d", "app-plan-77c2"


def record(
    item_id: str, name: str | None, data_type: str | None = None, **flags: Any
) -> dict[str, Any]:
    found: dict[str, Any] = {"id": item_id, "name": name, "remark": "", "plan": 1, "dataStatus": 1}
    if data_type is not None:
        found["dataType"] = data_type
    return {**found, **flags}


USER_PROPERTIES = [
    record("age", "Age", "number"),
    record("legacy_level", "Legacy level", "number", plan=0),
    record("dormant", "Dormant", "string", plan=0, dataStatus=0),
    record("pending_flag", "Pending flag", "string", dataStatus=0),
    record("nickname", "Nickname", "string"),
]
EVENTS = [
    record("purchase", "Purchase"),
    record("legacy_click", "Legacy click", plan=0),
    record("refund", "Refund", dataStatus=0),
]
EVENT_PROPERTIES = {
    "purchase": [
        record("amount", "Amount", "number"),
        record("old_prop", "Old prop", "string", plan=0, dataStatus=0),
        record("$platform", "Platform", "string", **{"global": 1}),
    ],
    "legacy_click": [record("$platform", "Platform", "string", **{"global": 1})],
    "refund": [record("refund_amount", "Refund amount", "number", dataStatus=0)],
}

# One item for every branch of the state rules, conflicts left out.
PLAN: dict[str, Any] = {
    "user_properties": [
        {"id": "age", "name": "Age", "data_type": "number"},
        {"id": "vip_level", "name": "VIP level", "data_type": "number", "remark": "Tier"},
        {"id": "legacy_level", "name": "Loyalty level", "data_type": "number"},
        {"id": "dormant", "name": "Dormant", "data_type": "boolean"},
        {"id": "pending_flag", "data_type": "boolean"},
        {"id": "nickname", "name": "Nick name", "data_type": "string", "remark": "Shown"},
    ],
    "events": [
        {
            "id": "purchase",
            "name": "Purchase",
            "remark": "Order paid",
            "properties": [
                {"id": "amount", "name": "Order amount", "data_type": "number"},
                {"id": "old_prop", "data_type": "number"},
                {"id": "tax", "name": "Tax", "data_type": "number"},
            ],
        },
        {"id": "legacy_click", "name": "Banner click"},
        {"id": "refund", "properties": [{"id": "refund_amount", "data_type": "string"}]},
        {
            "id": "checkout",
            "name": "Checkout",
            "properties": [{"id": "items", "name": "Items", "data_type": "number"}],
        },
    ],
}

EXPECTED_WRITES = [
    (
        "POST",
        "/uba/api/schema/userproperties",
        {},
        {"id": "vip_level", "name": "VIP level", "dataType": "number", "remark": "Tier"},
    ),
    (
        "POST",
        "/uba/api/schema/userproperties",
        {},
        {"id": "legacy_level", "name": "Loyalty level", "dataType": "number"},
    ),
    # Outside the plan with another type and no data: retyped first, then moved in.
    ("PUT", "/uba/api/schema/userproperties", {"id": "dormant"}, {"dataType": "boolean"}),
    (
        "POST",
        "/uba/api/schema/userproperties",
        {},
        {"id": "dormant", "name": "Dormant", "dataType": "boolean"},
    ),
    ("PUT", "/uba/api/schema/userproperties", {"id": "pending_flag"}, {"dataType": "boolean"}),
    (
        "PUT",
        "/uba/api/schema/userproperties",
        {"id": "nickname"},
        {"name": "Nick name", "remark": "Shown"},
    ),
    (
        "PUT",
        "/uba/api/schema/eventproperties",
        {"eventId": "purchase", "propertyId": "old_prop"},
        {"dataType": "number"},
    ),
    (
        "POST",
        "/uba/api/schema/event",
        {},
        {
            "id": "purchase",
            "properties": [
                # moved into the plan: its name submitted as it is, not cleared
                {"id": "old_prop", "dataType": "number", "name": "Old prop"},
                {"id": "tax", "dataType": "number", "name": "Tax"},
            ],
        },
    ),
    ("PUT", "/uba/api/schema/event", {"id": "purchase"}, {"remark": "Order paid"}),
    (
        "PUT",
        "/uba/api/schema/eventproperties",
        {"eventId": "purchase", "propertyId": "amount"},
        {"name": "Order amount"},
    ),
    ("POST", "/uba/api/schema/event", {}, {"id": "legacy_click", "name": "Banner click"}),
    (
        "PUT",
        "/uba/api/schema/eventproperties",
        {"eventId": "refund", "propertyId": "refund_amount"},
        {"dataType": "string"},
    ),
    (
        "POST",
        "/uba/api/schema/event",
        {},
        {
            "id": "checkout",
            "name": "Checkout",
            "properties": [{"id": "items", "dataType": "number", "name": "Items"}],
        },
    ),
]


@pytest.fixture
def client() -> Iterator[AnalyticsClient]:
    config = ClientConfig(BASE, token=TOKEN, app_key=APP_KEY, max_attempts=1)
    with AnalyticsClient(config, sleep=lambda _: None) as plan_client:
        yield plan_client


def serve_plan(
    mock: rm.Mocker,
    user_properties: list[dict[str, Any]] = USER_PROPERTIES,
    events: list[dict[str, Any]] = EVENTS,
    event_properties: dict[str, list[dict[str, Any]]] = EVENT_PROPERTIES,
) -> None:
    """Listings from the given records; every write succeeds."""

    def properties_of(request: Any, context: Any) -> list[dict[str, Any]]:
        event_id = dict(parse_qsl(urlsplit(request.url).query))["eventId"]
        return event_properties[event_id]

    mock.get(f"{SCHEMA}/userProperties", json=user_properties)
    mock.get(f"{SCHEMA}/event", json=events)
    mock.get(f"{SCHEMA}/eventProperties", json=properties_of)
    for path in ("userProperties", "event", "eventProperties"):
        mock.post(f"{SCHEMA}/{path}", json={"success": 0})
        mock.put(f"{SCHEMA}/{path}", json={"success": 0})


def writes(mock: rm.Mocker) -> list[tuple[str, str, dict[str, str], Any]]:
    return [
        (r.method, r.path, dict(parse_qsl(urlsplit(r.url).query)), r.json())
        for r in mock.request_history
        if r.method != "GET"
    ]


def reads(mock: rm.Mocker) -> list[str]:
    return [
        f"{r.path}?{urlsplit(r.url).query}".rstrip("?")
        for r in mock.request_history
        if r.method == "GET"
    ]


def test_every_branch_is_applied_with_the_exact_requests(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    serve_plan(requests_mock)
    result = sync_tracking_plan(client, parse_tracking_plan(PLAN)).as_dict()
    assert writes(requests_mock) == EXPECTED_WRITES
    assert reads(requests_mock) == [
        "/uba/api/schema/userproperties",
        "/uba/api/schema/event",
        "/uba/api/schema/eventproperties?eventId=purchase",
        "/uba/api/schema/eventproperties?eventId=legacy_click",
        "/uba/api/schema/eventproperties?eventId=refund",
    ]
    for request in requests_mock.request_history:
        assert (request.headers["token"], request.headers["appKey"]) == (TOKEN, APP_KEY)
    assert [(c["target"], c["id"]) for c in result["added"]] == [
        ("user_property", "vip_level"),
        ("user_property", "legacy_level"),
        ("user_property", "dormant"),
        ("event_property", "old_prop"),
        ("event_property", "tax"),
        ("event", "legacy_click"),
        ("event", "checkout"),
        ("event_property", "items"),
    ]
    assert [(c["target"], c["id"]) for c in result["modified"]] == [
        ("user_property", "pending_flag"),
        ("user_property", "nickname"),
        ("event", "purchase"),
        ("event_property", "amount"),
        ("event_property", "refund_amount"),
    ]
    assert result["skipped"] == 2  # age, refund
    assert result["conflicts"] == []
    assert result["untracked"] == {"user_properties": 0, "events": 0, "event_properties": 0}
    assert result["dry_run"] is False


def test_one_log_line_per_applied_change(
    client: AnalyticsClient, requests_mock: rm.Mocker, caplog: pytest.LogCaptureFixture
) -> None:
    serve_plan(requests_mock)
    with caplog.at_level(logging.INFO, logger="airflow_provider_analytics.plan.sync"):
        sync_tracking_plan(client, parse_tracking_plan(PLAN))
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith(("Added", "Mod"))]
    assert len(lines) == 13
    assert "Added user_property vip_level (name None -> 'VIP level'" in lines[0]
    assert "Modified event_property purchase.amount (name 'Amount' -> 'Order amount')" in lines
    assert not any(TOKEN in r.getMessage() or APP_KEY in r.getMessage() for r in caplog.records)


def test_a_dry_run_only_reads(client: AnalyticsClient, requests_mock: rm.Mocker) -> None:
    serve_plan(requests_mock)
    result = sync_tracking_plan(client, parse_tracking_plan(PLAN), dry_run=True).as_dict()
    assert {r.method for r in requests_mock.request_history} == {"GET"}
    assert result["dry_run"] is True
    assert (len(result["added"]), len(result["modified"]), result["skipped"]) == (8, 5, 2)


def conflicting_plan() -> dict[str, Any]:
    return {
        "user_properties": [
            {"id": "vip_level", "data_type": "number"},
            {"id": "age", "data_type": "string"},
        ],
        "events": [
            {"id": "purchase", "properties": [{"id": "amount", "data_type": "string"}]},
            {"id": "$signup"},
        ],
    }


def test_conflicts_stop_the_sync_before_any_write(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    serve_plan(requests_mock)
    with pytest.raises(TrackingPlanConflictError) as caught:
        sync_tracking_plan(client, parse_tracking_plan(conflicting_plan()))
    assert {r.method for r in requests_mock.request_history} == {"GET"}
    message = str(caught.value)
    assert message.startswith("3 conflict(s)")
    assert "nothing was applied" in message
    assert "user_property age (dataType 'number' -> 'string'): data was reported" in message
    assert "event_property purchase.amount (dataType 'number' -> 'string')" in message
    assert "event $signup: preset items" in message
    assert [c["id"] for c in caught.value.conflicts] == ["age", "amount", "$signup"]


def test_conflicts_can_be_left_aside_to_apply_the_rest(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    serve_plan(requests_mock)
    result = sync_tracking_plan(
        client, parse_tracking_plan(conflicting_plan()), apply_despite_conflicts=True
    ).as_dict()
    assert writes(requests_mock) == [
        ("POST", "/uba/api/schema/userproperties", {}, {"id": "vip_level", "dataType": "number"})
    ]
    assert [c["id"] for c in result["conflicts"]] == ["age", "amount", "$signup"]
    assert result["conflicts"][0]["reason"] == (
        "data was reported, so the data type cannot change from number to string"
    )


def test_a_dry_run_reports_conflicts_without_failing(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    serve_plan(requests_mock)
    result = sync_tracking_plan(client, parse_tracking_plan(conflicting_plan()), dry_run=True)
    assert len(result.of_kind(ChangeKind.CONFLICT)) == 3
    assert {r.method for r in requests_mock.request_history} == {"GET"}


def test_a_second_run_after_the_first_finds_everything_skipped(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    after_first_run: dict[str, Any] = {
        "user_properties": [
            record("age", "Age", "number"),
            record("vip_level", "VIP level", "number", remark="Tier", dataStatus=0),
        ],
        "events": [record("purchase", "Purchase", remark="Order paid")],
        "event_properties": {
            "purchase": [
                record("amount", "Order amount", "number"),
                record("tax", "Tax", "number", dataStatus=0),
            ]
        },
    }
    serve_plan(requests_mock, **after_first_run)
    plan = {
        "user_properties": PLAN["user_properties"][:2],
        "events": [{**PLAN["events"][0], "properties": [PLAN["events"][0]["properties"][0]]}],
    }
    plan["events"][0]["properties"].append({"id": "tax", "name": "Tax", "data_type": "number"})
    result = sync_tracking_plan(client, parse_tracking_plan(plan)).as_dict()
    assert writes(requests_mock) == []
    assert (result["added"], result["modified"], result["conflicts"]) == ([], [], [])
    assert result["skipped"] == 5


def test_a_failed_request_stops_the_sync_and_says_how_far_it_got(
    client: AnalyticsClient, requests_mock: rm.Mocker, caplog: pytest.LogCaptureFixture
) -> None:
    serve_plan(requests_mock)
    requests_mock.put(
        f"{SCHEMA}/userProperties",
        status_code=400,
        json={"code": 400, "msg": "bad", "data": ["dataType"]},
    )
    with (
        caplog.at_level(logging.INFO, logger="airflow_provider_analytics.plan.sync"),
        pytest.raises(AnalyticsBadRequestError),
    ):
        sync_tracking_plan(client, parse_tracking_plan(PLAN))
    # Two adds went through; the retype of dormant (a PUT) failed, so its add was not sent.
    sent = [
        (method, query.get("id", body.get("id")))
        for method, _, query, body in writes(requests_mock)
    ]
    assert sent == [("POST", "vip_level"), ("POST", "legacy_level"), ("PUT", "dormant")]
    assert "stopped after 2 of 13 change(s)" in caplog.text


def test_apply_changes_ignores_skips_and_conflicts(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    serve_plan(requests_mock)
    changes = [
        Change(ChangeKind.SKIP, Target.USER_PROPERTY, "age"),
        Change(ChangeKind.CONFLICT, Target.EVENT, "$signup", reason="preset"),
    ]
    assert apply_changes(client, changes) == []
    assert requests_mock.request_history == []


def test_an_event_listed_after_its_new_property_is_added_with_its_own_fields(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    """apply_changes takes changes in any order: an event's add carries the event's name and
    remark even when one of its properties comes first in the list, and completes first."""
    serve_plan(requests_mock)
    declared = {"name": "Sign up", "remark": "first visit"}
    event = Change(
        ChangeKind.ADD,
        Target.EVENT,
        "signup",
        fields={"name": FieldChange(None, "Sign up")},
        declared=declared,
    )
    plan = Change(
        ChangeKind.ADD,
        Target.EVENT_PROPERTY,
        "plan",
        "signup",
        fields={"dataType": FieldChange(None, "string")},
        declared={"dataType": "string"},
    )
    assert apply_changes(client, [plan, event]) == [event, plan]
    assert writes(requests_mock) == [
        (
            "POST",
            "/uba/api/schema/event",
            {},
            {"id": "signup", **declared, "properties": [{"id": "plan", "dataType": "string"}]},
        )
    ]


# --- a reviewed preview, applied -------------------------------------------------------------


def reviewed_preview(client: AnalyticsClient, plan: dict[str, Any]) -> dict[str, Any]:
    """A preview's result as the apply reads it back: through JSON, like an XCom."""
    return json.loads(
        json.dumps(sync_tracking_plan(client, parse_tracking_plan(plan), dry_run=True).as_dict())
    )


def test_a_reviewed_preview_is_applied_exactly(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    serve_plan(requests_mock)
    reviewed = reviewed_preview(client, PLAN)
    assert writes(requests_mock) == []
    result = sync_tracking_plan(client, parse_tracking_plan(PLAN), reviewed=reviewed).as_dict()
    assert writes(requests_mock) == EXPECTED_WRITES
    assert result["live_digest"] == reviewed["live_digest"]
    assert (result["added"], result["modified"]) == (reviewed["added"], reviewed["modified"])


def test_a_review_lists_every_change_field_by_field() -> None:
    live = LivePlan.from_records(USER_PROPERTIES, EVENTS, EVENT_PROPERTIES)
    desired = parse_tracking_plan(PLAN)
    review = SyncResult(plan_changes(live, desired), untracked(live, desired), True).review()
    assert review.startswith("**Tracking plan**: 8 to add, 5 to modify, 2 unchanged, 0 conflict")
    assert "| add | user_property vip_level | name: None → 'VIP level'; " in review
    assert "| modify | event_property purchase.amount | name: 'Amount' → 'Order amount' |" in review
    assert "Left as they are: user_property age, event refund." in review


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        # someone renamed a declared item on the platform after the preview
        ("platform", "the platform's records of the file's items"),
        # the file declares another name now: the difference is not the reviewed one
        ("file", "the difference (modified)"),
    ],
)
def test_an_apply_refuses_a_difference_other_than_the_reviewed_one(
    client: AnalyticsClient, requests_mock: rm.Mocker, edit: str, named: str
) -> None:
    serve_plan(requests_mock)
    reviewed = reviewed_preview(client, PLAN)
    plan = PLAN
    if edit == "platform":
        renamed = [
            record("nickname", "Nick", "string") if r["id"] == "nickname" else r
            for r in USER_PROPERTIES
        ]
        serve_plan(requests_mock, user_properties=renamed)
    else:
        plan = {
            **PLAN,
            "user_properties": [
                *PLAN["user_properties"][:-1],
                {"id": "nickname", "name": "Alias", "data_type": "string"},
            ],
        }
    with pytest.raises(TrackingPlanChangedError) as caught:
        sync_tracking_plan(client, parse_tracking_plan(plan), reviewed=reviewed)
    assert named in str(caught.value)
    assert "nothing was applied" in str(caught.value)
    assert writes(requests_mock) == []


def test_only_a_preview_can_be_applied_as_reviewed(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    serve_plan(requests_mock)
    with pytest.raises(TrackingPlanChangedError, match="not a preview"):
        sync_tracking_plan(client, parse_tracking_plan(PLAN), reviewed={"added": []})
    assert writes(requests_mock) == []
