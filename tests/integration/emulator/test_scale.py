"""The emulator at the platform's scale, over real HTTP: cohorts of 10 and 100 million users,
the paged listing's rules, pages that agree with the stream, the proxy cut in front of the
stream, and a membership that changes between calls."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
import requests
from analytics_emulator import catalog
from analytics_emulator.admin_client import AdminClient, AdminError
from analytics_emulator.process import EmulatorProcess
from analytics_emulator.server import EmulatorConfig, EmulatorServer
from analytics_emulator.testing import Secret

from tests.emulator_helpers import project_headers

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.integration

COHORT_USERS = "/uba/api/cohort/users"
EXPORT = "/uba/api/cohort/users/export"
ADMIN_TOKEN = "scale-admin-token"
FEW = ["distinct_id", "email", "age"]


@pytest.fixture(scope="module")
def server() -> Iterator[EmulatorServer]:
    with EmulatorServer(EmulatorConfig(admin_token=ADMIN_TOKEN)) as running:
        yield running


@pytest.fixture
def admin(server: EmulatorServer) -> Iterator[AdminClient]:
    """The admin API; the emulator is reset after the test (cohorts, counts, faults)."""
    client = AdminClient(server.base_url, Secret(ADMIN_TOKEN))
    try:
        yield client
    finally:
        client.reset()


def page(server: EmulatorServer, body: dict[str, Any]) -> dict[str, Any]:
    response = requests.post(
        server.base_url + COHORT_USERS, json=body, headers=project_headers(server), timeout=60
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def stream(server: EmulatorServer, body: dict[str, Any]) -> tuple[bytes, Exception | None]:
    """The body as far as it came, and the error that ended it early, if any."""
    response = requests.post(
        server.base_url + EXPORT,
        json=body,
        headers=project_headers(server),
        stream=True,
        timeout=120,
    )
    assert response.status_code == 200, response.text[:200]
    received = bytearray()
    try:
        for chunk in response.iter_content(1 << 16):
            received += chunk
    except requests.exceptions.ChunkedEncodingError as error:
        return bytes(received), error
    return bytes(received), None


def test_a_ten_million_cohort_is_paged_from_either_end(server: EmulatorServer) -> None:
    code = "cohort_massive"
    first = page(server, {"cohortCode": code, "page": 1, "pageSize": 10_000, "properties": FEW})
    last = page(server, {"cohortCode": code, "page": 1000, "pageSize": 10_000, "properties": FEW})
    beyond = page(server, {"cohortCode": code, "page": 1001, "pageSize": 10_000})
    assert (first["count"], first["page"], first["size"]) == (10_000_000, 1, 10_000)
    assert (last["count"], last["page"], last["size"]) == (10_000_000, 1000, 10_000)
    assert (beyond["size"], beyond["users"]) == (0, [])
    assert first["users"][0]["email"] == "user0@example.com"
    assert last["users"][-1]["email"] == "user9999999@example.com"
    ids = {u["distinct_id"] for u in first["users"] + last["users"]}
    assert len(ids) == 20_000 and all(abs(i) > 2**53 for i in ids)


def test_a_hundred_million_cohort_ends_where_its_count_says(server: EmulatorServer) -> None:
    body = {"cohortCode": "cohort_colossal", "page": 10_000, "pageSize": 10_000}
    answer = page(server, {**body, "properties": ["email"]})
    assert answer["count"] == 100_000_000
    assert answer["users"][-1] == {"email": "user99999999@example.com"}


@pytest.mark.parametrize(("size", "refused"), [(10_000, False), (10_001, True), (10**9, True)])
def test_page_size_is_at_most_the_documented_maximum(
    server: EmulatorServer, size: int, refused: bool
) -> None:
    body = {"cohortCode": "cohort_medium", "page": 1, "pageSize": size, "properties": ["age"]}
    response = requests.post(
        server.base_url + COHORT_USERS, json=body, headers=project_headers(server), timeout=60
    )
    if not refused:
        assert response.status_code == 200 and response.json()["size"] == 10_000
        return
    assert response.status_code == 400
    assert response.json() == {
        "code": 400,
        "msg": "pageSize must not exceed 10000",
        "data": ["pageSize"],
    }


def test_the_largest_page_size_can_be_configured() -> None:
    with EmulatorServer(EmulatorConfig(max_page_size=50)) as small:
        body = {"cohortCode": "cohort_small", "page": 1, "properties": ["age"]}
        assert page(small, {**body, "pageSize": 50})["size"] == 50
        refused = requests.post(
            small.base_url + COHORT_USERS,
            json={**body, "pageSize": 51},
            headers=project_headers(small),
            timeout=60,
        )
        assert refused.status_code == 400 and refused.json()["data"] == ["pageSize"]


def _records(text: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def _pages(
    server: EmulatorServer, code: str, size: int, count: int, **fields: Any
) -> list[dict[str, Any]]:
    users: list[dict[str, Any]] = []
    for number in range(1, -(-count // size) + 1):
        body = {"cohortCode": code, "page": number, "pageSize": size, **fields}
        answer = page(server, body)
        assert answer["count"] == count
        users += answer["users"]
    return users


def test_pages_and_the_stream_give_the_same_users_in_the_same_order(
    server: EmulatorServer,
) -> None:
    """Every default property, over several blocks of the population, pages not aligned
    with the blocks."""
    body, error = stream(server, {"cohortCode": "cohort_medium"})
    assert error is None
    streamed = _records(body)
    paged = _pages(server, "cohort_medium", 7_000, 25_000)
    assert len(streamed) == len(paged) == 25_000
    assert streamed == paged
    assert list(streamed[0]) == catalog.default_user_property_ids()


def test_after_a_shift_pages_and_the_stream_still_agree(
    server: EmulatorServer, admin: AdminClient
) -> None:
    """Members that start at user 5,000 (inside a block): both routes start there."""
    change = {"after_calls": 1, "kind": "shift", "users": 5_000}
    admin.define_cohort("moving", 20_000, membership_change=change)
    before = page(server, {"cohortCode": "moving", "properties": FEW})  # call 1: no change yet
    assert before["users"][0]["email"] == "user0@example.com"
    body, error = stream(server, {"cohortCode": "moving", "properties": FEW})
    assert error is None
    streamed = _records(body)
    paged = _pages(server, "moving", 3_000, 20_000, properties=FEW)
    assert len(streamed) == 20_000 and streamed == paged
    assert streamed[0]["email"] == "user5000@example.com"
    assert streamed[-1]["email"] == "user24999@example.com"


@pytest.mark.parametrize(
    ("kind", "counts"),
    [
        ("shift", [30, 30, 30, 30, 30]),
        ("grow", [30, 30, 37, 37, 44]),
        ("shrink", [30, 30, 23, 23, 16]),
    ],
)
def test_the_membership_changes_after_every_k_calls_of_either_route(
    server: EmulatorServer, admin: AdminClient, kind: str, counts: list[int]
) -> None:
    change = {"after_calls": 2, "kind": kind, "users": 7, "times": 2}
    admin.define_cohort("recomputed", 30, membership_change=change)
    seen: list[tuple[int, str]] = []
    for call in range(5):
        if call % 2:
            body, error = stream(server, {"cohortCode": "recomputed", "properties": ["email"]})
            assert error is None
            users = _records(body)
            count = len(users)
        else:
            answer = page(server, {"cohortCode": "recomputed", "properties": ["email"]})
            users, count = answer["users"], answer["count"]
            assert answer["size"] == len(users) == count
        seen.append((count, users[0]["email"]))
    assert [count for count, _ in seen] == counts
    firsts = [first for _, first in seen]
    if kind == "shift":
        assert firsts == [f"user{n}@example.com" for n in (0, 0, 7, 7, 14)]
    else:
        assert set(firsts) == {"user0@example.com"}
    assert admin.cohorts()["recomputed"]["calls"] == 5
    admin.reset()
    assert "recomputed" not in admin.cohorts()


def test_an_exchange_keeps_the_count_and_the_users_before_it(
    server: EmulatorServer, admin: AdminClient
) -> None:
    """Users 7 and 8 leave and users 30 and 31 join after the first call: the count, the first
    page and every user before position 7 stay; pages and the stream agree on the rest."""
    change = {"after_calls": 1, "kind": "exchange", "users": 2, "at": 7}
    admin.define_cohort("exchanged", 30, membership_change=change)
    before = page(server, {"cohortCode": "exchanged", "properties": ["email"], "limit": 30})
    body, error = stream(server, {"cohortCode": "exchanged", "properties": ["email"]})
    assert error is None
    streamed = _records(body)
    paged = _pages(server, "exchanged", 4, 30, properties=["email"])
    numbers = [int(user["email"][4:].partition("@")[0]) for user in streamed]
    assert numbers == [*range(7), *range(9, 32)]
    assert streamed == paged
    assert before["count"] == len(streamed) == 30
    emails = [user["email"] for user in before["users"]]
    assert emails == [f"user{n}@example.com" for n in range(30)]


def test_the_documented_cut_answers_504_for_a_large_cohort(server: EmulatorServer) -> None:
    response = requests.post(
        server.base_url + EXPORT,
        json={"cohortCode": "cohort_massive", "properties": FEW},
        headers=project_headers(server),
        timeout=60,
    )
    assert response.status_code == 504
    assert response.headers["content-type"].startswith("text/html")
    assert "504 Gateway Time-out" in response.text
    # under the cut (here by `limit`), the same cohort streams
    body, error = stream(server, {"cohortCode": "cohort_massive", "limit": 1_000})
    assert error is None and body.count(b"\n") == 1_000


def _line(server: EmulatorServer, position: int) -> bytes:
    """Line ``position`` (0-based) of an uncut stream of the same users."""
    body, error = stream(
        server, {"cohortCode": "cohort_medium", "limit": position + 1, "properties": FEW}
    )
    assert error is None
    return body.splitlines(keepends=True)[position]


@pytest.mark.parametrize("ending", ["mid_line", "drop"])
def test_a_forwarding_proxy_cuts_after_n_rows(
    server: EmulatorServer, admin: AdminClient, ending: str
) -> None:
    admin.define_cohort("cut", 25_000, proxy_cut={"rows": 10_000, "ending": ending})
    body, error = stream(server, {"cohortCode": "cut", "properties": FEW})
    assert error is not None  # no terminating chunk: the connection was dropped
    complete, _, tail = body.rpartition(b"\n")
    assert complete.count(b"\n") + 1 == 10_000
    next_line = _line(server, 10_000)
    if ending == "drop":
        assert tail == b""
    else:
        assert tail and next_line.startswith(tail) and len(tail) < len(next_line) - 1


def test_a_stream_of_exactly_the_cut_is_not_cut(server: EmulatorServer, admin: AdminClient) -> None:
    admin.define_cohort("cut", 25_000, proxy_cut={"rows": 10_000, "ending": "mid_line"})
    body, error = stream(server, {"cohortCode": "cut", "limit": 10_000, "properties": FEW})
    assert error is None and body.count(b"\n") == 10_000 and body.endswith(b"\n")


def test_a_buffering_proxy_answers_504_past_n_rows_and_streams_below(
    server: EmulatorServer, admin: AdminClient
) -> None:
    admin.define_cohort("cut", 25_000, proxy_cut={"rows": 10_000})
    refused = requests.post(
        server.base_url + EXPORT,
        json={"cohortCode": "cut", "properties": FEW},
        headers=project_headers(server),
        timeout=60,
    )
    assert refused.status_code == 504
    body, error = stream(server, {"cohortCode": "cut", "limit": 9_999, "properties": FEW})
    assert error is None and body.count(b"\n") == 9_999


def test_a_cut_after_some_seconds_ends_a_long_stream(
    server: EmulatorServer, admin: AdminClient
) -> None:
    """Ten million rows cannot stream in half a second: the forwarding proxy drops them
    at a line's end; the buffering one answers 504 instead."""
    cut = {"rows": None, "seconds": 0.5}
    admin.define_cohort("slow", 10_000_000, proxy_cut={**cut, "ending": "drop"})
    body, error = stream(server, {"cohortCode": "slow", "properties": FEW})
    assert error is not None
    assert body.endswith(b"\n") and 0 < body.count(b"\n") < 10_000_000
    admin.define_cohort("slow", 10_000_000, proxy_cut=cut)
    refused = requests.post(
        server.base_url + EXPORT,
        json={"cohortCode": "slow", "properties": FEW},
        headers=project_headers(server),
        timeout=120,
    )
    assert refused.status_code == 504
    admin.define_cohort("quick", 7, proxy_cut={"rows": None, "seconds": 60})
    body, error = stream(server, {"cohortCode": "quick"})
    assert error is None and body.count(b"\n") == 7


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"size": -1}, "size"),
        ({"size": 5, "proxy_cut": {"rows": -5}}, "proxy_cut.rows"),
        ({"size": 5, "proxy_cut": {"ending": "slowly"}}, "proxy_cut.ending"),
        ({"size": 5, "membership_change": {"kind": "shift"}}, "membership_change.after_calls"),
        ({"size": 5, "members": 3}, "members"),
    ],
)
def test_a_cohort_setting_that_does_not_fit_is_refused_by_name(
    server: EmulatorServer, body: dict[str, Any], field: str
) -> None:
    response = requests.put(
        server.base_url + "/_emulator/cohorts/bad",
        json=body,
        headers={"X-Emulator-Admin": ADMIN_TOKEN},
        timeout=30,
    )
    assert response.status_code == 400 and response.json()["data"] == [field]


def test_the_admin_client_reports_a_refusal_with_the_emulators_message(
    admin: AdminClient,
) -> None:
    with pytest.raises(AdminError, match=r"400 proxy_cut.rows must be an integer") as refused:
        admin.define_cohort("bad", 5, proxy_cut={"rows": "many"})
    assert refused.value.status == 400
    assert ADMIN_TOKEN not in str(refused.value) and ADMIN_TOKEN not in repr(admin)


def test_the_command_line_sets_cuts_and_changes() -> None:
    options = [
        "--admin-token=cli-admin",
        "--proxy-cut=cohort_massive:off",
        "--proxy-cut=cohort_small:rows=10,ending=drop",
        "--membership-change=cohort_tiny:after_calls=2,kind=grow,users=3",
        "--max-page-size=20",
    ]
    credentials = {"token": "t", "app_key": "k", "xtoken": "x"}
    with EmulatorProcess(credentials=credentials, options=options) as process:
        admin = AdminClient(process.base_url, Secret("cli-admin"))
        cohorts = admin.cohorts()
        refused = requests.post(
            process.base_url + COHORT_USERS,
            json={"cohortCode": "cohort_small", "page": 1, "pageSize": 21},
            headers={"token": "t", "appKey": "k"},
            timeout=30,
        )
    assert cohorts["cohort_massive"]["proxy_cut"] is None
    assert cohorts["cohort_colossal"]["proxy_cut"] == {
        "rows": 2_000_000,
        "seconds": None,
        "ending": "504",
    }
    assert cohorts["cohort_small"]["proxy_cut"] == {"rows": 10, "seconds": None, "ending": "drop"}
    assert cohorts["cohort_tiny"]["membership_change"] == {
        "after_calls": 2,
        "kind": "grow",
        "users": 3,
        "times": 1,
        "at": 0,
    }
    assert refused.status_code == 400 and refused.json()["data"] == ["pageSize"]


def test_the_command_line_refuses_a_setting_by_name() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "analytics_emulator", "--port=0", "--proxy-cut=c:rows=-3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "proxy_cut.rows must be an integer of at least 0" in done.stderr
