"""Hypothesis against the emulator's request parsing over real HTTP: whatever the body, query,
path or content type, the answer is a success or a 4xx in the platform's ``{code, msg, data}``
shape, never a 500."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

import pytest
import requests
from analytics_emulator.server import EmulatorConfig, EmulatorServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.emulator_helpers import ADMIN_HEADER, account_headers, project_headers
from tests.reliability.fuzzing import json_values, mutated, to_json
from tests.reliability.results import record
from tests.reliability.subjects import EVENT_REQUEST, FUNNEL_REQUEST

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.integration

EXAMPLES: Final = 60
UTM: Final = "/svc/uba/api/operations/utm"
SCHEMA: Final = "/uba/api/schema"
ACCOUNTS: Final = "/uba/manage/enterprise/accounts"
FUZZ_SETTINGS: Final = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@dataclass(frozen=True)
class Endpoint:
    """One operation of the interface and a valid request for it.

    :param path: the path; ``{campaign}`` is filled with a valid or a fuzzed campaign id.
    :param body: a valid JSON body, ``None`` for operations without one.
    :param query: valid query parameters.
    :param account: authenticated by ``xtoken`` instead of ``token`` and ``appKey``.
    """

    name: str
    method: str
    path: str
    body: Any = None
    query: dict[str, str] = field(default_factory=dict)
    account: bool = False


ENDPOINTS: Final = (
    Endpoint(
        "create_utm",
        "POST",
        UTM,
        {
            "pageUrl": "https://shop.example.com/",
            "utmCampaign": "c",
            "utmMedium": "m",
            "utmSource": "s",
            "utmContent": "x",
            "utmTerm": "t",
            "remarks": "r",
            "utmType": "link",
        },
        {"loginUser": "ops@example.com"},
    ),
    Endpoint("get_utm", "GET", UTM + "/{campaign}"),
    Endpoint(
        "get_utm_conversion",
        "POST",
        UTM + "/analysys/{campaign}",
        {
            "fromDate": "2024-01-10",
            "toDate": "2024-01-20",
            "useCache": False,
            "convertMeasures": [{"expression": "event.purchase", "aggregator": "TOTAL_COUNT"}],
        },
    ),
    Endpoint("delete_utm", "DELETE", UTM + "/drop/{campaign}"),
    Endpoint(
        "list_user_properties",
        "GET",
        SCHEMA + "/userProperties",
        query={"plan": "1", "dataStatus": "1"},
    ),
    Endpoint("list_events", "GET", SCHEMA + "/event", query={"plan": "0"}),
    Endpoint(
        "list_event_properties", "GET", SCHEMA + "/eventProperties", query={"eventId": "purchase"}
    ),
    Endpoint(
        "add_user_property",
        "POST",
        SCHEMA + "/userProperties",
        {"id": "fuzz_level", "name": "Fuzz level", "dataType": "number", "remark": ""},
    ),
    Endpoint(
        "add_event",
        "POST",
        SCHEMA + "/event",
        {
            "id": "fuzz_event",
            "name": "Fuzz",
            "remark": "r",
            "properties": [{"id": "fuzz_prop", "name": "P", "dataType": "string", "remark": ""}],
        },
    ),
    Endpoint(
        "update_user_property",
        "PUT",
        SCHEMA + "/userProperties",
        {"name": "Pending", "dataType": "boolean", "remark": "r"},
        {"id": "pending_flag"},
    ),
    Endpoint(
        "update_event", "PUT", SCHEMA + "/event", {"name": "P", "remark": "r"}, {"id": "purchase"}
    ),
    Endpoint(
        "update_event_property",
        "PUT",
        SCHEMA + "/eventProperties",
        {"name": "Amount", "remark": "r"},
        {"eventId": "purchase", "propertyId": "amount"},
    ),
    Endpoint(
        "get_cohort_users",
        "POST",
        "/uba/api/cohort/users",
        {
            "cohortCode": "cohort_small",
            "limit": 20,
            "properties": ["distinct_id", "age", "tag_rfm"],
            "page": 2,
            "pageSize": 5,
        },
    ),
    Endpoint(
        "export_cohort_users",
        "POST",
        "/uba/api/cohort/users/export",
        {"cohortCode": "cohort_tiny", "limit": 5, "properties": ["distinct_id", "interests"]},
    ),
    Endpoint(
        "register_account",
        "POST",
        ACCOUNTS,
        {
            "email": "fuzz@example.com",
            "userName": "fuzz",
            "name": "Fuzz",
            "password": "pw",
            "phone": "+86 138 0000 0000",
            "department": "QA",
        },
        {"loginUser": "ops@example.com"},
        account=True,
    ),
    Endpoint(
        "set_account_activation",
        "POST",
        ACCOUNTS + "/activation",
        {"activation": False},
        {"email": "fuzz@example.com"},
        account=True,
    ),
    Endpoint("analyze_funnel", "POST", "/uba/api/funnels/analyze", FUNNEL_REQUEST),
    Endpoint("analyze_events", "POST", "/uba/api/events/analyze", EVENT_REQUEST),
)

ADMIN_FAULT: Final = Endpoint(
    "admin faults",
    "POST",
    "/_emulator/faults",
    {"operation": "list_user_properties", "kind": "status", "status": 503, "times": 1},
)
CONTENT_TYPES: Final = (
    "application/json",
    "application/json; charset=utf-8",
    "text/plain",
    "application/x-www-form-urlencoded",
    "APPLICATION/JSON",
    "",
)


@dataclass
class Attempt:
    """One fuzzed request."""

    path_value: str | None = None
    query: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    content_type: str | None = "application/json"


@st.composite
def attempts(draw: st.DrawFn, endpoint: Endpoint) -> Attempt:
    """A request to ``endpoint`` wrong in one of its parts (sometimes in none)."""
    attempt = Attempt(query=dict(endpoint.query))
    part = draw(st.sampled_from(("body", "body", "body", "raw", "query", "path", "type")))
    body = endpoint.body
    if part == "body" and body is not None:
        body = draw(mutated(body))
    if body is not None:
        attempt.body = to_json(body, ensure_ascii=draw(st.booleans()))
    if part == "raw":
        attempt.body = draw(st.binary(max_size=120))
    if part == "query":
        keys = st.sampled_from(
            ("plan", "dataStatus", "eventId", "id", "propertyId", "email", "loginUser", "x")
        )
        attempt.query = draw(st.dictionaries(keys, st.text(max_size=20), max_size=4))
    if "{campaign}" in endpoint.path:
        attempt.path_value = draw(st.text(min_size=0, max_size=25)) if part == "path" else "{valid}"
    if part == "type":
        attempt.content_type = draw(st.sampled_from((None, *CONTENT_TYPES)))
    return attempt


@pytest.fixture(scope="module")
def server() -> Iterator[EmulatorServer]:
    """An emulator of its own: fuzzed requests that happen to be valid change its state."""
    with EmulatorServer(EmulatorConfig(admin_token="fuzz-admin-token")) as running:
        yield running


@pytest.fixture(scope="module")
def http() -> Iterator[requests.Session]:
    with requests.Session() as session:
        yield session


def send(
    http: requests.Session, server: EmulatorServer, endpoint: Endpoint, attempt: Attempt
) -> requests.Response:
    headers = account_headers(server) if endpoint.account else project_headers(server)
    if endpoint is ADMIN_FAULT:
        headers = {ADMIN_HEADER: str(server.config.admin_token)}
    if attempt.content_type is not None:
        headers["Content-Type"] = attempt.content_type
    path = endpoint.path
    if attempt.path_value is not None:
        value = (
            valid_campaign(http, server) if attempt.path_value == "{valid}" else attempt.path_value
        )
        path = path.replace("{campaign}", quote(value, safe=""))
    return http.request(
        endpoint.method,
        server.base_url + path,
        params=attempt.query,
        data=attempt.body,
        headers=headers,
        timeout=60,
    )


def valid_campaign(http: requests.Session, server: EmulatorServer) -> str:
    created = http.post(
        server.base_url + UTM,
        json=ENDPOINTS[0].body,
        headers=project_headers(server),
        timeout=30,
    )
    return str(created.json()["campaignId"])


def check_answer(response: requests.Response) -> None:
    """A success, a 4xx or the platform's 501 "not completed" (a duplicate account): never a
    500 or another server error."""
    status = response.status_code
    assert status < 500 or status == 501, f"{status}: {response.text[:300]}"
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"code", "msg", "data"}, body
        assert isinstance(body["msg"], str) and body["msg"]


@pytest.mark.parametrize("endpoint", [*ENDPOINTS, ADMIN_FAULT], ids=lambda e: e.name)
def test_bad_requests_never_get_a_server_error(
    server: EmulatorServer, http: requests.Session, endpoint: Endpoint
) -> None:
    statuses: Counter[int] = Counter()

    @FUZZ_SETTINGS
    @given(attempt=attempts(endpoint))
    def fuzz(attempt: Attempt) -> None:
        response = send(http, server, endpoint, attempt)
        statuses[response.status_code] += 1
        check_answer(response)

    try:
        fuzz()
    finally:
        requests.delete(
            server.base_url + "/_emulator/faults",
            headers={ADMIN_HEADER: str(server.config.admin_token)},
            timeout=30,
        )
    record(
        "fuzz",
        {
            "target": f"emulator {endpoint.name}",
            "examples": sum(statuses.values()),
            "statuses": statuses,
        },
    )
    assert sum(statuses.values()) >= EXAMPLES // 2
    assert any(status >= 400 for status in statuses)


@FUZZ_SETTINGS
@given(body=json_values)
def test_any_json_body_to_any_operation_is_a_client_error_at_worst(
    server: EmulatorServer, http: requests.Session, body: Any
) -> None:
    for endpoint in ENDPOINTS:
        if endpoint.body is None:
            continue
        attempt = Attempt(query=dict(endpoint.query), body=to_json(body))
        if "{campaign}" in endpoint.path:
            attempt.path_value = "1"
        check_answer(send(http, server, endpoint, attempt))
