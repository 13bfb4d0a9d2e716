"""The analytics engine behind the emulator's routes: same numbers, platform error bodies."""

from __future__ import annotations

from typing import Any

import pytest
from analytics_emulator import analytics
from analytics_emulator.app import build_app
from analytics_emulator.server import EmulatorConfig
from analytics_emulator.state import EmulatorState
from fastapi.testclient import TestClient

FUNNEL = {
    "steps": [{"expression": "event.$startup"}, {"expression": "event.purchase"}],
    "crowds": ["cohort_small"],
    "fromDate": "2024-01-01",
    "toDate": "2024-01-07",
    "byField": {"expression": "user.gender"},
}
EVENTS = {
    "measures": [{"expression": "event.purchase.amount", "aggregator": "SUM"}],
    "crowds": ["$ALL"],
    "fromDate": "2024-01-01",
    "toDate": "2024-01-07",
    "byFields": [{"expression": "event.purchase.price", "buckets": [600, 800]}],
}


@pytest.fixture(scope="module")
def served() -> tuple[TestClient, EmulatorState, dict[str, str]]:
    config = EmulatorConfig()
    state = EmulatorState(seed=config.seed, cohorts=config.cohorts, app_key=config.app_key)
    headers = {"token": config.token, "appKey": config.app_key}
    return TestClient(build_app(config, state)), state, headers


def direct(engine: Any, body: dict[str, Any], state: EmulatorState) -> dict[str, Any]:
    answer = engine(
        body,
        log=state.event_log(),
        population=state.population,
        cohorts=state.cohorts,
        data_until=state.data_until,
    )
    del answer["reportUpdateTime"]
    return answer


@pytest.mark.parametrize(
    ("path", "body", "engine"),
    [
        ("/uba/api/funnels/analyze", FUNNEL, analytics.analyze_funnel),
        ("/uba/api/events/analyze", EVENTS, analytics.analyze_events),
    ],
)
def test_routes_answer_what_the_engine_computes(
    served: tuple[TestClient, EmulatorState, dict[str, str]],
    path: str,
    body: dict[str, Any],
    engine: Any,
) -> None:
    client, state, headers = served
    response = client.post(path, json=body, headers=headers)
    assert response.status_code == 200
    answer = response.json()
    assert isinstance(answer.pop("reportUpdateTime"), str)
    assert answer == direct(engine, body, state)
    assert answer["rows"]


def test_a_bad_body_is_a_400_naming_the_parameter(
    served: tuple[TestClient, EmulatorState, dict[str, str]],
) -> None:
    client, _state, headers = served
    bad = {**EVENTS, "measures": [{"expression": "event.purchase.product_id", "aggregator": "AVG"}]}
    response = client.post("/uba/api/events/analyze", json=bad, headers=headers)
    assert response.status_code == 400
    assert response.json()["data"] == ["measures[0].aggregator"]
    assert response.json()["code"] == 400
