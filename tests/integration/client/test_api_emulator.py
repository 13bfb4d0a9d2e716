"""The client against the emulator over real HTTP on 127.0.0.1: every operation's happy path,
an error the server answers for each, and faults injected through the admin API."""

from __future__ import annotations

import itertools
import uuid
from typing import TYPE_CHECKING, Any

import pytest
from analytics_emulator import catalog

from airflow_provider_analytics.client import (
    AnalyticsAlreadyExistsError,
    AnalyticsAuthenticationError,
    AnalyticsBadRequestError,
    AnalyticsClient,
    AnalyticsDisabledError,
    AnalyticsNotFoundError,
    AnalyticsQuotaExceededError,
    AnalyticsRateLimitError,
    AnalyticsServerError,
    AnalyticsStreamError,
    AnalyticsTransportError,
    AnalyticsUnsupportedMediaTypeError,
    ClientConfig,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from analytics_emulator.server import EmulatorServer

    from tests.emulator_helpers import EmulatorAdmin

pytestmark = pytest.mark.integration

FUNNEL = {
    "steps": [{"expression": "event.$startup"}, {"expression": "event.purchase"}],
    "crowds": ["$ALL"],
    "fromDate": "2024-01-01",
    "toDate": "2024-01-07",
}
EVENTS = {
    "measures": [
        {"expression": "event.purchase", "aggregator": "TRIGGER_USER_COUNT"},
        {"expression": "event.purchase.amount", "aggregator": "SUM"},
    ],
    "crowds": ["$ALL"],
    "fromDate": "2024-01-01",
    "toDate": "2024-01-03",
    "unit": "DAY",
}


class Sleeps:
    """Records the waits between retries instead of sleeping."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def make_client(
    server: EmulatorServer, sleeps: Sleeps | None = None, **options: Any
) -> AnalyticsClient:
    settings: dict[str, Any] = {
        "token": server.config.token,
        "app_key": server.config.app_key,
        "xtoken": server.config.xtoken,
        "read_timeout": 30.0,
    }
    settings.update(options)
    return AnalyticsClient(ClientConfig(server.base_url, **settings), sleep=sleeps or Sleeps())


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def client(emulator: EmulatorServer, sleeps: Sleeps) -> Iterator[AnalyticsClient]:
    with make_client(emulator, sleeps) as client:
        yield client


@pytest.fixture
def admin(emulator_admin: EmulatorAdmin) -> EmulatorAdmin:
    """The admin API with request counts starting from zero (it resets after the test too)."""
    emulator_admin.reset()
    return emulator_admin


def unique_email() -> str:
    return f"user-{uuid.uuid4().hex[:12]}@example.com"


def requests_of(admin: EmulatorAdmin, operation: str) -> int:
    return int(admin.stats()["requests"].get(operation, 0))


# Ad tracking


def test_ad_tracking_lifecycle(client: AnalyticsClient) -> None:
    campaign = client.create_utm(
        "https://shop.example.com/landing?ref=mail",
        "spring sale",
        "email",
        "newsletter",
        utm_content="hero",
        utm_term="shoes",
        remarks="Q2",
        login_user="ops@example.com",
    )
    assert campaign.isdigit()

    record = client.get_utm(campaign)
    assert record["campaignId"] == campaign
    assert record["utmCampaign"] == "spring sale"
    assert record["url"].startswith("https://shop.example.com/landing?ref=mail&")
    assert f"campaign_id={campaign}" in record["url"]
    assert record["status"] == 1

    conversion = client.get_utm_conversion(
        int(campaign),
        "2024-01-01",
        "2024-01-31",
        convert_measures=[{"expression": "event.purchase", "aggregator": "TRIGGER_USER_COUNT"}],
        use_cache=False,
    )
    assert conversion["success"] == 0

    client.delete_utm(campaign)
    assert client.get_utm(campaign)["status"] == 0
    client.delete_utm(campaign)  # deleting twice is fine


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.get_utm("999999999"),
        lambda c: c.delete_utm("999999999"),
        lambda c: c.get_utm_conversion("999999999", "2024-01-01", "2024-01-02"),
    ],
    ids=["get_utm", "delete_utm", "get_utm_conversion"],
)
def test_unknown_campaign_is_a_bad_request(client: AnalyticsClient, call: Any) -> None:
    with pytest.raises(AnalyticsBadRequestError) as caught:
        call(client)
    assert caught.value.status == 400


def test_ad_tracking_under_another_prefix(emulator: EmulatorServer) -> None:
    with make_client(emulator, utm_prefix="ark") as client:
        campaign = client.create_utm("https://a.example.com", "c", "m", "s")
        assert client.get_utm(campaign)["campaignId"] == campaign


def test_wrong_prefix_is_not_found(emulator: EmulatorServer) -> None:
    with (
        make_client(emulator, utm_prefix="/nope") as client,
        pytest.raises(AnalyticsNotFoundError, match="utm_prefix") as caught,
    ):
        client.get_utm("1")
    assert caught.value.status == 404


def test_create_is_not_retried_after_a_server_error(
    client: AnalyticsClient, admin: EmulatorAdmin
) -> None:
    admin.fault("create_utm", "status", status=503, times=3)
    with pytest.raises(AnalyticsServerError, match="outcome is unknown"):
        client.create_utm("https://a.example.com", "c", "m", "s")
    assert requests_of(admin, "create_utm") == 1


def test_create_is_not_retried_after_a_dropped_connection(
    client: AnalyticsClient, admin: EmulatorAdmin
) -> None:
    admin.fault("create_utm", "reset")
    with pytest.raises(AnalyticsTransportError, match="outcome is unknown"):
        client.create_utm("https://a.example.com", "c", "m", "s")
    assert requests_of(admin, "create_utm") == 1


def test_create_is_retried_after_a_rate_limit(
    client: AnalyticsClient, admin: EmulatorAdmin, sleeps: Sleeps
) -> None:
    admin.fault("create_utm", "status", status=429, retry_after=7)
    assert client.create_utm("https://a.example.com", "c", "m", "s").isdigit()
    assert requests_of(admin, "create_utm") == 2
    assert sleeps.delays == [7.0]


def test_reads_are_retried_after_a_dropped_connection(
    client: AnalyticsClient, admin: EmulatorAdmin
) -> None:
    campaign = client.create_utm("https://a.example.com", "c", "m", "s")
    admin.fault("get_utm", "reset", times=2)
    assert client.get_utm(campaign)["campaignId"] == campaign
    assert requests_of(admin, "get_utm") == 3


# Tracking plan


def test_tracking_plan_listings(client: AnalyticsClient) -> None:
    properties = client.list_user_properties()
    assert {p["id"] for p in properties} >= {p.id for p in catalog.USER_PROPERTIES}
    outside = client.list_user_properties(plan=0)
    assert "legacy_level" in {p["id"] for p in outside}
    assert all(p["plan"] == 0 for p in outside)
    assert all(p["dataStatus"] == 0 for p in client.list_user_properties(data_status=0))

    events = client.list_events(plan=1)
    assert {"$startup", "purchase"} <= {e["id"] for e in events}
    assert all(e["plan"] == 1 for e in events)

    purchase = client.list_event_properties("purchase")
    ids = [p["id"] for p in purchase]
    assert "amount" in ids and "$platform" in ids
    assert {p["global"] for p in purchase if p["id"] == "$platform"} == {1}


def test_tracking_plan_changes_follow_the_state_rules(fresh_emulator: EmulatorServer) -> None:
    with make_client(fresh_emulator) as client:
        client.add_user_property("legacy_level", "number", name="Level", remark="Moved in")
        moved = {p["id"]: p for p in client.list_user_properties(plan=1)}["legacy_level"]
        assert (moved["plan"], moved["name"]) == (1, "Level")

        client.add_user_property("vip_level", "number", name="VIP level")
        client.add_user_property("vip_level", "number", name="Ignored")  # already in: skipped
        added = {p["id"]: p for p in client.list_user_properties()}["vip_level"]
        assert (added["name"], added["dataType"], added["dataStatus"]) == ("VIP level", "number", 0)

        client.add_event(
            "checkout",
            name="结账",
            remark="Web (v2)",
            properties=[{"id": "cart_value", "data_type": "number", "name": "Cart value"}],
        )
        assert "checkout" in {e["id"] for e in client.list_events()}
        assert "cart_value" in {p["id"] for p in client.list_event_properties("checkout")}

        client.update_user_property("pending_flag", data_type="boolean", name="Pending")
        pending = {p["id"]: p for p in client.list_user_properties()}["pending_flag"]
        assert (pending["dataType"], pending["name"]) == ("boolean", "Pending")

        client.update_event("$startup", name="App launch")
        assert {e["id"]: e for e in client.list_events()}["$startup"]["name"] == "App launch"

        client.update_event_property("purchase", "amount", remark="Order total")
        amount = {p["id"]: p for p in client.list_event_properties("purchase")}["amount"]
        assert amount["remark"] == "Order total"


@pytest.mark.parametrize(
    ("call", "param"),
    [
        (lambda c: c.list_event_properties("no_such_event"), "eventId"),
        (lambda c: c.add_user_property("age", "string"), "dataType"),
        (
            lambda c: c.add_event("purchase", properties=[{"id": "amount", "dataType": "string"}]),
            None,
        ),
        (lambda c: c.update_user_property("age", data_type="string"), "dataType"),
        (lambda c: c.update_user_property("no_such_property", name="X"), None),
        (lambda c: c.update_event("no_such_event", name="X"), None),
        (lambda c: c.update_event_property("purchase", "no_such_property", name="X"), None),
        (lambda c: c.update_event_property("purchase", "amount", data_type="string"), "dataType"),
    ],
    ids=[
        "list_event_properties",
        "add_user_property",
        "add_event",
        "update_user_property_type",
        "update_user_property_unknown",
        "update_event",
        "update_event_property_unknown",
        "update_event_property_type",
    ],
)
def test_tracking_plan_refusals(client: AnalyticsClient, call: Any, param: str | None) -> None:
    with pytest.raises(AnalyticsBadRequestError) as caught:
        call(client)
    assert caught.value.status == 400
    assert caught.value.params
    if param is not None:
        assert any(param in str(p) for p in caught.value.params)


@pytest.mark.parametrize(
    ("call", "credential"),
    [
        (lambda c: c.list_user_properties(), "token"),
        (lambda c: c.list_events(), "app_key"),
    ],
    ids=["list_user_properties", "list_events"],
)
def test_wrong_project_credentials(emulator: EmulatorServer, call: Any, credential: str) -> None:
    secret = f"wrong-{credential}-value-5d1e"
    with make_client(emulator, **{credential: secret}) as client:
        with pytest.raises(AnalyticsAuthenticationError, match="token and appKey") as caught:
            call(client)
        ok, reason = client.test_connection()
    assert caught.value.status == 401
    assert ok is False and "authentication failed" in reason
    assert secret not in str(caught.value) + reason


def test_test_connection(client: AnalyticsClient) -> None:
    ok, message = client.test_connection()
    assert ok is True
    assert client.config.base_url in message


def test_safe_reads_are_retried_after_server_errors(
    client: AnalyticsClient, admin: EmulatorAdmin, sleeps: Sleeps
) -> None:
    admin.fault("list_events", "status", status=503, times=2)
    assert client.list_events()
    assert requests_of(admin, "list_events") == 3
    assert len(sleeps.delays) == 2


def test_server_errors_after_the_budget(client: AnalyticsClient, admin: EmulatorAdmin) -> None:
    admin.fault("list_user_properties", "status", status=502, times=10)
    with pytest.raises(AnalyticsServerError, match="after 4 attempt") as caught:
        client.list_user_properties()
    assert caught.value.status == 502
    assert requests_of(admin, "list_user_properties") == 4


def test_rate_limit_after_the_budget(client: AnalyticsClient, admin: EmulatorAdmin) -> None:
    admin.fault("add_event", "status", status=429, retry_after=2, times=10)
    with pytest.raises(AnalyticsRateLimitError):
        client.add_event("share")
    assert requests_of(admin, "add_event") == 4


@pytest.mark.parametrize(
    ("operation", "status", "code", "error_type", "call"),
    [
        (
            "update_event",
            415,
            415,
            AnalyticsUnsupportedMediaTypeError,
            lambda c: c.update_event("share", name="Share"),
        ),
        (
            "get_cohort_users",
            501,
            501,
            AnalyticsQuotaExceededError,
            lambda c: c.get_cohort_users("cohort_tiny"),
        ),
    ],
)
def test_injected_statuses_are_not_retried(
    client: AnalyticsClient,
    admin: EmulatorAdmin,
    operation: str,
    status: int,
    code: int,
    error_type: type[Exception],
    call: Any,
) -> None:
    admin.fault(operation, "status", status=status, code=code, times=5)
    with pytest.raises(error_type):
        call(client)
    assert requests_of(admin, operation) == 1


def test_a_stalled_read_times_out_and_is_retried(
    emulator: EmulatorServer, admin: EmulatorAdmin
) -> None:
    # The stall outlasts the read timeout however late the client reads (the emulator ends it
    # when the client gives up); the retry's answer has the whole read timeout to arrive.
    admin.fault("update_user_property", "stall", seconds=60)
    with make_client(emulator, read_timeout=2.0) as client:
        client.update_user_property("nickname", remark="Shown in the app")
    assert requests_of(admin, "update_user_property") == 2
    assert admin.wait_until_idle(30) == 0


# Cohorts


def test_cohort_users_page_and_pages(client: AnalyticsClient) -> None:
    first = client.get_cohort_users("cohort_tiny")
    assert (first["count"], first["page"], first["size"]) == (7, 1, 7)
    assert set(first["users"][0]) == set(catalog.default_user_property_ids())

    page = client.get_cohort_users(
        "cohort_small", properties=["distinct_id", "tag_rfm"], page=3, page_size=10, limit=25
    )
    assert (page["page"], page["size"]) == (3, 5)
    assert set(page["users"][0]) == {"distinct_id", "tag.tag_rfm"}

    pages = list(
        client.iter_cohort_user_pages("cohort_small", properties=["distinct_id"], page_size=300)
    )
    assert [len(p["users"]) for p in pages] == [300, 300, 300, 100]
    ids = [u["distinct_id"] for p in pages for u in p["users"]]
    assert len(set(ids)) == 1000
    assert any(abs(i) > 2**53 for i in ids)


def test_cohort_pages_up_to_a_limit(client: AnalyticsClient) -> None:
    pages = list(
        client.iter_cohort_user_pages(
            "cohort_small", properties=["distinct_id"], page_size=40, limit=100
        )
    )
    assert [len(p["users"]) for p in pages] == [40, 40, 20]


def test_unknown_cohort_is_a_bad_request(client: AnalyticsClient) -> None:
    with pytest.raises(AnalyticsBadRequestError) as caught:
        client.get_cohort_users("no_such_cohort")
    assert caught.value.params == ["cohortCode"]
    with pytest.raises(AnalyticsBadRequestError):
        client.export_cohort_users("no_such_cohort")
    with pytest.raises(AnalyticsBadRequestError):
        list(client.iter_cohort_user_pages("no_such_cohort"))


def test_export_streams_every_row_exactly(client: AnalyticsClient) -> None:
    paged = client.get_cohort_users(
        "cohort_small", limit=1000, properties=["distinct_id", "nickname"]
    )
    with client.export_cohort_users(
        "cohort_small", properties=["distinct_id", "nickname"]
    ) as export:
        records = list(export.iter_records())
    assert len(records) == 1000
    assert records == paged["users"]
    assert export.lines_read == 1000 and export.bytes_read > 0


def test_export_with_limit_and_default_properties(client: AnalyticsClient) -> None:
    with client.export_cohort_users("cohort_medium", limit=123) as export:
        records = list(export.iter_records())
    assert len(records) == 123
    assert set(records[0]) == set(catalog.default_user_property_ids())
    assert {r["phone"] for r in records} == {catalog.MASKED_MARKER}


def test_export_start_is_retried(client: AnalyticsClient, admin: EmulatorAdmin) -> None:
    admin.fault("export_cohort_users", "status", status=504)
    with client.export_cohort_users("cohort_tiny") as export:
        assert len(list(export.iter_records())) == 7
    assert requests_of(admin, "export_cohort_users") == 2


def test_export_cut_after_rows(client: AnalyticsClient, admin: EmulatorAdmin) -> None:
    admin.fault("export_cohort_users", "cut_after_rows", rows=250)
    received: list[dict[str, Any]] = []
    with (
        pytest.raises(AnalyticsStreamError, match="stream broke") as caught,
        client.export_cohort_users("cohort_small", properties=["distinct_id"]) as export,
    ):
        for record in export.iter_records():
            received.append(record)
    assert len(received) == 250
    assert caught.value.operation == "export_cohort_users"


def test_export_cut_inside_a_line(client: AnalyticsClient, admin: EmulatorAdmin) -> None:
    admin.fault("export_cohort_users", "cut_inside_line", rows=40)
    received = 0
    with (
        pytest.raises(AnalyticsStreamError),
        client.export_cohort_users("cohort_small", properties=["distinct_id"]) as export,
    ):
        for _ in export.iter_records():
            received += 1
    assert received == 40


def test_export_malformed_line(client: AnalyticsClient, admin: EmulatorAdmin) -> None:
    admin.fault("export_cohort_users", "malformed_line", rows=3)
    with (
        pytest.raises(AnalyticsStreamError, match="line 4 of the export is not valid JSON"),
        client.export_cohort_users("cohort_tiny") as export,
    ):
        list(export.iter_records())


# Accounts


def test_account_lifecycle(fresh_emulator: EmulatorServer) -> None:
    email = unique_email()
    with make_client(fresh_emulator) as client:
        created = client.register_account(
            email,
            user_name="user_" + email[5:13],
            name="New Person",
            password="Initial-Pass-1",
            department="Growth",
            login_user="admin@example.com",
        )
        assert created["email"] == email and isinstance(created["userId"], int)

        with pytest.raises(AnalyticsAlreadyExistsError) as caught:
            client.register_account(email)
        assert caught.value.code == 50101

        client.set_account_activation(email, False, login_user="admin@example.com")
        with pytest.raises(AnalyticsDisabledError) as disabled:
            client.register_account(email)
        assert disabled.value.code == 50102

        client.set_account_activation(email, True)
        with pytest.raises(AnalyticsAlreadyExistsError):
            client.register_account(email)


def test_activation_of_an_unknown_account(client: AnalyticsClient) -> None:
    with pytest.raises(AnalyticsBadRequestError) as caught:
        client.set_account_activation(unique_email(), True)
    assert caught.value.status == 400


def test_wrong_xtoken(emulator: EmulatorServer) -> None:
    with (
        make_client(emulator, xtoken="wrong-xtoken-8c4f") as client,
        pytest.raises(AnalyticsAuthenticationError, match="xtoken") as caught,
    ):
        client.register_account(unique_email())
    assert "wrong-xtoken-8c4f" not in str(caught.value)


def test_activation_is_retried_but_registration_is_not(
    client: AnalyticsClient, admin: EmulatorAdmin
) -> None:
    email = unique_email()
    admin.fault("register_account", "status", status=500)
    with pytest.raises(AnalyticsServerError, match="Check whether the account exists"):
        client.register_account(email)
    client.register_account(email)

    admin.fault("set_account_activation", "status", status=500)
    client.set_account_activation(email, False)
    assert requests_of(admin, "register_account") == 2
    assert requests_of(admin, "set_account_activation") == 2


# Analyses


def test_funnel_analysis(client: AnalyticsClient) -> None:
    result = client.analyze_funnel(
        {
            **FUNNEL,
            "byField": {"expression": "user.age", "buckets": [20, 40]},
            "byStepIndex": 0,
            "convertTime": 1,
            "convertTimeUnit": "DAY",
        }
    )
    assert result["dateList"][0] == "$ALL" and len(result["dateList"]) == 8
    assert result["byValues"][0] == "-1"
    overall = result["rows"][0]["stepsDetail"]
    assert len(overall) == 2
    for dated in zip(*(step["convertedUser"] for step in overall), strict=True):
        assert list(dated) == sorted(dated, reverse=True)


def test_event_analysis(client: AnalyticsClient) -> None:
    result = client.analyze_events({**EVENTS, "byFields": [{"expression": "event.purchase.$city"}]})
    assert result["series"] == ["2024-01-01", "2024-01-02", "2024-01-03"]
    assert result["rows"]
    assert all(len(row["values"]) == 2 for row in result["rows"])


def test_analysis_refusals_name_the_parameter(client: AnalyticsClient) -> None:
    funnel = {**FUNNEL, "steps": [FUNNEL["steps"][0], {"expression": "event.no_such_event"}]}
    with pytest.raises(AnalyticsBadRequestError) as caught:
        client.analyze_funnel(funnel)
    assert caught.value.params == ["steps[1].expression"]

    events = {
        **EVENTS,
        "measures": [{"expression": "event.purchase.product_id", "aggregator": "SUM"}],
    }
    with pytest.raises(AnalyticsBadRequestError) as refused:
        client.analyze_events(events)
    assert refused.value.params and "measures[0]" in str(refused.value.params[0])


def test_analyses_are_retried(client: AnalyticsClient, admin: EmulatorAdmin) -> None:
    admin.fault("analyze_funnel", "reset")
    admin.fault("analyze_events", "status", status=503, retry_after=1)
    assert client.analyze_funnel(FUNNEL)["rows"]
    assert client.analyze_events(EVENTS)["rows"]
    assert requests_of(admin, "analyze_funnel") == 2
    assert requests_of(admin, "analyze_events") == 2


def test_one_client_reuses_its_connections(client: AnalyticsClient, admin: EmulatorAdmin) -> None:
    before = admin.stats()["connections"]
    for _ in itertools.repeat(None, 20):
        client.list_events()
    assert admin.stats()["connections"] - before <= 1


def test_tags_may_be_named_by_code_or_by_their_key(emulator) -> None:  # type: ignore[no-untyped-def]
    """Spec 2.6: the request names the tag code; values come back under ``tag.<code>``."""
    from airflow_provider_analytics.client import AnalyticsClient, ClientConfig

    config = emulator.config
    with AnalyticsClient(
        ClientConfig(emulator.base_url, token=config.token, app_key=config.app_key)
    ) as client:
        by_key = client.get_cohort_users("cohort_tiny", properties=["distinct_id", "tag.tag_rfm"])
        by_code = client.get_cohort_users("cohort_tiny", properties=["distinct_id", "tag_rfm"])
        with client.export_cohort_users("cohort_tiny", properties=["tag.tag_lifecycle"]) as export:
            exported = list(export.iter_records())
    assert by_key["users"] == by_code["users"]
    assert set(by_key["users"][0]) == {"distinct_id", "tag.tag_rfm"}
    assert len(exported) == 7 and set(exported[0]) == {"tag.tag_lifecycle"}
