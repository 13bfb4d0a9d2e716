"""State transitions of the emulator's stores: every row of the spec's state table, plus
ad tracking, accounts, faults, the export block cache and reset."""

from __future__ import annotations

import asyncio
from datetime import date
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
from analytics_emulator import faults as f
from analytics_emulator.accounts import (
    ALREADY_EXISTS,
    EXISTS_BUT_DISABLED,
    AccountSpec,
    AccountStore,
)
from analytics_emulator.campaigns import (
    CampaignSpec,
    CampaignStore,
    Measure,
    long_url,
)
from analytics_emulator.errors import BadRequest, NotCompleted
from analytics_emulator.export import (
    MALFORMED_LINE,
    BlockCache,
    ExportSource,
    _stream_pieces,
)
from analytics_emulator.plan import Changes, ItemSpec, TrackingPlan
from analytics_emulator.population import EncodedBlock, Population
from analytics_emulator.state import EmulatorState


def _by_id(records: list[dict]) -> dict[str, dict]:
    return {r["id"]: r for r in records}


def _refused_params(call, *args) -> list[str]:  # type: ignore[no-untyped-def]
    with pytest.raises(BadRequest) as caught:
        call(*args)
    return list(caught.value.data)


# Tracking plan (spec section 3, rows 4 and 5, and 4.8-4.11)


def test_adding_a_user_property_outside_the_plan_moves_it_in_with_new_name() -> None:
    plan = TrackingPlan()
    assert _by_id(plan.user_properties())["legacy_level"]["plan"] == 0
    plan.add_user_property(ItemSpec("legacy_level", "Level (old)", "from app 1", "number"))
    record = _by_id(plan.user_properties())["legacy_level"]
    assert (record["plan"], record["name"], record["remark"]) == (1, "Level (old)", "from app 1")
    assert record["dataStatus"] == 1


def test_adding_an_item_inside_the_plan_with_the_same_type_changes_nothing() -> None:
    plan = TrackingPlan()
    before = plan.user_properties()
    plan.add_user_property(ItemSpec("age", "Another name", "another remark", "number"))
    assert plan.user_properties() == before


def test_adding_an_existing_item_with_another_type_is_refused() -> None:
    plan = TrackingPlan()
    before = plan.user_properties()
    assert _refused_params(plan.add_user_property, ItemSpec("age", None, None, "string")) == [
        "dataType"
    ]
    assert _refused_params(
        plan.add_user_property, ItemSpec("legacy_level", None, None, "string")
    ) == ["dataType"]
    assert plan.user_properties() == before


def test_a_new_user_property_enters_the_plan_without_data() -> None:
    plan = TrackingPlan()
    plan.add_user_property(ItemSpec("loyalty_tier", None, None, "string"))
    record = _by_id(plan.user_properties(plan=1, data_status=0))["loyalty_tier"]
    assert record["name"] == "loyalty_tier" and record["preset"] == 0
    assert record["dataType"] == "string" and record["masking"] == 0


def test_list_filters() -> None:
    plan = TrackingPlan()
    assert [r["id"] for r in plan.user_properties(plan=0)] == ["legacy_level"]
    assert [r["id"] for r in plan.user_properties(data_status=0)] == ["pending_flag"]
    assert [r["id"] for r in plan.events(plan=0)] == ["legacy_click"]
    assert [r["id"] for r in plan.events(data_status=0)] == ["refund"]
    assert len(plan.user_properties()) == 26


def test_event_properties_are_own_then_common() -> None:
    plan = TrackingPlan()
    ids = [r["id"] for r in plan.event_properties("add_to_cart")]
    common = ["$platform", "$app_version", "$city", "$is_first_day"]
    assert ids == ["product_id", "price", "quantity", *common]
    assert {r["global"] for r in plan.event_properties("add_to_cart")[3:]} == {1}
    assert [r["id"] for r in plan.event_properties("refund", data_status=0)] == ["refund_amount"]
    assert _refused_params(plan.event_properties, "nope") == ["eventId"]


def test_adding_an_event_outside_the_plan_with_properties() -> None:
    plan = TrackingPlan()
    plan.add_event(
        ItemSpec("legacy_click", "Old click", "kept"),
        [ItemSpec("button", "Button", None, "string", param="properties[0]")],
    )
    event = _by_id(plan.events())["legacy_click"]
    assert (event["plan"], event["name"], event["remark"]) == (1, "Old click", "kept")
    button = _by_id(plan.event_properties("legacy_click"))["button"]
    assert (button["plan"], button["dataStatus"], button["global"]) == (1, 0, 0)


def test_adding_a_new_event_creates_it_without_data() -> None:
    plan = TrackingPlan()
    plan.add_event(ItemSpec("checkout", None, None), [])
    event = _by_id(plan.events())["checkout"]
    assert (event["plan"], event["dataStatus"], event["name"]) == (1, 0, "checkout")


def test_adding_an_event_is_all_or_nothing() -> None:
    plan = TrackingPlan()
    properties = [
        ItemSpec("coupon", None, None, "string", param="properties[0]"),
        ItemSpec("price", None, None, "string", param="properties[1]"),
    ]
    assert _refused_params(plan.add_event, ItemSpec("purchase"), properties) == [
        "properties[1].dataType"
    ]
    assert "coupon" not in _by_id(plan.event_properties("purchase"))
    assert _refused_params(
        plan.add_event,
        ItemSpec("brand_new"),
        [ItemSpec("$city", None, None, "number", param="properties[0]")],
    ) == ["properties[0].dataType"]
    assert "brand_new" not in _by_id(plan.events())


def test_existing_event_and_property_inside_the_plan_are_skipped() -> None:
    plan = TrackingPlan()
    before = (plan.events(), plan.event_properties("purchase"))
    plan.add_event(
        ItemSpec("purchase", "Renamed", None),
        [ItemSpec("amount", "Renamed", None, "number", param="properties[0]")],
    )
    assert (plan.events(), plan.event_properties("purchase")) == before


def test_modify_changes_only_what_is_sent() -> None:
    plan = TrackingPlan()
    plan.update_user_property("age", Changes(name="Age in years"))
    record = _by_id(plan.user_properties())["age"]
    assert (record["name"], record["dataType"], record["remark"]) == ("Age in years", "number", "")
    plan.update_event("search", Changes(remark="site search"))
    event = _by_id(plan.events())["search"]
    assert (event["name"], event["remark"]) == ("Search", "site search")
    plan.update_event_property("purchase", "amount", Changes(name="Paid"))
    assert _by_id(plan.event_properties("purchase"))["amount"]["name"] == "Paid"


def test_data_type_changes_only_without_reported_data() -> None:
    plan = TrackingPlan()
    plan.update_user_property("pending_flag", Changes(data_type="boolean"))
    assert _by_id(plan.user_properties())["pending_flag"]["dataType"] == "boolean"
    refused = _refused_params(plan.update_user_property, "age", Changes(data_type="string"))
    assert refused == ["dataType"]
    plan.update_user_property("age", Changes(data_type="number"))
    plan.update_event_property("refund", "refund_amount", Changes(data_type="string"))
    refused = _refused_params(
        plan.update_event_property, "purchase", "amount", Changes(data_type="string")
    )
    assert refused == ["dataType"]


def test_modify_unknown_items() -> None:
    plan = TrackingPlan()
    assert _refused_params(plan.update_user_property, "nope", Changes(name="x")) == ["id"]
    assert _refused_params(plan.update_event, "nope", Changes(name="x")) == ["id"]
    assert _refused_params(plan.update_event_property, "nope", "x", Changes()) == ["eventId"]
    assert _refused_params(plan.update_event_property, "search", "x", Changes()) == ["propertyId"]


def test_common_property_change_shows_in_every_event() -> None:
    plan = TrackingPlan()
    plan.update_event_property("search", "$city", Changes(name="Town"))
    assert _by_id(plan.event_properties("share"))["$city"]["name"] == "Town"


def test_set_data_status_flips_items() -> None:
    plan = TrackingPlan()
    plan.set_data_status(status=1, event_id="refund")
    plan.set_data_status(status=1, event_id="refund", event_property_id="refund_amount")
    assert _by_id(plan.events())["refund"]["dataStatus"] == 1
    assert _by_id(plan.event_properties("refund"))["refund_amount"]["dataStatus"] == 1
    plan.set_data_status(status=0, user_property_id="age")
    assert _by_id(plan.user_properties())["age"]["dataStatus"] == 0


def test_preset_lookups() -> None:
    plan = TrackingPlan()
    assert plan.is_preset_user_property("$city") and not plan.is_preset_user_property("age")
    assert plan.is_preset_event("$startup") and not plan.is_preset_event("$nothing")
    assert plan.is_preset_event_property("$url") and not plan.is_preset_event_property("price")
    assert plan.masked_user_properties() == {"phone", "id_card", "income"}


# Ad tracking (4.1-4.4; section 3 row 3)


def _campaign(**overrides: str | None) -> CampaignSpec:
    fields: dict = {
        "page_url": "https://shop.example.com/landing?ref=a#top",
        "utm_campaign": "spring sale & more",
        "utm_medium": "cpc",
        "utm_source": "search/engine",
        "utm_content": "banner 1",
        "utm_term": "跑鞋",
    }
    return CampaignSpec(**(fields | overrides))


def test_campaign_ids_increase_from_a_seeded_start() -> None:
    store = CampaignStore(7, "key")
    first = store.create(_campaign(), None)
    assert store.create(_campaign(), None) == first + 1
    assert CampaignStore(7, "key").create(_campaign(), None) == first
    assert CampaignStore(8, "key").create(_campaign(), None) != first


def test_campaign_record_has_every_field_and_a_proper_long_url() -> None:
    store = CampaignStore(7, "the-app-key")
    campaign_id = store.create(_campaign(), "ops@example.com")
    record = store.get(campaign_id)
    assert record["campaignId"] == str(campaign_id)
    assert (record["status"], record["appKey"], record["createName"]) == (
        1,
        "the-app-key",
        "ops@example.com",
    )
    assert record["createTime"] == record["updateTime"] > 1_600_000_000_000
    assert record["shortUrl"].isalnum() and len(record["shortUrl"]) <= 10
    url = urlsplit(record["url"])
    assert (url.scheme, url.netloc, url.path, url.fragment) == (
        "https",
        "shop.example.com",
        "/landing",
        "top",
    )
    assert "utm_campaign=spring%20sale%20%26%20more" in url.query
    assert parse_qs(url.query) == {
        "ref": ["a"],
        "campaign_id": [str(campaign_id)],
        "utm_campaign": ["spring sale & more"],
        "utm_medium": ["cpc"],
        "utm_source": ["search/engine"],
        "utm_content": ["banner 1"],
        "utm_term": ["跑鞋"],
    }
    for key in ("callbackUrl", "checkUrl", "qrcode", "batchNum", "project", "originUrl"):
        assert key in record and record[key] is None


def test_long_url_without_query_starts_one() -> None:
    assert long_url("http://a.example/p", [("x", "1 2")]) == "http://a.example/p?x=1%202"


def test_delete_is_logical_and_repeatable() -> None:
    store = CampaignStore(7, "key")
    campaign_id = store.create(_campaign(utm_content=None, utm_term=None), None)
    assert "utm_term" not in store.get(campaign_id)["url"]
    store.delete(campaign_id)
    store.delete(campaign_id)
    assert store.get(campaign_id)["status"] == 0
    assert _refused_params(store.get, campaign_id + 100) == ["campaignId"]
    assert _refused_params(store.delete, campaign_id + 100) == ["campaignId"]


def test_conversion_numbers_are_deterministic_and_grow_with_the_range() -> None:
    store = CampaignStore(7, "key")
    campaign_id = store.create(_campaign(), None)
    measures = [
        Measure("event.purchase", "TRIGGER_USER_COUNT"),
        Measure("event.purchase", "TOTAL_COUNT"),
        Measure("event.purchase", "AVG_COUNT"),
    ]
    week = store.conversion(campaign_id, date(2024, 1, 1), date(2024, 1, 7), measures)
    again = store.conversion(campaign_id, date(2024, 1, 1), date(2024, 1, 7), measures)
    month = store.conversion(campaign_id, date(2024, 1, 1), date(2024, 1, 31), measures)
    assert week == again and week["success"] == 0
    users, triggers, average = (m["value"] for m in week["measures"])
    assert triggers >= users > 0 and average == round(triggers / users, 2)
    assert month["measures"][0]["value"] >= users


# Accounts (4.14, 4.15; section 3 rows 1 and 2)


def test_register_and_duplicates() -> None:
    store = AccountStore(7)
    first = store.register(AccountSpec("Ann@Example.com", user_name="ann", phone="123456"), None)
    assert first["email"] == "Ann@Example.com" and isinstance(first["userId"], int)
    for spec, field in (
        (AccountSpec("ann@example.com"), "email"),
        (AccountSpec("bob@example.com", user_name="ann"), "userName"),
        (AccountSpec("bob@example.com", phone="123456"), "phone"),
    ):
        with pytest.raises(NotCompleted) as caught:
            store.register(spec, None)
        assert (caught.value.status, caught.value.code, caught.value.data) == (
            501,
            ALREADY_EXISTS,
            [field],
        )
    second = store.register(AccountSpec("bob@example.com"), None)
    assert second["userId"] == first["userId"] + 1


def test_disable_enable_keeps_the_record() -> None:
    store = AccountStore(7)
    store.register(AccountSpec("ann@example.com"), None)
    store.set_activation("ann@example.com", False, "admin@example.com")
    assert store.find("ann@example.com")["enabled"] is False  # type: ignore[index]
    with pytest.raises(NotCompleted) as caught:
        store.register(AccountSpec("ANN@example.com"), None)
    assert caught.value.code == EXISTS_BUT_DISABLED
    store.set_activation("ann@example.com", True, None)
    assert store.find("ann@example.com")["enabled"] is True  # type: ignore[index]
    assert _refused_params(store.set_activation, "who@example.com", True, None) == ["email"]


# Faults


def test_faults_apply_in_order_for_their_count() -> None:
    store = f.FaultStore()
    store.arm(f.parse_fault({"operation": "get_utm", "kind": "status", "times": 2}))
    store.arm(f.parse_fault({"operation": "*", "kind": "stall", "seconds": 0.1}))
    first = store.take("get_utm")
    assert first is not None and first.kind == "status" and first.args["status"] == 503
    assert store.take("get_utm") is first
    third = store.take("get_utm")
    assert third is not None and third.kind == "stall"
    assert store.take("get_utm") is None


def test_export_faults_only_hit_the_export() -> None:
    store = f.FaultStore()
    store.arm(
        f.parse_fault(
            {"operation": "export_cohort_users", "kind": "trickle", "bytes_per_second": 10}
        )
    )
    assert store.take("get_cohort_users") is None
    taken = store.take("export_cohort_users")
    assert taken is not None and taken.args == {"bytes_per_second": 10}


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"operation": "nope", "kind": "reset"}, "operation"),
        ({"operation": "get_utm", "kind": "explode"}, "kind"),
        ({"operation": "get_utm", "kind": "cut_after_rows", "rows": 1}, "operation"),
        ({"operation": "get_utm", "kind": "reset", "times": 0}, "times"),
        ({"operation": "get_utm", "kind": "status", "status": 200}, "status"),
        ({"operation": "get_utm", "kind": "stall"}, "seconds"),
        ({"operation": "get_utm", "kind": "stall", "seconds": 1, "rows": 2}, "rows"),
        ({"operation": "export_cohort_users", "kind": "cut_inside_line", "rows": -1}, "rows"),
    ],
)
def test_bad_fault_definitions(body: dict, param: str) -> None:
    with pytest.raises(BadRequest) as caught:
        f.parse_fault(body)
    assert caught.value.data == [param]


def test_status_fault_headers() -> None:
    fault = f.parse_fault(
        {"operation": "*", "kind": "status", "status": 429, "code": 429, "retry_after": 3}
    )
    error = f.InjectedFailure(
        **{k: fault.args[k] for k in ("status", "code", "msg", "retry_after")}
    )
    assert error.status == 429 and error.response_headers() == {"Retry-After": "3"}


# Export cache and stream pieces


def _block(size: int) -> EncodedBlock:
    return EncodedBlock(np.zeros(size, dtype=np.uint8), np.array([size]))


def test_block_cache_evicts_least_recently_used() -> None:
    cache = BlockCache(max_bytes=3 * (100 + 8))
    for index in range(3):
        cache.get_or_build(((), frozenset(), index), lambda: _block(100))
    cache.get_or_build(((), frozenset(), 0), lambda: pytest.fail("block 0 was cached"))
    cache.get_or_build(((), frozenset(), 3), lambda: _block(100))
    assert cache.size_bytes <= cache.max_bytes
    rebuilt = []
    cache.get_or_build(((), frozenset(), 1), lambda: rebuilt.append(1) or _block(100))
    assert rebuilt == [1], "block 1 was the least recently used and should be gone"
    assert (cache.hits, cache.misses) == (1, 5)


def _stream(
    rows: int, fault: f.Fault | None, block_rows: int = 4, *, client_gone: bool = False
) -> bytes:
    source = ExportSource(
        population=Population(7, block_rows=block_rows),
        cache=BlockCache(),
        properties=("age",),
        masked=frozenset(),
        rows=rows,
    )

    async def collect() -> bytes:
        disconnected = asyncio.Event()
        if client_gone:
            disconnected.set()
        return b"".join([bytes(p) async for p in _stream_pieces(source, fault, disconnected)])

    return asyncio.run(collect())


def test_stream_pieces_without_fault_are_all_lines() -> None:
    assert _stream(10, None).count(b"\n") == 10
    assert _stream(0, None) == b""


@pytest.mark.parametrize("at", [0, 3, 4, 9, 10, 25])
def test_stream_pieces_with_row_faults(at: int) -> None:
    whole = _stream(10, None).split(b"\n")[:-1]
    cut = _stream(10, f.Fault("export_cohort_users", "cut_after_rows", 1, {"rows": at}))
    assert cut.split(b"\n")[:-1] == whole[: min(at, 10)] and cut.endswith(b"\n") == (at > 0)
    inside = _stream(10, f.Fault("export_cohort_users", "cut_inside_line", 1, {"rows": at}))
    if at < 10:
        partial = whole[at][: (len(whole[at])) // 2]
        assert inside == b"".join(line + b"\n" for line in whole[:at]) + partial
    malformed = _stream(10, f.Fault("export_cohort_users", "malformed_line", 1, {"rows": at}))
    lines = malformed.split(b"\n")[:-1]
    position = min(at, 10)
    assert lines[position] + b"\n" == bytes(MALFORMED_LINE)
    assert lines[:position] + lines[position + 1 :] == whole


@pytest.mark.timeout(30)  # far below the stall's 300 s: a stall that ignores the client fails
@pytest.mark.parametrize("at", [3, 25])
def test_a_stream_stall_ends_at_once_when_the_client_is_gone(at: int) -> None:
    stall = f.Fault("export_cohort_users", "stall_after_rows", 1, {"rows": at, "seconds": 300})
    assert _stream(10, stall, client_gone=True) == _stream(10, None)


# The state as a whole


def test_reset_returns_to_the_seeded_start() -> None:
    state = EmulatorState(seed=7, cohorts={"c": 3}, app_key="key")
    first_id = state.campaigns.create(_campaign(), None)
    state.plan.add_user_property(ItemSpec("extra", None, None, "string"))
    state.accounts.register(AccountSpec("a@example.com"), None)
    state.faults.arm(f.parse_fault({"operation": "*", "kind": "reset"}))
    state.stats.count("get_utm")
    state.data_until = date(2024, 1, 5)
    state.set_masked_overrides(["age"])
    assert state.masked_properties() == {"phone", "id_card", "income", "age"}
    state.reset()
    assert state.campaigns.create(_campaign(), None) == first_id
    assert not state.plan.has_user_property("extra")
    assert state.accounts.find("a@example.com") is None
    assert state.faults.pending() == [] and state.stats.snapshot() == {}
    assert state.data_until is None and state.masked_properties() == {"phone", "id_card", "income"}
