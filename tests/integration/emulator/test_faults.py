"""Injected faults as a client sees them, and the admin API's guard and statistics."""

from __future__ import annotations

import http.client
import json
import time
from datetime import date
from typing import TYPE_CHECKING, Any

import pytest
import requests
from analytics_emulator.admin_client import AdminError

from tests.emulator_helpers import ADMIN_HEADER, project_headers

if TYPE_CHECKING:
    from analytics_emulator.server import EmulatorServer

    from tests.emulator_helpers import EmulatorAdmin

pytestmark = pytest.mark.integration

EXPORT = "/uba/api/cohort/users/export"
EVENTS = "/uba/api/schema/event"
USER_PROPERTIES = "/uba/api/schema/userProperties"
UTM = "/svc/uba/api/operations/utm"
SMALL_EXPORT = {"cohortCode": "cohort_small", "properties": ["distinct_id", "nickname"]}


def _post(server: EmulatorServer, path: str, body: Any, **kwargs: Any) -> requests.Response:
    return requests.post(
        server.base_url + path, json=body, headers=project_headers(server), **kwargs
    )


def _events(server: EmulatorServer, **kwargs: Any) -> requests.Response:
    kwargs.setdefault("timeout", 30)
    return requests.get(server.base_url + EVENTS, headers=project_headers(server), **kwargs)


def _complete_export(server: EmulatorServer) -> bytes:
    response = _post(server, EXPORT, SMALL_EXPORT, timeout=60)
    assert response.status_code == 200
    return response.content


def test_status_fault_answers_the_error_without_doing_the_work(
    emulator: EmulatorServer, emulator_admin: EmulatorAdmin
) -> None:
    campaign = {
        "pageUrl": "https://a.example/",
        "utmCampaign": "c",
        "utmMedium": "m",
        "utmSource": "s",
    }
    counted_before = emulator_admin.stats()["requests"].get("create_utm", 0)
    emulator_admin.fault(
        "create_utm", "status", status=503, code=503, msg="engine down", retry_after=7, times=2
    )
    for _ in range(2):
        failed = _post(emulator, UTM, campaign, timeout=30)
        assert failed.status_code == 503
        assert failed.headers["Retry-After"] == "7"
        assert failed.json() == {"code": 503, "msg": "engine down", "data": None}
    first = _post(emulator, UTM, campaign, timeout=30).json()["campaignId"]
    second = _post(emulator, UTM, campaign, timeout=30).json()["campaignId"]
    assert second == first + 1
    assert emulator_admin.stats()["requests"]["create_utm"] - counted_before == 4


def test_status_fault_for_any_operation(
    emulator: EmulatorServer, emulator_admin: EmulatorAdmin
) -> None:
    emulator_admin.fault("*", "status", status=429, times=2)
    assert _events(emulator).status_code == 429
    response = _post(emulator, "/uba/api/cohort/users", {"cohortCode": "cohort_tiny"}, timeout=30)
    assert response.status_code == 429
    assert _events(emulator).status_code == 200


def test_reset_fault_drops_the_connection(
    emulator: EmulatorServer, emulator_admin: EmulatorAdmin
) -> None:
    emulator_admin.fault("list_events", "reset")
    with requests.Session() as session, pytest.raises(requests.ConnectionError):
        session.get(emulator.base_url + EVENTS, headers=project_headers(emulator), timeout=30)
    assert _events(emulator).status_code == 200


def test_stall_fault_delays_the_answer(
    emulator: EmulatorServer, emulator_admin: EmulatorAdmin
) -> None:
    emulator_admin.fault("list_events", "stall", seconds=60)
    with pytest.raises(requests.ReadTimeout):
        _events(emulator, timeout=0.5)
    emulator_admin.fault("list_events", "stall", seconds=0.2)
    assert _events(emulator).status_code == 200


def _held_requests(admin: EmulatorAdmin, operation: str, count: int) -> dict[str, Any]:
    """The statistics once ``operation`` has been received ``count`` times (within 30 s)."""
    deadline = time.monotonic() + 30
    while (stats := admin.stats())["requests"].get(operation, 0) < count:
        assert time.monotonic() < deadline, f"{operation} never reached the emulator"
        time.sleep(0.02)
    return stats


def test_a_stall_ends_when_the_client_goes_away_and_the_operation_is_then_done(
    emulator: EmulatorServer, emulator_admin: EmulatorAdmin
) -> None:
    emulator_admin.reset()
    emulator_admin.fault("add_user_property", "stall", seconds=300)
    body = json.dumps({"id": "stalled_prop", "dataType": "string"})
    connection = http.client.HTTPConnection(emulator.config.host, emulator.port, timeout=30)
    connection.request(
        "POST",
        USER_PROPERTIES,
        body=body,
        headers={**project_headers(emulator), "Content-Type": "application/json"},
    )
    assert _held_requests(emulator_admin, "add_user_property", 1)["in_flight"] == 1
    assert not emulator.state.plan.has_user_property("stalled_prop")
    connection.close()
    # The stall would last 300 s: the wait ends well before only because the client left.
    assert emulator_admin.wait_until_idle(60) == 0
    assert emulator.state.plan.has_user_property("stalled_prop")


def test_a_stream_stall_ends_when_the_client_goes_away(
    emulator: EmulatorServer, emulator_admin: EmulatorAdmin
) -> None:
    emulator_admin.fault("export_cohort_users", "stall_after_rows", rows=5, seconds=300)
    with _post(emulator, EXPORT, SMALL_EXPORT, stream=True, timeout=30) as response:
        lines = response.iter_lines()
        first = [json.loads(next(lines)) for _ in range(5)]
        assert len({row["distinct_id"] for row in first}) == 5
        assert emulator_admin.stats()["in_flight"] == 1
    assert emulator_admin.wait_until_idle(60) == 0


def test_admin_calls_are_not_counted_in_flight(emulator_admin: EmulatorAdmin) -> None:
    assert emulator_admin.stats()["in_flight"] == 0


@pytest.mark.parametrize("rows", [0, 5, 8192])
def test_cut_after_rows(emulator: EmulatorServer, emulator_admin: EmulatorAdmin, rows: int) -> None:
    whole = _complete_export(emulator).split(b"\n")
    emulator_admin.fault("export_cohort_users", "cut_after_rows", rows=rows)
    received = bytearray()
    response = _post(emulator, EXPORT, SMALL_EXPORT, stream=True, timeout=60)
    assert response.status_code == 200
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        for chunk in response.iter_content(chunk_size=None):
            received += chunk
    expected_rows = min(rows, len(whole) - 1)
    assert bytes(received) == b"".join(line + b"\n" for line in whole[:expected_rows])


def test_cut_inside_line(emulator: EmulatorServer, emulator_admin: EmulatorAdmin) -> None:
    whole = _complete_export(emulator).split(b"\n")
    emulator_admin.fault("export_cohort_users", "cut_inside_line", rows=3)
    received = bytearray()
    response = _post(emulator, EXPORT, SMALL_EXPORT, stream=True, timeout=60)
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        for chunk in response.iter_content(chunk_size=None):
            received += chunk
    lines = bytes(received).split(b"\n")
    assert lines[:3] == whole[:3]
    assert 0 < len(lines[3]) < len(whole[3]) and whole[3].startswith(lines[3])


def test_malformed_line(emulator: EmulatorServer, emulator_admin: EmulatorAdmin) -> None:
    whole = _complete_export(emulator).split(b"\n")[:-1]
    emulator_admin.fault("export_cohort_users", "malformed_line", rows=10)
    lines = _post(emulator, EXPORT, SMALL_EXPORT, timeout=60).content.split(b"\n")[:-1]
    assert len(lines) == len(whole) + 1
    with pytest.raises(ValueError):
        json.loads(lines[10])
    assert lines[:10] + lines[11:] == whole


def test_trickle_sends_the_same_bytes_in_pieces(
    emulator: EmulatorServer, emulator_admin: EmulatorAdmin
) -> None:
    body = {"cohortCode": "cohort_tiny"}
    whole = _post(emulator, EXPORT, body, timeout=60).content
    emulator_admin.fault("export_cohort_users", "trickle", bytes_per_second=40_000)
    response = _post(emulator, EXPORT, body, stream=True, timeout=60)
    pieces = list(response.iter_content(chunk_size=None))
    assert b"".join(pieces) == whole
    assert len(pieces) > 1


def test_export_faults_need_the_export(emulator_admin: EmulatorAdmin) -> None:
    with pytest.raises(AdminError, match="400"):
        emulator_admin.fault("get_cohort_users", "cut_after_rows", rows=1)


def test_admin_api_is_guarded(emulator: EmulatorServer) -> None:
    for headers in ({}, {ADMIN_HEADER: "wrong-admin-token"}, project_headers(emulator)):
        for method, path in (("GET", "stats"), ("POST", "reset"), ("DELETE", "faults")):
            response = requests.request(
                method, f"{emulator.base_url}/_emulator/{path}", headers=headers, timeout=30
            )
            assert response.status_code == 401
            assert response.json()["code"] == 401 and "wrong-admin" not in response.text


def test_stats_count_requests_and_connections(
    emulator: EmulatorServer, emulator_admin: EmulatorAdmin
) -> None:
    emulator_admin.reset()
    before = emulator_admin.stats()["connections"]
    with requests.Session() as session:
        for _ in range(3):
            session.get(emulator.base_url + EVENTS, headers=project_headers(emulator), timeout=30)
    for _ in range(2):
        _events(emulator)
    stats = emulator_admin.stats()
    assert stats["requests"]["list_events"] == 5
    # One kept-alive session connection and two single-use ones, plus admin calls.
    assert stats["connections"] - before >= 3


def test_faults_can_be_cleared(emulator: EmulatorServer, emulator_admin: EmulatorAdmin) -> None:
    emulator_admin.fault("list_events", "status", status=500, times=5)
    emulator_admin.clear_faults()
    assert _events(emulator).status_code == 200


def test_data_until_and_event_log_admin_calls(
    emulator: EmulatorServer, emulator_admin: EmulatorAdmin
) -> None:
    emulator_admin.set_data_until(date(2024, 1, 15))
    emulator_admin.set_data_until(None)
    events = [
        {"user": 0, "event": "search", "time": "2024-01-02 10:00:00"},
        {"user": 1, "event": "purchase", "time": "2024-01-02 11:00:00", "properties": {}},
    ]
    assert emulator_admin.replace_event_log(events) == 2
    with pytest.raises(AdminError, match="400"):
        emulator_admin.replace_event_log([{"user": -1, "event": "x", "time": "bad"}])
    admin_headers = {ADMIN_HEADER: str(emulator.config.admin_token)}
    for body in ({"date": "2024-13-01"}, {}, {"date": 20240101}):
        response = requests.put(
            emulator.base_url + "/_emulator/data-until",
            json=body,
            headers=admin_headers,
            timeout=30,
        )
        assert response.status_code == 400 and response.json()["data"] == ["date"]


def _share_count(server: EmulatorServer, day: str) -> int:
    body = {
        "measures": [{"expression": "event.share", "aggregator": "TOTAL_COUNT"}],
        "crowds": ["$ALL"],
        "unit": "DAY",
        "fromDate": day,
        "toDate": day,
    }
    response = _post(server, "/uba/api/events/analyze", body, timeout=60)
    assert response.status_code == 200, response.text
    return int(response.json()["rows"][0]["sum"][0])


def test_late_events_are_added_to_a_past_day_until_the_reset(
    emulator: EmulatorServer, emulator_admin: EmulatorAdmin
) -> None:
    before = {day: _share_count(emulator, day) for day in ("2024-01-04", "2024-01-05")}
    late = [
        {"user": n, "event": "share", "time": f"2024-01-05 2{n}:00:00", "properties": {}}
        for n in range(3)
    ]
    total = emulator_admin.add_events(late)
    assert _share_count(emulator, "2024-01-05") == before["2024-01-05"] + 3
    assert _share_count(emulator, "2024-01-04") == before["2024-01-04"]
    assert emulator_admin.add_events(late[:1]) == total + 1  # added to what is there
    with pytest.raises(AdminError, match="400"):
        emulator_admin.add_events([{"user": 1, "event": "share", "time": "2024-01-05"}])
    emulator_admin.reset()
    assert _share_count(emulator, "2024-01-05") == before["2024-01-05"]
