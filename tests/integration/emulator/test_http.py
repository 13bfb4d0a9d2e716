"""The emulator over real HTTP with plain ``requests``: authentication, error bodies, and
every operation's happy path (the analyses are covered by the engine's own tests)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
import requests
from analytics_emulator import catalog
from analytics_emulator.server import EmulatorConfig, EmulatorServer

from tests.emulator_helpers import EmulatorAdmin, account_headers, project_headers

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.integration

UTM = "/svc/uba/api/operations/utm"
USER_PROPERTIES = "/uba/api/schema/userProperties"
EVENTS = "/uba/api/schema/event"
EVENT_PROPERTIES = "/uba/api/schema/eventProperties"
COHORT_USERS = "/uba/api/cohort/users"
EXPORT = "/uba/api/cohort/users/export"
ACCOUNTS = "/uba/manage/enterprise/accounts"
CAMPAIGN = {
    "pageUrl": "https://shop.example.com/landing",
    "utmCampaign": "spring",
    "utmMedium": "cpc",
    "utmSource": "search",
}

# (method, path, body) of every project operation but the analyses, and both account ones.
PROJECT_CALLS: list[tuple[str, str, Any]] = [
    ("POST", UTM, CAMPAIGN),
    ("GET", UTM + "/1", None),
    ("POST", UTM + "/analysys/1", {"fromDate": "2024-01-01", "toDate": "2024-01-02"}),
    ("DELETE", UTM + "/drop/1", None),
    ("GET", "/ark/uba/api/operations/utm/1", None),
    ("GET", USER_PROPERTIES, None),
    ("GET", "/svc" + USER_PROPERTIES, None),
    ("GET", EVENTS, None),
    ("GET", EVENT_PROPERTIES + "?eventId=search", None),
    ("POST", USER_PROPERTIES, {"id": "x", "dataType": "string"}),
    ("POST", EVENTS, {"id": "x"}),
    ("PUT", USER_PROPERTIES + "?id=age", {"name": "Age"}),
    ("PUT", EVENTS + "?id=search", {"name": "Search"}),
    ("PUT", EVENT_PROPERTIES + "?eventId=search&propertyId=keyword", {"name": "Keyword"}),
    ("POST", COHORT_USERS, {"cohortCode": "cohort_tiny"}),
    ("POST", EXPORT, {"cohortCode": "cohort_tiny"}),
    ("POST", "/uba/api/funnels/analyze", {}),
    ("POST", "/uba/api/events/analyze", {}),
]
ACCOUNT_CALLS: list[tuple[str, str, Any]] = [
    ("POST", ACCOUNTS, {"email": "auth@example.com"}),
    ("POST", ACCOUNTS + "/activation?email=auth@example.com", {"activation": True}),
]


def call(
    server: EmulatorServer,
    method: str,
    path: str,
    body: Any = None,
    *,
    headers: dict[str, str] | None = None,
    account: bool = False,
    **kwargs: Any,
) -> requests.Response:
    """One request; project (or account) credentials unless ``headers`` is given."""
    if headers is None:
        headers = account_headers(server) if account else project_headers(server)
    if body is not None:
        kwargs["json"] = body
    return requests.request(method, server.base_url + path, headers=headers, timeout=60, **kwargs)


def error_of(response: requests.Response, status: int) -> dict[str, Any]:
    """The platform error body, checked for shape and status."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"code", "msg", "data"} and isinstance(body["msg"], str)
    return body


@pytest.fixture
def admin(fresh_emulator: EmulatorServer) -> Iterator[EmulatorAdmin]:
    helper = EmulatorAdmin(fresh_emulator)
    yield helper
    helper.close()


# Authentication


@pytest.mark.parametrize(("method", "path", "body"), PROJECT_CALLS)
def test_project_operations_need_token_and_app_key(
    emulator: EmulatorServer, method: str, path: str, body: Any
) -> None:
    good = project_headers(emulator)
    for headers in (
        {},
        {"appKey": good["appKey"]},
        {"token": good["token"]},
        {**good, "token": "wrong-token-value"},
        {**good, "appKey": "wrong-app-key-value"},
        account_headers(emulator),
    ):
        response = call(emulator, method, path, body, headers=headers)
        assert error_of(response, 401)["code"] == 401
        assert "wrong-" not in response.text and good["token"] not in response.text


@pytest.mark.parametrize(("method", "path", "body"), ACCOUNT_CALLS)
def test_account_operations_need_xtoken(
    emulator: EmulatorServer, method: str, path: str, body: Any
) -> None:
    for headers in ({}, project_headers(emulator), {"xtoken": "wrong-xtoken-value"}):
        response = call(emulator, method, path, body, headers=headers)
        assert error_of(response, 401)["code"] == 401
        assert "wrong-" not in response.text


def test_header_names_are_case_insensitive(emulator: EmulatorServer) -> None:
    headers = {"TOKEN": emulator.config.token, "appkey": emulator.config.app_key}
    assert call(emulator, "GET", EVENTS, headers=headers).status_code == 200


def test_authentication_comes_before_body_checks(emulator: EmulatorServer) -> None:
    response = call(
        emulator, "POST", COHORT_USERS, headers={"Content-Type": "text/plain"}, data="x"
    )
    error_of(response, 401)


# Error bodies


def test_unknown_paths_and_methods(emulator: EmulatorServer) -> None:
    assert error_of(call(emulator, "GET", "/uba/api/nothing"), 404)["code"] == 404
    assert error_of(call(emulator, "GET", "/docs"), 404)["code"] == 404
    assert error_of(call(emulator, "GET", "/openapi.json"), 404)["code"] == 404
    assert error_of(call(emulator, "GET", "/other/uba/api/operations/utm/1"), 404)
    assert error_of(call(emulator, "PATCH", EVENTS, {}), 405)["code"] == 405
    assert error_of(call(emulator, "GET", EVENTS + "/"), 404)["code"] == 404


def test_unexpected_failures_answer_500_in_the_platform_shape(
    fresh_emulator: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(**filters: Any) -> list[dict[str, Any]]:
        raise RuntimeError("the store broke")

    monkeypatch.setattr(fresh_emulator.state.plan, "events", broken)
    response = call(fresh_emulator, "GET", EVENTS)
    assert error_of(response, 500) == {"code": 500, "msg": "internal error", "data": None}
    assert "broke" not in response.text


def test_admin_api_is_absent_without_an_admin_token() -> None:
    with EmulatorServer(EmulatorConfig()) as server:
        response = requests.get(
            server.base_url + "/_emulator/stats",
            headers={"X-Emulator-Admin": "anything"},
            timeout=30,
        )
        assert error_of(response, 404)["code"] == 404


def test_non_json_bodies_are_415(emulator: EmulatorServer) -> None:
    headers = project_headers(emulator)
    text = call(emulator, "POST", COHORT_USERS, headers={**headers, "Content-Type": "text/plain"})
    assert error_of(text, 415)["code"] == 415
    form = call(emulator, "POST", COHORT_USERS, headers=headers, data={"cohortCode": "x"})
    error_of(form, 415)
    bare = call(emulator, "PUT", EVENTS + "?id=search", headers=headers, data=b'{"name": "S"}')
    error_of(bare, 415)


@pytest.mark.parametrize(
    "raw", [b"", b"{", b"not json", b"[1, 2]", b'"text"', b"null", b"NaN", b"\xff\xfe{}"]
)
def test_malformed_or_non_object_bodies_are_400(emulator: EmulatorServer, raw: bytes) -> None:
    headers = {**project_headers(emulator), "Content-Type": "application/json; charset=utf-8"}
    response = call(emulator, "POST", COHORT_USERS, headers=headers, data=raw)
    assert error_of(response, 400)["data"] == ["body"]


GARBAGE: list[Any] = [
    {},
    {"id": None, "dataType": None, "cohortCode": None, "email": None},
    {"id": 5, "name": ["x"], "dataType": {"a": 1}, "remark": 7, "properties": "p"},
    {"properties": [None, 3, {"id": "$$"}], "cohortCode": 12, "limit": "9", "page": -1},
    {"fromDate": 20240101, "toDate": [], "convertMeasures": [1], "expression": 4},
    {"pageUrl": "ftp://x", "utmCampaign": "", "utmMedium": 1, "utmSource": None},
    {"email": "not-an-email", "phone": "abc", "activation": "yes", "password": 5},
    {"name": "x" * 10_000, "remark": "\u0000", "dataType": "string" * 100},
    {"cohortCode": "cohort_tiny", "page": 1, "pageSize": True, "limit": 1e30},
    {"steps": [{"expression": None}], "measures": "all", "crowds": 3, "fromDate": "x"},
]


@pytest.mark.parametrize(("method", "path", "body"), PROJECT_CALLS + ACCOUNT_CALLS)
def test_bad_input_never_answers_500(
    emulator: EmulatorServer, method: str, path: str, body: Any
) -> None:
    account = (method, path, body) in ACCOUNT_CALLS
    for garbage in GARBAGE if body is not None else [None]:
        response = call(
            emulator, method, path + ("x" if body is None else ""), garbage, account=account
        )
        assert response.status_code != 500, (garbage, response.text)
        if response.status_code >= 400:
            error_of(response, response.status_code)


# Ad tracking


@pytest.mark.parametrize("prefix", ["/svc", "/ark"])
def test_ad_tracking_lifecycle(emulator: EmulatorServer, prefix: str) -> None:
    base = prefix + "/uba/api/operations/utm"
    created = call(
        emulator, "POST", base + "?loginUser=ops@example.com", {**CAMPAIGN, "utmTerm": "鞋"}
    )
    assert created.status_code == 200
    body = created.json()
    assert body["success"] == 0 and isinstance(body["campaignId"], int)
    campaign = body["campaignId"]
    record = call(emulator, "GET", f"{base}/{campaign}").json()
    assert record["campaignId"] == str(campaign) and record["status"] == 1
    assert record["url"].startswith(CAMPAIGN["pageUrl"] + "?campaign_id=")
    assert "utm_term=%E9%9E%8B" in record["url"] and record["createName"] == "ops@example.com"
    for field in ("id", "shortUrl", "appKey", "userId", "createTime", "updateTime", "uniqueSign"):
        assert record[field] not in (None, "")
    conversion = call(
        emulator,
        "POST",
        f"{base}/analysys/{campaign}",
        {
            "fromDate": "2024-01-01",
            "toDate": "2024-01-10",
            "useCache": False,
            "convertMeasures": [{"expression": "event.purchase", "aggregator": "TOTAL_COUNT"}],
        },
    )
    assert conversion.status_code == 200
    assert conversion.json()["measures"][0]["aggregator"] == "TOTAL_COUNT"
    assert call(emulator, "DELETE", f"{base}/drop/{campaign}").json() == {"success": 0}
    assert call(emulator, "DELETE", f"{base}/drop/{campaign}").json() == {"success": 0}
    assert call(emulator, "GET", f"{base}/{campaign}").json()["status"] == 0


def test_ad_tracking_errors(emulator: EmulatorServer) -> None:
    assert error_of(call(emulator, "GET", UTM + "/999999999"), 400)["data"] == ["campaignId"]
    assert error_of(call(emulator, "GET", UTM + "/abc"), 400)["data"] == ["campaignId"]
    assert error_of(call(emulator, "DELETE", UTM + "/drop/999999999"), 400)
    missing = {k: v for k, v in CAMPAIGN.items() if k != "utmSource"}
    assert error_of(call(emulator, "POST", UTM, missing), 400)["data"] == ["utmSource"]
    campaign = call(emulator, "POST", UTM, CAMPAIGN).json()["campaignId"]
    reversed_range = {"fromDate": "2024-02-01", "toDate": "2024-01-01"}
    response = call(emulator, "POST", f"{UTM}/analysys/{campaign}", reversed_range)
    assert error_of(response, 400)["data"] == ["fromDate", "toDate"]
    bad_measure = {
        "fromDate": "2024-01-01",
        "toDate": "2024-01-02",
        "convertMeasures": [{"expression": "event.purchase", "aggregator": "SUM"}],
    }
    response = call(emulator, "POST", f"{UTM}/analysys/{campaign}", bad_measure)
    assert error_of(response, 400)["data"] == ["convertMeasures[0].aggregator"]


# Tracking plan


def _ids(response: requests.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()]


def test_plan_listings_and_filters(fresh_emulator: EmulatorServer) -> None:
    emulator = fresh_emulator
    everything = call(emulator, "GET", USER_PROPERTIES).json()
    assert {p.id for p in catalog.USER_PROPERTIES} <= {r["id"] for r in everything}
    assert set(everything[0]) >= {"id", "name", "enable", "visible", "preset", "dataType"} | {
        "plan",
        "dataStatus",
        "dict",
        "masking",
    }
    assert "legacy_level" in _ids(call(emulator, "GET", "/svc" + USER_PROPERTIES + "?plan=0"))
    assert "pending_flag" in _ids(call(emulator, "GET", USER_PROPERTIES + "?dataStatus=0"))
    assert "refund" in _ids(call(emulator, "GET", EVENTS + "?plan=1&dataStatus=0"))
    assert "legacy_click" in _ids(call(emulator, "GET", EVENTS + "?plan=0"))
    own_and_common = _ids(call(emulator, "GET", EVENT_PROPERTIES + "?eventId=purchase"))
    assert own_and_common[:2] == ["product_id", "price"] and "$platform" in own_and_common
    assert error_of(call(emulator, "GET", EVENTS + "?plan=2"), 400)["data"] == ["plan"]
    bad_status = call(emulator, "GET", USER_PROPERTIES + "?dataStatus=x")
    assert error_of(bad_status, 400)["data"] == ["dataStatus"]
    assert error_of(call(emulator, "GET", EVENT_PROPERTIES), 400)["data"] == ["eventId"]
    unknown = call(emulator, "GET", EVENT_PROPERTIES + "?eventId=nope")
    assert error_of(unknown, 400)["data"] == ["eventId"]


def test_plan_changes_over_http(fresh_emulator: EmulatorServer) -> None:
    server = fresh_emulator
    ok = {"success": 0}
    body = {"id": "legacy_level", "name": "Old level", "dataType": "number", "remark": "moved in"}
    assert call(server, "POST", USER_PROPERTIES, body).json() == ok
    moved = {r["id"]: r for r in call(server, "GET", USER_PROPERTIES).json()}["legacy_level"]
    assert (moved["plan"], moved["name"], moved["remark"]) == (1, "Old level", "moved in")
    conflict = call(server, "POST", USER_PROPERTIES, {"id": "age", "dataType": "string"})
    assert error_of(conflict, 400)["data"] == ["dataType"]
    event = {
        "id": "checkout",
        "name": "Checkout",
        "properties": [
            {"id": "step", "dataType": "number"},
            {"id": "$city", "dataType": "string"},
        ],
    }
    assert call(server, "POST", EVENTS, event).json() == ok
    assert "checkout" in _ids(call(server, "GET", EVENTS + "?dataStatus=0"))
    assert _ids(call(server, "GET", EVENT_PROPERTIES + "?eventId=checkout"))[0] == "step"
    bad = {"id": "x1", "properties": [{"id": "ok", "dataType": "string"}, {"id": "9bad"}]}
    assert error_of(call(server, "POST", EVENTS, bad), 400)["data"] == ["properties[1].id"]
    custom_dollar = call(server, "POST", USER_PROPERTIES, {"id": "$mine", "dataType": "string"})
    assert error_of(custom_dollar, 400)["data"] == ["id"]
    assert call(server, "PUT", USER_PROPERTIES + "?id=age", {"remark": "years"}).json() == ok
    type_change = call(server, "PUT", USER_PROPERTIES + "?id=age", {"dataType": "string"})
    assert error_of(type_change, 400)["data"] == ["dataType"]
    pending = call(server, "PUT", USER_PROPERTIES + "?id=pending_flag", {"dataType": "boolean"})
    assert pending.json() == ok
    assert call(server, "PUT", EVENTS + "?id=search", {"name": "Site search"}).json() == ok
    path = EVENT_PROPERTIES + "?eventId=search&propertyId=keyword"
    assert call(server, "PUT", path, {"name": "Query", "remark": "typed text"}).json() == ok
    keyword = call(server, "GET", EVENT_PROPERTIES + "?eventId=search").json()[0]
    assert (keyword["name"], keyword["remark"]) == ("Query", "typed text")
    assert error_of(call(server, "PUT", USER_PROPERTIES, {"name": "x"}), 400)["data"] == ["id"]
    no_property = call(server, "PUT", EVENT_PROPERTIES + "?eventId=search", {"name": "x"})
    assert error_of(no_property, 400)["data"] == ["propertyId"]
    bad_name = call(server, "PUT", EVENTS + "?id=search", {"name": "50% off!"})
    assert error_of(bad_name, 400)["data"] == ["name"]


# Cohort users


def _users(server: EmulatorServer, body: dict[str, Any]) -> dict[str, Any]:
    response = call(server, "POST", COHORT_USERS, body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    assert result["size"] == len(result["users"])
    return result


def _export_lines(server: EmulatorServer, body: dict[str, Any]) -> list[dict[str, Any]]:
    response = call(server, "POST", EXPORT, body, stream=True)
    assert response.status_code == 200, response.text
    assert response.headers["transfer-encoding"] == "chunked"
    assert response.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in response.iter_lines()]


def test_paging_without_page(emulator: EmulatorServer) -> None:
    default = _users(emulator, {"cohortCode": "cohort_medium", "properties": ["age"]})
    assert (default["count"], default["page"], default["size"]) == (25_000, 1, 1000)
    limited = _users(emulator, {"cohortCode": "cohort_tiny", "limit": 3})
    assert (limited["count"], limited["size"]) == (7, 3)
    assert _users(emulator, {"cohortCode": "cohort_tiny", "limit": 50})["size"] == 7
    assert _users(emulator, {"cohortCode": "cohort_empty"})["users"] == []


@pytest.mark.parametrize(
    ("page", "page_size", "limit", "expected"),
    [
        (1, 3, None, [0, 1, 2]),
        (2, 3, None, [3, 4, 5]),
        (3, 3, None, [6]),
        (4, 3, None, []),
        (2, 3, 5, [3, 4]),
        (1, 7, 7, list(range(7))),
        (1, 100, None, list(range(7))),
    ],
)
def test_paging_arithmetic(
    emulator: EmulatorServer, page: int, page_size: int, limit: int | None, expected: list[int]
) -> None:
    everyone = [
        u["email"]
        for u in _users(emulator, {"cohortCode": "cohort_tiny", "properties": ["email"]})["users"]
    ]
    body: dict[str, Any] = {"cohortCode": "cohort_tiny", "page": page, "pageSize": page_size}
    if limit is not None:
        body["limit"] = limit
    body["properties"] = ["email"]
    result = _users(emulator, body)
    assert (result["count"], result["page"]) == (7, page)
    assert [u["email"] for u in result["users"]] == [everyone[i] for i in expected]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"cohortCode": "cohort_tiny", "page": 1}, "pageSize"),
        ({"cohortCode": "cohort_tiny", "page": 1, "pageSize": 5, "limit": 4}, "pageSize"),
        ({"cohortCode": "cohort_tiny", "page": 0, "pageSize": 5}, "page"),
        ({"cohortCode": "cohort_tiny", "limit": 0}, "limit"),
        ({"cohortCode": "cohort_tiny", "limit": 2.5}, "limit"),
        ({"cohortCode": "$ALL"}, "cohortCode"),
        ({"cohortCode": "no_such_cohort"}, "cohortCode"),
        ({}, "cohortCode"),
        ({"cohortCode": "cohort_tiny", "properties": ["age", "shoe_size"]}, "properties[1]"),
        ({"cohortCode": "cohort_tiny", "properties": ["tag.tag_rfm"]}, "properties[0]"),
        ({"cohortCode": "cohort_tiny", "properties": "age"}, "properties"),
    ],
)
def test_cohort_request_errors(emulator: EmulatorServer, body: dict[str, Any], param: str) -> None:
    for path in (COHORT_USERS, EXPORT):
        if path == EXPORT and "page" in body:
            continue
        assert error_of(call(emulator, "POST", path, body), 400)["data"] == [param]


def test_records_default_properties_tags_and_masks(emulator: EmulatorServer) -> None:
    default = _users(emulator, {"cohortCode": "cohort_tiny"})["users"]
    assert list(default[0]) == catalog.default_user_property_ids()
    assert {u["phone"] for u in default} == {catalog.MASKED_MARKER}
    tagged = _users(emulator, {"cohortCode": "cohort_tiny", "properties": ["tag_rfm", "age"]})
    assert list(tagged["users"][0]) == ["tag.tag_rfm", "age"]


def test_export_matches_the_paged_records(emulator: EmulatorServer) -> None:
    paged = _users(emulator, {"cohortCode": "cohort_small", "limit": 1000})["users"]
    exported = _export_lines(emulator, {"cohortCode": "cohort_small"})
    assert exported == paged


@pytest.mark.parametrize(
    ("limit", "expected"), [(None, 25_000), (1, 1), (8193, 8193), (10**9, 25_000)]
)
def test_export_line_count(emulator: EmulatorServer, limit: int | None, expected: int) -> None:
    body: dict[str, Any] = {"cohortCode": "cohort_medium", "properties": ["distinct_id"]}
    if limit is not None:
        body["limit"] = limit
    lines = _export_lines(emulator, body)
    assert len(lines) == expected
    assert len({line["distinct_id"] for line in lines}) == expected


def test_empty_cohort_export_is_an_empty_body(emulator: EmulatorServer) -> None:
    response = call(emulator, "POST", EXPORT, {"cohortCode": "cohort_empty"})
    assert response.status_code == 200 and response.content == b""


# Accounts


def test_accounts_register_duplicate_disable_enable(fresh_emulator: EmulatorServer) -> None:
    server = fresh_emulator
    first = call(
        server,
        "POST",
        ACCOUNTS + "?loginUser=admin@example.com",
        {"email": "ann@example.com", "userName": "ann", "phone": "13800000000", "password": "pw"},
        account=True,
    )
    assert first.status_code == 200 and set(first.json()) == {"userId", "email"}
    assert "pw" not in first.text
    duplicate = call(server, "POST", ACCOUNTS, {"email": "ann@example.com"}, account=True)
    assert error_of(duplicate, 501) == {
        "code": 50101,
        "msg": duplicate.json()["msg"],
        "data": ["email"],
    }
    same_name = call(
        server, "POST", ACCOUNTS, {"email": "b@example.com", "userName": "ann"}, account=True
    )
    assert error_of(same_name, 501)["data"] == ["userName"]
    path = ACCOUNTS + "/activation?email=ann@example.com"
    assert call(server, "POST", path, {"activation": False}, account=True).json() == {"success": 0}
    disabled = call(server, "POST", ACCOUNTS, {"email": "ann@example.com"}, account=True)
    assert error_of(disabled, 501)["code"] == 50102
    assert call(server, "POST", path, {"activation": True}, account=True).json() == {"success": 0}
    again = call(server, "POST", ACCOUNTS, {"email": "ann@example.com"}, account=True)
    assert error_of(again, 501)["code"] == 50101
    not_bool = call(server, "POST", path, {"activation": "false"}, account=True)
    assert error_of(not_bool, 400)["data"] == ["activation"]
    unknown = call(
        server,
        "POST",
        ACCOUNTS + "/activation?email=x@example.com",
        {"activation": True},
        account=True,
    )
    assert error_of(unknown, 400)["data"] == ["email"]
    no_email = call(server, "POST", ACCOUNTS + "/activation", {"activation": True}, account=True)
    assert error_of(no_email, 400)["data"] == ["email"]
    missing = call(server, "POST", ACCOUNTS, {"userName": "c"}, account=True)
    assert error_of(missing, 400)["data"] == ["email"]


# Admin API effects on the operations


def test_mask_values_and_data_status(fresh_emulator: EmulatorServer, admin: EmulatorAdmin) -> None:
    server = fresh_emulator
    admin.mask_values(["age", "balance"])
    body = {"cohortCode": "cohort_tiny", "properties": ["age", "balance", "score"]}
    for record in _users(server, body)["users"] + _export_lines(server, body):
        assert record["age"] == record["balance"] == catalog.MASKED_MARKER
        assert record["score"] != catalog.MASKED_MARKER
    plan = {r["id"]: r for r in call(server, "GET", USER_PROPERTIES).json()}
    assert plan["age"]["masking"] == 0
    admin.mask_values([])
    assert {u["age"] for u in _users(server, body)["users"]} != {catalog.MASKED_MARKER}
    admin.set_data_status(1, event="refund")
    assert "refund" not in _ids(call(server, "GET", EVENTS + "?dataStatus=0"))


def test_admin_reset_restores_the_plan(
    fresh_emulator: EmulatorServer, admin: EmulatorAdmin
) -> None:
    server = fresh_emulator
    call(server, "POST", USER_PROPERTIES, {"id": "short_lived", "dataType": "string"})
    assert "short_lived" in _ids(call(server, "GET", USER_PROPERTIES))
    admin.reset()
    assert "short_lived" not in _ids(call(server, "GET", USER_PROPERTIES))
