"""Every operation's request (method, path, headers, query, body) and returned value."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from airflow_provider_analytics.client import (
    AnalyticsClient,
    AnalyticsConfigurationError,
    ClientConfig,
    CohortExport,
)
from airflow_provider_analytics.client.analysis_requests import EventRequest
from airflow_provider_analytics.client.answers import AnswerShapeError, decode
from airflow_provider_analytics.client.api import AnalysisAnswer
from airflow_provider_analytics.client.operations import GET_UTM
from airflow_provider_analytics.core.page_lines import PageParts

if TYPE_CHECKING:
    from collections.abc import Callable

    import requests_mock as rm

BASE = "https://analytics.example.com:4005"
TOKEN, APP_KEY, XTOKEN = "tok-7f3a", "app-91bc", "xt-55de"
NO_BODY = object()
OK = {"success": 0}

FUNNEL_REQUEST = {
    "steps": [
        {"expression": "event.$startup", "filter": None},
        {
            "expression": "event.purchase",
            "filter": {
                "conditions": [
                    {"expression": "event.purchase.amount", "function": "GT", "params": [10]}
                ],
                "relation": "and",
            },
        },
    ],
    "crowds": ["$ALL"],
    "fromDate": datetime.date(2024, 1, 1),
    "toDate": "2024-01-07",
    "byField": {"expression": "user.age", "buckets": [18, 30]},
    "byStepIndex": -1,
    "convertTime": 1,
    "convertTimeUnit": "DAY",
    "samplingFactor": 1,
    "useCache": False,
    "limit": None,
}
FUNNEL_BODY = {
    "steps": [
        {"expression": "event.$startup", "filter": None},
        {
            "expression": "event.purchase",
            "filter": {
                "conditions": [
                    {"expression": "event.purchase.amount", "function": "GT", "params": [10]}
                ],
                "relation": "AND",
            },
        },
    ],
    "crowds": ["$ALL"],
    "fromDate": "2024-01-01",
    "toDate": "2024-01-07",
    "byField": {"expression": "user.age", "buckets": [18, 30]},
    "byStepIndex": -1,
    "convertTime": 1,
    "convertTimeUnit": "DAY",
    "samplingFactor": 1,
    "useCache": False,
}
FUNNEL_RESULT = {
    "dateList": ["$ALL"],
    "byValues": [],
    "rows": [],
    "stepEvents": [step["expression"] for step in FUNNEL_REQUEST["steps"]],
}

EVENTS_REQUEST = {
    "measures": [
        {"expression": "event.$Anything", "aggregator": "TRIGGER_USER_COUNT"},
        {
            "expression": "event.purchase.amount",
            "aggregator": "SUM",
            "filter": {
                "conditions": [{"expression": "user.is_vip", "function": "TRUE"}],
                "relation": "OR",
            },
        },
    ],
    "crowds": ["cohort_small"],
    "fromDate": "2024-01-01",
    "toDate": "2024-01-01",
    "unit": "HOUR",
    "byFields": [{"expression": "event.purchase.$city", "buckets": None}],
}
EVENTS_BODY = {
    "measures": [
        {"expression": "event.$Anything", "aggregator": "TRIGGER_USER_COUNT"},
        {
            "expression": "event.purchase.amount",
            "aggregator": "SUM",
            "filter": {
                "conditions": [{"expression": "user.is_vip", "function": "TRUE", "params": []}],
                "relation": "OR",
            },
        },
    ],
    "crowds": ["cohort_small"],
    "fromDate": "2024-01-01",
    "toDate": "2024-01-01",
    "unit": "HOUR",
    "byFields": [{"expression": "event.purchase.$city"}],  # null buckets: not sent
}
EVENTS_RESULT = {
    "measures": ["a", "b"],
    "byFields": ["event.purchase.$city"],
    "series": ["2024-01-01 00:00"],
    "rows": [],
    "numRows": 0,
}

USER_RECORD = {"id": "age", "name": "Age", "dataType": "number", "plan": 1}
UTM_RECORD = {
    "id": 1,
    "campaignId": "12345",
    "pageUrl": "https://shop.example.com/",
    "url": "https://shop.example.com/?campaign_id=12345",
}
COHORT_PAGE = {"count": 7, "page": 2, "size": 2, "users": [{"distinct_id": 1}, {"distinct_id": 2}]}


# (id, call, method, path, query, body, auth, answer, expected return)
CASES: list[tuple[str, Callable[[AnalyticsClient], Any], str, str, dict, Any, str, Any, Any]] = [
    (
        "create_utm",
        lambda c: c.create_utm(
            "https://shop.example.com/landing?x=1",
            "spring",
            "cpc",
            "search",
            utm_content="banner",
            utm_term="shoes",
            remarks="Q2 push",
            utm_type="web",
            login_user="ops@example.com",
        ),
        "POST",
        "/svc/uba/api/operations/utm",
        {"loginUser": "ops@example.com"},
        {
            "pageUrl": "https://shop.example.com/landing?x=1",
            "utmCampaign": "spring",
            "utmMedium": "cpc",
            "utmSource": "search",
            "utmContent": "banner",
            "utmTerm": "shoes",
            "remarks": "Q2 push",
            "utmType": "web",
        },
        "project",
        {"success": 0, "campaignId": 12345},
        "12345",
    ),
    (
        "create_utm_minimal",
        lambda c: c.create_utm("https://shop.example.com", "spring", "cpc", "search"),
        "POST",
        "/svc/uba/api/operations/utm",
        {},
        {
            "pageUrl": "https://shop.example.com",
            "utmCampaign": "spring",
            "utmMedium": "cpc",
            "utmSource": "search",
        },
        "project",
        {"success": 0, "campaignId": "C-9"},
        "C-9",
    ),
    (
        "get_utm",
        lambda c: c.get_utm(12345),
        "GET",
        "/svc/uba/api/operations/utm/12345",
        {},
        NO_BODY,
        "project",
        UTM_RECORD,
        UTM_RECORD,
    ),
    (
        "get_utm_conversion",
        lambda c: c.get_utm_conversion(
            "12345",
            "2024-01-01",
            datetime.date(2024, 1, 31),
            expression="event.purchase",
            convert_measures=[
                {"expression": "event.purchase", "aggregator": "TRIGGER_USER_COUNT"},
                {"expression": "event.purchase.amount", "aggregator": "SUM"},
            ],
            use_cache=False,
        ),
        "POST",
        "/svc/uba/api/operations/utm/analysys/12345",
        {},
        {
            "fromDate": "2024-01-01",
            "toDate": "2024-01-31",
            "useCache": False,
            "expression": "event.purchase",
            "convertMeasures": [
                {"expression": "event.purchase", "aggregator": "TRIGGER_USER_COUNT"},
                {"expression": "event.purchase.amount", "aggregator": "SUM"},
            ],
        },
        "project",
        {"success": 0, "measures": [3]},
        {"success": 0, "measures": [3]},
    ),
    (
        "delete_utm",
        lambda c: c.delete_utm("12345"),
        "DELETE",
        "/svc/uba/api/operations/utm/drop/12345",
        {},
        NO_BODY,
        "project",
        OK,
        None,
    ),
    (
        "list_user_properties",
        lambda c: c.list_user_properties(plan=1, data_status=0),
        "GET",
        "/uba/api/schema/userProperties",
        {"plan": "1", "dataStatus": "0"},
        NO_BODY,
        "project",
        [USER_RECORD],
        [USER_RECORD],
    ),
    (
        "list_events",
        lambda c: c.list_events(),
        "GET",
        "/uba/api/schema/event",
        {},
        NO_BODY,
        "project",
        [],
        [],
    ),
    (
        "list_event_properties",
        lambda c: c.list_event_properties("$pageview", plan=0),
        "GET",
        "/uba/api/schema/eventProperties",
        {"eventId": "$pageview", "plan": "0"},
        NO_BODY,
        "project",
        [{"id": "$url", "dataType": "string"}],
        [{"id": "$url", "dataType": "string"}],
    ),
    (
        "add_user_property",
        lambda c: c.add_user_property("vip_level", "number", name="VIP level", remark="From CRM"),
        "POST",
        "/uba/api/schema/userProperties",
        {},
        {"id": "vip_level", "name": "VIP level", "dataType": "number", "remark": "From CRM"},
        "project",
        OK,
        None,
    ),
    (
        "add_event",
        lambda c: c.add_event(
            "checkout",
            name="结账 (web)",
            properties=[
                {"id": "amount", "data_type": "number", "name": "Amount", "remark": None},
                {"id": "coupon", "dataType": "array<string>"},
            ],
        ),
        "POST",
        "/uba/api/schema/event",
        {},
        {
            "id": "checkout",
            "name": "结账 (web)",
            "properties": [
                {"id": "amount", "dataType": "number", "name": "Amount"},
                {"id": "coupon", "dataType": "array<string>"},
            ],
        },
        "project",
        OK,
        None,
    ),
    (
        "update_user_property",
        lambda c: c.update_user_property("pending_flag", data_type="boolean"),
        "PUT",
        "/uba/api/schema/userProperties",
        {"id": "pending_flag"},
        {"dataType": "boolean"},
        "project",
        OK,
        None,
    ),
    (
        "update_event",
        lambda c: c.update_event("$startup", name="App start", remark="Cold and warm"),
        "PUT",
        "/uba/api/schema/event",
        {"id": "$startup"},
        {"name": "App start", "remark": "Cold and warm"},
        "project",
        OK,
        None,
    ),
    (
        "update_event_property",
        lambda c: c.update_event_property("purchase", "amount", remark="Order total"),
        "PUT",
        "/uba/api/schema/eventProperties",
        {"eventId": "purchase", "propertyId": "amount"},
        {"remark": "Order total"},
        "project",
        OK,
        None,
    ),
    (
        "get_cohort_users",
        lambda c: c.get_cohort_users(
            "cohort_small",
            limit=10,
            properties=["distinct_id", "$city", "tag.tag_rfm"],
            page=2,
            page_size=2,
        ),
        "POST",
        "/uba/api/cohort/users",
        {},
        {
            "cohortCode": "cohort_small",
            "limit": 10,
            "properties": ["distinct_id", "$city", "tag_rfm"],
            "page": 2,
            "pageSize": 2,
        },
        "project",
        COHORT_PAGE,
        COHORT_PAGE,
    ),
    (
        "get_cohort_user_lines",  # the users kept as the lines that were sent
        lambda c: c.get_cohort_user_lines("cohort_small", limit=10, page=2, page_size=2),
        "POST",
        "/uba/api/cohort/users",
        {},
        {"cohortCode": "cohort_small", "limit": 10, "page": 2, "pageSize": 2},
        "project",
        COHORT_PAGE,
        PageParts(
            {"count": 7, "page": 2, "size": 2},
            2,
            b'{"distinct_id": 1}\n{"distinct_id": 2}\n',
        ),
    ),
    (
        "register_account",
        lambda c: c.register_account(
            "new.person@example.com",
            user_name="newbie",
            name="New Person",
            password="Initial-Pass-1",
            phone="+86 138 0000 0000",
            department="Growth",
            login_user="admin@example.com",
        ),
        "POST",
        "/uba/manage/enterprise/accounts",
        {"loginUser": "admin@example.com"},
        {
            "email": "new.person@example.com",
            "userName": "newbie",
            "name": "New Person",
            "password": "Initial-Pass-1",
            "phone": "+86 138 0000 0000",
            "department": "Growth",
        },
        "platform",
        {"userId": 42, "email": "new.person@example.com"},
        {"userId": 42, "email": "new.person@example.com"},
    ),
    (
        "set_account_activation",
        lambda c: c.set_account_activation(
            "new.person@example.com", False, login_user="admin@example.com"
        ),
        "POST",
        "/uba/manage/enterprise/accounts/activation",
        {"email": "new.person@example.com", "loginUser": "admin@example.com"},
        {"activation": False},
        "platform",
        OK,
        None,
    ),
    (
        "analyze_funnel",
        lambda c: c.analyze_funnel(FUNNEL_REQUEST),
        "POST",
        "/uba/api/funnels/analyze",
        {},
        FUNNEL_BODY,
        "project",
        FUNNEL_RESULT,
        FUNNEL_RESULT,
    ),
    (
        "analyze_events",
        lambda c: c.analyze_events(EVENTS_REQUEST),
        "POST",
        "/uba/api/events/analyze",
        {},
        EVENTS_BODY,
        "project",
        EVENTS_RESULT,
        EVENTS_RESULT,
    ),
    (
        "analyze",  # a checked request; the answer comes with its Date (none sent here)
        lambda c: c.analyze(EventRequest.model_validate(EVENTS_REQUEST)),
        "POST",
        "/uba/api/events/analyze",
        {},
        EVENTS_BODY,
        "project",
        EVENTS_RESULT,
        AnalysisAnswer(decode("analyze_events", EVENTS_RESULT), EVENTS_RESULT, None),
    ),
]


@pytest.fixture
def client() -> AnalyticsClient:
    config = ClientConfig(BASE, token=TOKEN, app_key=APP_KEY, xtoken=XTOKEN)
    return AnalyticsClient(config, sleep=lambda _: None)


def assert_auth_headers(headers: Any, auth: str) -> None:
    if auth == "project":
        assert headers["token"] == TOKEN
        assert headers["appKey"] == APP_KEY
        assert "xtoken" not in headers
    else:
        assert headers["xtoken"] == XTOKEN
        assert "token" not in headers and "appKey" not in headers


@pytest.mark.parametrize(
    ("call", "method", "path", "query", "body", "auth", "answer", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_operation_request_and_result(
    client: AnalyticsClient,
    requests_mock: rm.Mocker,
    call: Callable[[AnalyticsClient], Any],
    method: str,
    path: str,
    query: dict[str, str],
    body: Any,
    auth: str,
    answer: Any,
    expected: Any,
) -> None:
    requests_mock.register_uri(method, BASE + path, json=answer)

    assert call(client) == expected

    assert requests_mock.call_count == 1
    sent = requests_mock.last_request
    assert sent.method == method
    assert urlsplit(sent.url).path == path
    assert dict(parse_qsl(urlsplit(sent.url).query)) == query
    assert_auth_headers(sent.headers, auth)
    assert sent.headers["User-Agent"].startswith("airflow-provider-analytics/")
    assert sent.timeout == (10.0, 60.0)
    if body is NO_BODY:
        assert sent.body is None
        assert "Content-Type" not in sent.headers
    else:
        assert sent.headers["Content-Type"] == "application/json"
        assert sent.json() == body


def test_every_operation_has_a_request_case() -> None:
    names = {case[0] for case in CASES} | {"export_cohort_users", "iter_cohort_user_pages"}
    public = {
        name
        for name in dir(AnalyticsClient)
        if not name.startswith("_") and callable(getattr(AnalyticsClient, name))
    }
    assert public - names == {"close", "progress", "request_json", "test_connection"}


def test_query_values_are_percent_encoded(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.post(BASE + "/uba/manage/enterprise/accounts/activation", json=OK)
    requests_mock.get(BASE + "/uba/api/schema/eventProperties", json=[])
    client.set_account_activation("a+b@example.com", True)
    assert urlsplit(requests_mock.last_request.url).query == "email=a%2Bb%40example.com"
    client.list_event_properties("$pageview")
    assert urlsplit(requests_mock.last_request.url).query == "eventId=%24pageview"


def test_path_parameters_are_encoded_with_no_safe_characters() -> None:
    assert GET_UTM.build_path("/svc", campaign_id="a/../b?c=1#d") == (
        "/svc/uba/api/operations/utm/a%2F..%2Fb%3Fc%3D1%23d"
    )
    assert GET_UTM.build_path("", campaign_id="x y") == "/uba/api/operations/utm/x%20y"


@pytest.mark.parametrize(("prefix", "expected"), [("/ark", "/ark"), ("", ""), ("svc", "/svc")])
def test_ad_tracking_paths_follow_the_configured_prefix(
    requests_mock: rm.Mocker, prefix: str, expected: str
) -> None:
    client = AnalyticsClient(
        ClientConfig(BASE, token=TOKEN, app_key=APP_KEY, utm_prefix=prefix),
    )
    requests_mock.delete(BASE + expected + "/uba/api/operations/utm/drop/7", json=OK)
    requests_mock.get(BASE + "/uba/api/schema/event", json=[])
    client.delete_utm(7)
    client.list_events()
    paths = [urlsplit(r.url).path for r in requests_mock.request_history]
    assert paths == [expected + "/uba/api/operations/utm/drop/7", "/uba/api/schema/event"]


def test_base_url_path_is_kept(requests_mock: rm.Mocker) -> None:
    client = AnalyticsClient(ClientConfig(BASE + "/gateway/", token=TOKEN, app_key=APP_KEY))
    requests_mock.get(BASE + "/gateway/uba/api/schema/event", json=[])
    client.list_events()
    assert urlsplit(requests_mock.last_request.url).path == "/gateway/uba/api/schema/event"


def test_export_request_uses_the_export_read_timeout(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.post(BASE + "/uba/api/cohort/users/export", content=b'{"a":1}\n{"a":2}\n')
    with client.export_cohort_users("cohort_tiny", limit=5, properties=["distinct_id"]) as export:
        assert isinstance(export, CohortExport)
        assert list(export.iter_records()) == [{"a": 1}, {"a": 2}]
    sent = requests_mock.last_request
    assert sent.json() == {"cohortCode": "cohort_tiny", "limit": 5, "properties": ["distinct_id"]}
    assert sent.timeout == (10.0, 600.0)
    assert_auth_headers(sent.headers, "project")


def test_cohort_pages_are_read_until_the_cohort_count(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    users = [{"distinct_id": i} for i in range(7)]
    pages = [
        {"json": {"count": 7, "page": n, "size": len(chunk), "users": chunk}}
        for n, chunk in enumerate((users[0:3], users[3:6], users[6:7]), start=1)
    ]
    requests_mock.post(BASE + "/uba/api/cohort/users", pages)

    got = list(client.iter_cohort_user_pages("cohort_tiny", page_size=3))

    assert [u for page in got for u in page["users"]] == users
    sent = [r.json() for r in requests_mock.request_history]
    assert sent == [{"cohortCode": "cohort_tiny", "page": n, "pageSize": 3} for n in (1, 2, 3)]


def _pages_of(count: int) -> Any:
    """A paged endpoint that echoes the page asked and numbers its users across pages."""

    def answer(request: Any, context: Any) -> dict[str, Any]:
        asked = request.json()
        first = (asked["page"] - 1) * asked["pageSize"]
        users = [{"distinct_id": i} for i in range(first, min(first + asked["pageSize"], count))]
        return {"count": count, "page": asked["page"], "size": len(users), "users": users}

    return answer


def test_cohort_pages_stop_at_the_limit(client: AnalyticsClient, requests_mock: rm.Mocker) -> None:
    requests_mock.post(BASE + "/uba/api/cohort/users", json=_pages_of(1000))

    got = list(client.iter_cohort_user_pages("cohort_small", page_size=2, limit=4))

    assert len(got) == 2
    bodies = [r.json() for r in requests_mock.request_history]
    assert [b["page"] for b in bodies] == [1, 2]
    assert all(b["limit"] == 4 and b["pageSize"] == 2 for b in bodies)


def test_cohort_page_size_is_capped_by_a_smaller_limit(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    page = {"count": 1000, "page": 1, "size": 5, "users": [{"i": i} for i in range(5)]}
    requests_mock.post(BASE + "/uba/api/cohort/users", json=page)
    assert len(list(client.iter_cohort_user_pages("cohort_small", limit=5))) == 1
    assert requests_mock.last_request.json()["pageSize"] == 5


def test_an_empty_page_before_count_is_reached_is_refused_naming_the_page(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.post(
        BASE + "/uba/api/cohort/users", json={"count": 50, "page": 1, "size": 0, "users": []}
    )
    with pytest.raises(AnswerShapeError, match=r"page 1: holds 0 users.*50 more are promised"):
        list(client.iter_cohort_user_pages("cohort_small", page_size=10))


def test_test_connection_reads_the_event_plan(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(BASE + "/uba/api/schema/event", json=[{"id": "a"}, {"id": "b"}])
    ok, message = client.test_connection()
    assert ok is True
    assert "2 events" in message
    assert dict(parse_qsl(urlsplit(requests_mock.last_request.url).query)) == {"plan": "1"}


def test_test_connection_reports_failure_instead_of_raising(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(BASE + "/uba/api/schema/event", status_code=404, json={"code": 404})
    ok, message = client.test_connection()
    assert ok is False
    assert "no such API" in message


@pytest.mark.parametrize(
    ("settings", "call", "missing"),
    [
        ({"app_key": APP_KEY}, lambda c: c.list_events(), "token"),
        ({"token": TOKEN}, lambda c: c.get_utm(1), "appKey"),
        ({"xtoken": XTOKEN}, lambda c: c.list_events(), "token and appKey"),
        (
            {"token": TOKEN, "app_key": APP_KEY},
            lambda c: c.set_account_activation("a@b.io", True),
            "xtoken",
        ),
    ],
)
def test_missing_credentials_fail_before_sending(
    requests_mock: rm.Mocker,
    settings: dict[str, str],
    call: Callable[[AnalyticsClient], Any],
    missing: str,
) -> None:
    client = AnalyticsClient(ClientConfig(BASE, **settings))
    with pytest.raises(AnalyticsConfigurationError, match=missing) as caught:
        call(client)
    assert caught.value.operation is not None
    assert requests_mock.call_count == 0


def test_client_is_a_context_manager_that_closes_its_own_session(
    requests_mock: rm.Mocker,
) -> None:
    requests_mock.get(BASE + "/uba/api/schema/event", json=[])
    with AnalyticsClient(ClientConfig(BASE, token=TOKEN, app_key=APP_KEY)) as client:
        client.list_events()
    assert "tok" not in repr(client)
    assert repr(client) == f"AnalyticsClient(base_url={BASE!r}, utm_prefix='/svc')"


def test_a_given_session_is_used_and_left_open(requests_mock: rm.Mocker) -> None:
    import requests

    class CountingSession(requests.Session):
        closed = 0
        sent = 0

        def request(self, *args: Any, **kwargs: Any) -> requests.Response:
            CountingSession.sent += 1
            return super().request(*args, **kwargs)

        def close(self) -> None:
            CountingSession.closed += 1
            super().close()

    requests_mock.get(BASE + "/uba/api/schema/event", json=[])
    session = CountingSession()
    with AnalyticsClient(
        ClientConfig(BASE, token=TOKEN, app_key=APP_KEY), session=session
    ) as client:
        client.list_events()
    assert (CountingSession.sent, CountingSession.closed) == (1, 0)


def test_a_non_config_is_refused() -> None:
    with pytest.raises(AnalyticsConfigurationError, match="ClientConfig"):
        AnalyticsClient({"base_url": BASE})  # type: ignore[arg-type]


def test_an_api_calls_path_is_built_still() -> None:
    """Deprecated ``ApiCall.path``: the same path the client sends to."""
    from airflow_provider_analytics.client.operations import GET_UTM, ApiCall

    call = ApiCall(GET_UTM, path_params={"campaign_id": "a/b"})
    with pytest.deprecated_call(match="path_params"):
        assert call.path("/svc") == "/svc/uba/api/operations/utm/a%2Fb"
