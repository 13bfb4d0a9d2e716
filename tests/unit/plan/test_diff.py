"""plan_changes: every branch of the spec's state rules, and the untracked counts (pure)."""

from __future__ import annotations

from typing import Any

import pytest

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
from airflow_provider_analytics.plan.sync import SyncResult

ADD, MODIFY, SKIP, CONFLICT = (
    ChangeKind.ADD,
    ChangeKind.MODIFY,
    ChangeKind.SKIP,
    ChangeKind.CONFLICT,
)


def user_property(prop_id: str, name: str | None, data_type: str, **flags: Any) -> dict[str, Any]:
    return {
        "id": prop_id,
        "name": name,
        "dataType": data_type,
        "remark": "",
        "plan": 1,
        "dataStatus": 1,
        "preset": 0,
        "enable": 1,
        **flags,
    }


def event(event_id: str, name: str, **flags: Any) -> dict[str, Any]:
    return {"id": event_id, "name": name, "remark": "", "plan": 1, "dataStatus": 1, **flags}


def event_property(prop_id: str, name: str | None, data_type: str, **flags: Any) -> dict[str, Any]:
    return {**user_property(prop_id, name, data_type), "global": 0, **flags}


COMMON = [event_property("$platform", "Platform", "string", **{"global": 1, "preset": 1})]

LIVE = LivePlan.from_records(
    [
        user_property("age", "Age", "number"),
        user_property("legacy_level", "Legacy level", "number", plan=0),
        user_property("pending_flag", "Pending flag", "string", dataStatus=0),
        user_property("dormant", "Dormant", "string", plan=0, dataStatus=0),
        user_property("untouched", "Untouched", "string"),
    ],
    [
        event("purchase", "Purchase"),
        event("legacy_click", "Legacy click", plan=0),
        event("refund", "Refund", dataStatus=0),
        event("other", "Other"),
    ],
    {
        "purchase": [
            event_property("amount", "Order amount", "number"),
            event_property("coupon", None, "string", remark=None),
            event_property("draft", "Draft", "string", dataStatus=0),
            event_property("old_prop", "Old prop", "string", plan=0),
            event_property("not_in_file", "Not in file", "string"),
            *COMMON,
        ],
        "legacy_click": [*COMMON],
        "refund": [event_property("refund_amount", "Refund amount", "number", dataStatus=0)],
    },
)


def changes_for(plan: dict[str, Any], live: LivePlan = LIVE) -> list[Change]:
    return plan_changes(live, parse_tracking_plan(plan))


def one(plan: dict[str, Any], live: LivePlan = LIVE) -> Change:
    (change,) = changes_for(plan, live)
    return change


def user(**item: Any) -> dict[str, Any]:
    return {"user_properties": [item]}


def test_a_user_property_missing_on_the_platform_is_added_with_every_declared_field() -> None:
    change = one(user(id="vip_level", name="VIP level", data_type="number", remark="Tier"))
    assert (change.kind, change.target, change.id, change.event_id) == (
        ADD,
        Target.USER_PROPERTY,
        "vip_level",
        None,
    )
    assert change.fields == {
        "name": FieldChange(None, "VIP level"),
        "remark": FieldChange(None, "Tier"),
        "dataType": FieldChange(None, "number"),
    }
    assert change.declared == {"name": "VIP level", "remark": "Tier", "dataType": "number"}
    assert not change.moves_into_plan


def test_an_item_outside_the_plan_is_added_which_moves_it_in_with_the_new_name() -> None:
    change = one(user(id="legacy_level", name="Loyalty level", data_type="number"))
    assert change.kind is ADD
    assert change.moves_into_plan
    assert change.fields == {
        "plan": FieldChange(0, 1),
        "name": FieldChange("Legacy level", "Loyalty level"),
    }
    same_name = one(user(id="legacy_level", name="Legacy level", data_type="number"))
    assert (same_name.kind, same_name.fields) == (ADD, {"plan": FieldChange(0, 1)})
    assert same_name.declared == {"name": "Legacy level", "dataType": "number"}


def test_outside_the_plan_with_another_type_and_no_data_is_an_add_that_retypes() -> None:
    change = one(user(id="dormant", data_type="boolean"))
    assert change.kind is ADD
    assert change.fields == {
        "plan": FieldChange(0, 1),
        "dataType": FieldChange("string", "boolean"),
    }


def test_outside_the_plan_with_another_type_and_data_is_a_conflict() -> None:
    change = one(user(id="legacy_level", name="Loyalty level", data_type="string"))
    assert change.kind is CONFLICT
    assert change.reason == (
        "data was reported, so the data type cannot change from number to string"
    )
    assert change.fields["dataType"] == FieldChange("number", "string")


def test_inside_the_plan_a_different_name_or_remark_is_modified() -> None:
    change = one(user(id="age", name="Age in years", data_type="number", remark="From the app"))
    assert change.kind is MODIFY
    assert change.fields == {
        "name": FieldChange("Age", "Age in years"),
        "remark": FieldChange("", "From the app"),
    }


def test_a_type_change_without_reported_data_is_modified() -> None:
    change = one(user(id="pending_flag", name="Pending flag", data_type="boolean"))
    assert (change.kind, change.fields) == (MODIFY, {"dataType": FieldChange("string", "boolean")})


def test_a_type_change_with_reported_data_is_a_conflict_listing_all_its_differences() -> None:
    change = one(user(id="age", name="Age in years", data_type="string"))
    assert change.kind is CONFLICT
    assert change.fields == {
        "name": FieldChange("Age", "Age in years"),
        "dataType": FieldChange("number", "string"),
    }


def test_identical_items_and_undeclared_fields_are_skipped() -> None:
    assert one(user(id="age", name="Age", data_type="number")).kind is SKIP
    assert one(user(id="age", data_type="number")).kind is SKIP
    assert one(user(id="age", data_type="number", remark="")).kind is SKIP


def test_a_field_the_platform_does_not_report_is_not_compared() -> None:
    without_remark = LivePlan(
        user_properties={"age": {"id": "age", "name": "Age", "dataType": "number", "plan": 1}}
    )
    change = one(user(id="age", data_type="number", remark="Years"), without_remark)
    assert change.kind is SKIP


def test_a_record_that_does_not_say_whether_data_was_reported_is_treated_as_having_data() -> None:
    live = LivePlan(user_properties={"age": {"id": "age", "dataType": "number", "plan": 1}})
    assert one(user(id="age", data_type="string"), live).kind is CONFLICT


def test_a_preset_item_missing_on_the_platform_is_a_conflict_not_an_add() -> None:
    change = one(user(id="$lib", data_type="string"))
    assert change.kind is CONFLICT
    assert change.reason is not None and "cannot be created" in change.reason


def test_events_and_their_properties() -> None:
    changes = changes_for(
        {
            "events": [
                {
                    "id": "purchase",
                    "name": "Purchase",
                    "remark": "Order paid",
                    "properties": [
                        {"id": "amount", "name": "Order amount", "data_type": "number"},
                        {"id": "coupon", "name": "Coupon", "data_type": "string", "remark": ""},
                        {"id": "draft", "data_type": "number"},
                        {"id": "old_prop", "name": "Old prop", "data_type": "string"},
                        {"id": "tax", "name": "Tax", "data_type": "number"},
                        {"id": "amount_cents", "data_type": "number"},
                        {"id": "$platform", "name": "Platform", "data_type": "string"},
                    ],
                }
            ]
        }
    )
    summary = [(c.kind, c.target, c.event_id, c.id) for c in changes]
    ep = Target.EVENT_PROPERTY
    assert summary == [
        (MODIFY, Target.EVENT, None, "purchase"),
        (SKIP, ep, "purchase", "amount"),
        (MODIFY, ep, "purchase", "coupon"),
        (MODIFY, ep, "purchase", "draft"),
        (ADD, ep, "purchase", "old_prop"),
        (ADD, ep, "purchase", "tax"),
        (ADD, ep, "purchase", "amount_cents"),
        (SKIP, ep, "purchase", "$platform"),
    ]
    assert changes[0].fields == {"remark": FieldChange("", "Order paid")}
    # A null name on the platform reads as no name; a null remark as an empty one.
    assert changes[2].fields == {"name": FieldChange(None, "Coupon")}
    assert changes[3].fields == {"dataType": FieldChange("string", "number")}
    assert changes[4].fields == {"plan": FieldChange(0, 1)}


def test_an_event_outside_the_plan_is_added_and_a_new_event_brings_new_properties() -> None:
    changes = changes_for(
        {
            "events": [
                {"id": "legacy_click", "name": "Banner click"},
                {
                    "id": "checkout",
                    "name": "Checkout",
                    "properties": [
                        {"id": "items", "data_type": "number"},
                        {"id": "$platform", "data_type": "string"},
                    ],
                },
            ]
        }
    )
    assert [(c.kind, c.id) for c in changes] == [
        (ADD, "legacy_click"),
        (ADD, "checkout"),
        (ADD, "items"),
        # Every event has the common properties, a new one included.
        (SKIP, "$platform"),
    ]
    assert changes[0].fields == {
        "plan": FieldChange(0, 1),
        "name": FieldChange("Legacy click", "Banner click"),
    }
    assert changes[1].fields == {"name": FieldChange(None, "Checkout")}


def test_event_property_types_follow_the_same_rules() -> None:
    changes = changes_for(
        {
            "events": [
                {"id": "refund", "properties": [{"id": "refund_amount", "data_type": "string"}]},
                {"id": "purchase", "properties": [{"id": "amount", "data_type": "string"}]},
            ]
        }
    )
    assert [(c.kind, c.id) for c in changes] == [
        (SKIP, "refund"),
        (MODIFY, "refund_amount"),
        (SKIP, "purchase"),
        (CONFLICT, "amount"),
    ]


def test_the_properties_of_a_preset_event_that_does_not_exist_are_conflicts_too() -> None:
    changes = changes_for(
        {"events": [{"id": "$signup", "properties": [{"id": "via", "data_type": "string"}]}]}
    )
    assert [(c.kind, c.target, c.id) for c in changes] == [
        (CONFLICT, Target.EVENT, "$signup"),
        (CONFLICT, Target.EVENT_PROPERTY, "via"),
    ]
    assert changes[1].reason == "its event $signup cannot be added"


def test_untracked_counts_what_the_platform_has_and_the_file_does_not_declare() -> None:
    desired = parse_tracking_plan(
        {
            "user_properties": [{"id": "age", "data_type": "number"}],
            "events": [
                {"id": "purchase", "properties": [{"id": "amount", "data_type": "number"}]},
                {"id": "brand_new"},
            ],
        }
    )
    # purchase's own properties other than amount: coupon, draft, old_prop, not_in_file.
    assert untracked(LIVE, desired) == {"user_properties": 4, "events": 3, "event_properties": 4}


def test_a_file_identical_to_the_platform_plans_nothing_but_skips() -> None:
    desired = {
        "user_properties": [{"id": "age", "name": "Age", "data_type": "number", "remark": ""}],
        "events": [
            {
                "id": "purchase",
                "name": "Purchase",
                "remark": "",
                "properties": [{"id": "amount", "name": "Order amount", "data_type": "number"}],
            }
        ],
    }
    changes = changes_for(desired)
    assert {c.kind for c in changes} == {SKIP}
    assert SyncResult(changes).of_kind(SKIP) == changes


def test_plan_changes_follows_file_order_user_properties_first() -> None:
    changes = changes_for(
        {
            "events": [{"id": "other"}],
            "user_properties": [
                {"id": "zeta", "data_type": "string"},
                {"id": "age", "data_type": "number"},
            ],
        }
    )
    assert [c.id for c in changes] == ["zeta", "age", "other"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            Change(
                MODIFY,
                Target.EVENT_PROPERTY,
                "amount",
                "purchase",
                {"name": FieldChange("Amount", "Order amount")},
            ),
            {
                "target": "event_property",
                "id": "amount",
                "event_id": "purchase",
                "fields": {"name": {"old": "Amount", "new": "Order amount"}},
            },
        ),
        (
            Change(CONFLICT, Target.USER_PROPERTY, "age", reason="why"),
            {"target": "user_property", "id": "age", "fields": {}, "reason": "why"},
        ),
    ],
)
def test_as_dict(change: Change, expected: dict[str, Any]) -> None:
    assert change.as_dict() == expected


def test_describe_names_the_item_and_the_fields() -> None:
    change = Change(
        CONFLICT,
        Target.EVENT_PROPERTY,
        "amount",
        "purchase",
        {"dataType": FieldChange("number", "string")},
        reason="data was reported",
    )
    assert change.describe() == (
        "event_property purchase.amount (dataType 'number' -> 'string'): data was reported"
    )
    assert Change(SKIP, Target.EVENT, "share").describe() == "event share"


def test_a_preset_item_outside_the_plan_is_a_conflict_before_any_write() -> None:
    """The add that moves an item into the plan takes no $ id (spec 2.5): the client would
    refuse it mid-sync, after earlier writes."""
    live = LivePlan.from_records(
        [user_property("$city", "City", "string", plan=0, preset=1)],
        [event("$pageview", "Page view", plan=0, preset=1)],
        {"$pageview": [event_property("$title", "Title", "string", plan=0, preset=1)]},
    )
    changes = changes_for(
        {
            "user_properties": [{"id": "$city", "name": "City", "data_type": "string"}],
            "events": [
                {"id": "$pageview", "properties": [{"id": "$title", "data_type": "string"}]}
            ],
        },
        live,
    )
    assert [(c.kind, c.id) for c in changes] == [
        (CONFLICT, "$city"),
        (CONFLICT, "$pageview"),
        (CONFLICT, "$title"),
    ]
    assert changes[0].reason is not None and "outside the plan" in changes[0].reason


def test_a_common_property_declared_with_other_values_under_two_events_is_a_conflict() -> None:
    """One property that every event has: applied under both, every run would change it back."""
    platform = {"id": "$platform", "data_type": "string"}
    changes = changes_for(
        {
            "events": [
                {"id": "purchase", "properties": [{**platform, "name": "Town"}]},
                {"id": "legacy_click", "properties": [{**platform, "name": "Platform"}]},
                {"id": "other", "properties": [platform]},
            ]
        }
    )
    assert [(c.kind, c.event_id) for c in changes if c.id == "$platform"] == [
        (CONFLICT, "purchase"),
        (CONFLICT, "legacy_click"),
        (CONFLICT, "other"),
    ]
    assert "under purchase and legacy_click" in (changes[1].reason or "")


def test_a_common_property_declared_alike_or_partly_under_two_events_is_no_conflict() -> None:
    platform = {"id": "$platform", "data_type": "string"}
    changes = changes_for(
        {
            "events": [
                {"id": "purchase", "properties": [{**platform, "name": "Town"}]},
                {"id": "legacy_click", "properties": [platform]},
                {"id": "other", "properties": [{**platform, "name": "Town"}]},
            ]
        }
    )
    assert [c.kind for c in changes if c.id == "$platform"] == [MODIFY, SKIP, MODIFY]


def test_moving_an_item_into_the_plan_submits_the_name_and_remark_it_has() -> None:
    """The add gives the item the submitted name and remark (spec 4.8): one the file leaves
    out is submitted as the platform has it, rather than cleared."""
    live = LivePlan.from_records(
        [user_property("legacy_level", "Legacy level", "number", plan=0, remark="kept")],
        [],
        {},
    )
    change = one(user(id="legacy_level", data_type="number", remark="new"), live)
    assert change.kind is ADD
    assert change.declared == {"name": "Legacy level", "remark": "new", "dataType": "number"}
    assert change.fields == {"plan": FieldChange(0, 1), "remark": FieldChange("kept", "new")}


def test_moving_a_record_without_a_remark_into_the_plan_submits_its_name_only() -> None:
    """User property records carry no remark (spec 2.2): reading one raised KeyError."""
    record = {"id": "vip_level", "name": "VIP level", "dataType": "string", "plan": 0}
    live = LivePlan.from_records([{**record, "dataStatus": 0}], [], {})
    change = one(user(id="vip_level", data_type="string"), live)
    assert change.kind is ADD
    assert change.declared == {"name": "VIP level", "dataType": "string"}
