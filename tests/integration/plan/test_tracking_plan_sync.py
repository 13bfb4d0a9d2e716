"""The tracking plan sync against the emulator over real HTTP on 127.0.0.1.

Every test mutates the plan, so each gets an emulator of its own (``fresh_emulator``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
from airflow_provider_analytics.plan.file import load_tracking_plan
from airflow_provider_analytics.plan.sync import (
    TrackingPlanConflictError,
    sync_tracking_plan,
)
from tests.emulator_helpers import EmulatorAdmin

if TYPE_CHECKING:
    from collections.abc import Iterator

    from analytics_emulator.server import EmulatorServer

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[3] / "example_dags" / "tracking_plan.yaml"


@pytest.fixture
def client(fresh_emulator: EmulatorServer) -> Iterator[AnalyticsClient]:
    config = fresh_emulator.config
    settings = ClientConfig(fresh_emulator.base_url, token=config.token, app_key=config.app_key)
    with AnalyticsClient(settings) as plan_client:
        yield plan_client


def by_id(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in records}


def write_counts(admin: EmulatorAdmin) -> dict[str, int]:
    counts = admin.stats()["requests"]
    return {name: count for name, count in counts.items() if name.startswith(("add_", "update_"))}


def test_the_example_plan_is_applied_and_a_second_run_changes_nothing(
    client: AnalyticsClient, fresh_emulator: EmulatorServer
) -> None:
    plan = load_tracking_plan(EXAMPLE)
    first = sync_tracking_plan(client, plan).as_dict()
    assert first["conflicts"] == []
    assert {c["id"] for c in first["added"]} >= {"vip_level", "legacy_level", "checkout_started"}
    assert {c["id"] for c in first["modified"]} >= {"total_orders", "purchase", "amount"}

    users = by_id(client.list_user_properties())
    assert (users["vip_level"]["name"], users["vip_level"]["dataType"]) == ("VIP level", "number")
    assert users["vip_level"]["plan"] == 1
    assert (users["legacy_level"]["plan"], users["legacy_level"]["name"]) == (1, "Loyalty level")
    assert users["total_orders"]["name"] == "Orders placed"
    assert users["is_vip"]["remark"] == "Paying member of the shop"
    events = by_id(client.list_events())
    assert (events["legacy_click"]["plan"], events["legacy_click"]["name"]) == (1, "Banner click")
    assert events["purchase"]["remark"] == "Order paid"
    assert events["checkout_started"]["remark"] == "Cart submitted, before payment"
    checkout = by_id(client.list_event_properties("checkout_started"))
    assert (checkout["item_count"]["name"], checkout["item_count"]["dataType"]) == (
        "Items in cart",
        "number",
    )
    purchase = by_id(client.list_event_properties("purchase"))
    assert purchase["payment_method"]["dataType"] == "string"
    assert purchase["amount"]["remark"] == "Total after discounts"

    admin = EmulatorAdmin(fresh_emulator)
    try:
        writes_before = write_counts(admin)
        assert writes_before["add_event"] >= 1
        assert writes_before["update_event_property"] >= 1
        second = sync_tracking_plan(client, plan).as_dict()
        assert write_counts(admin) == writes_before
    finally:
        admin.close()
    assert (second["added"], second["modified"], second["conflicts"]) == ([], [], [])
    items = len(plan.user_properties) + sum(1 + len(e.properties) for e in plan.events)
    assert second["skipped"] == items
    assert second["untracked"] == first["untracked"]


def test_a_dry_run_leaves_the_platform_as_it_was(client: AnalyticsClient) -> None:
    before = (client.list_user_properties(), client.list_events())
    result = sync_tracking_plan(client, load_tracking_plan(EXAMPLE), dry_run=True).as_dict()
    assert result["dry_run"] is True
    assert result["added"]
    assert (client.list_user_properties(), client.list_events()) == before


def test_a_type_change_on_an_item_with_data_is_a_conflict_and_nothing_is_written(
    client: AnalyticsClient,
) -> None:
    plan = load_tracking_plan(
        {
            "user_properties": [
                {"id": "age", "data_type": "string"},
                {"id": "pending_flag", "data_type": "boolean"},
            ],
            "events": [{"id": "purchase", "properties": [{"id": "amount", "data_type": "string"}]}],
        }
    )
    with pytest.raises(TrackingPlanConflictError) as caught:
        sync_tracking_plan(client, plan)
    assert [(c["target"], c["id"]) for c in caught.value.conflicts] == [
        ("user_property", "age"),
        ("event_property", "amount"),
    ]
    users = by_id(client.list_user_properties())
    assert (users["age"]["dataType"], users["pending_flag"]["dataType"]) == ("number", "string")


def test_a_type_change_without_data_is_modified_and_conflicts_can_be_set_aside(
    client: AnalyticsClient,
) -> None:
    plan = load_tracking_plan(
        {
            "user_properties": [
                {"id": "age", "data_type": "string"},
                {"id": "pending_flag", "data_type": "boolean"},
                {"id": "legacy_level", "data_type": "string"},
            ],
            "events": [
                {"id": "refund", "properties": [{"id": "refund_amount", "data_type": "string"}]}
            ],
        }
    )
    result = sync_tracking_plan(client, plan, apply_despite_conflicts=True).as_dict()
    assert [c["id"] for c in result["conflicts"]] == ["age", "legacy_level"]
    assert [(c["id"], c["fields"]) for c in result["modified"]] == [
        ("pending_flag", {"dataType": {"old": "string", "new": "boolean"}}),
        ("refund_amount", {"dataType": {"old": "number", "new": "string"}}),
    ]
    users = by_id(client.list_user_properties())
    assert users["pending_flag"]["dataType"] == "boolean"
    assert (users["age"]["dataType"], users["legacy_level"]["plan"]) == ("number", 0)
    refund = by_id(client.list_event_properties("refund"))
    assert refund["refund_amount"]["dataType"] == "string"
    again = sync_tracking_plan(client, plan, apply_despite_conflicts=True).as_dict()
    assert (again["modified"], len(again["conflicts"])) == ([], 2)
