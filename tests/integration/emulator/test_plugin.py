"""The emulator's pytest plugin, active in this project's own runs through its entry point:
the fixture serves the scenario its marker chooses and points an Airflow connection at it;
markers merge from the module down; the connection is undone after the test; settings that
do not fit are refused by name; secrets never show."""

from __future__ import annotations

import datetime as dt
import json
import os
import textwrap
from typing import Any

import pytest
import requests
from analytics_emulator.testing import RunningEmulator, Scenario, ScenarioError, start_emulator

from airflow_provider_analytics.hooks.analytics import AnalyticsHook

pytest_plugins = ["pytester"]
pytestmark = [pytest.mark.integration, pytest.mark.analytics_emulator(seed=11)]

EXPORT = "/uba/api/cohort/users/export"
COHORT_USERS = "/uba/api/cohort/users"


def _post(emulator: RunningEmulator, path: str, body: dict[str, Any]) -> requests.Response:
    return requests.post(
        emulator.base_url + path, json=body, headers=emulator.project_headers(), timeout=60
    )


def test_the_connection_points_the_provider_at_the_emulator(
    analytics_emulator: RunningEmulator,
) -> None:
    connection = json.loads(os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"])
    assert connection["host"] == analytics_emulator.base_url
    assert connection["extra"]["timezone"] == "Asia/Shanghai"
    with AnalyticsHook().get_conn() as client:
        users = client.get_cohort_users("cohort_tiny", properties=["email"])
    assert users["count"] == 7
    assert analytics_emulator.admin.stats()["requests"]["get_cohort_users"] == 1


@pytest.mark.analytics_emulator(
    cohorts={"everyone": 12_000_000},
    proxy_cuts={"everyone": {"rows": 100, "ending": "drop"}, "cohort_massive": None},
    membership_changes={"cohort_tiny": {"after_calls": 1, "kind": "grow", "users": 3}},
    faults=[{"operation": "list_events", "kind": "status", "status": 503, "times": 2}],
    max_page_size=500,
    conn_id="platform_under_test",
)
def test_the_marker_chooses_the_scenario(analytics_emulator: RunningEmulator) -> None:
    assert analytics_emulator.conn_id == "platform_under_test"
    assert "AIRFLOW_CONN_PLATFORM_UNDER_TEST" in os.environ
    cohorts = analytics_emulator.admin.cohorts()
    assert cohorts["everyone"]["size"] == 12_000_000
    assert cohorts["everyone"]["proxy_cut"] == {"rows": 100, "seconds": None, "ending": "drop"}
    assert cohorts["cohort_massive"]["proxy_cut"] is None
    assert cohorts["cohort_colossal"]["proxy_cut"]["rows"] == 2_000_000
    assert [fault["times"] for fault in analytics_emulator.admin.pending_faults()] == [2]
    events = [
        requests.get(
            analytics_emulator.base_url + "/uba/api/schema/event",
            headers=analytics_emulator.project_headers(),
            timeout=30,
        ).status_code
        for _ in range(3)
    ]
    assert events == [503, 503, 200]
    counts = [_post(analytics_emulator, COHORT_USERS, {"cohortCode": "cohort_tiny"}) for _ in "ab"]
    assert [r.json()["count"] for r in counts] == [7, 10]
    too_large = _post(
        analytics_emulator, COHORT_USERS, {"cohortCode": "everyone", "page": 1, "pageSize": 501}
    )
    assert too_large.status_code == 400
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        _post(analytics_emulator, EXPORT, {"cohortCode": "everyone", "properties": ["age"]})


@pytest.mark.analytics_emulator(
    events=[
        {"user": 1, "event": "$pageview", "time": "2024-01-15 10:00:00"},
        {"user": 2, "event": "$pageview", "time": "2024-01-16 09:30:00"},
    ],
    data_until=dt.date(2024, 1, 15),
)
def test_the_scenario_seeds_events_and_the_day_data_lands(
    analytics_emulator: RunningEmulator,
) -> None:
    state = analytics_emulator.server.state
    assert len(state.event_log()) == 2
    assert state.data_until == dt.date(2024, 1, 15)
    analytics_emulator.admin.reset()
    assert len(state.event_log()) > 2 and state.data_until is None


def test_the_seed_of_the_module_marker_applies(analytics_emulator: RunningEmulator) -> None:
    assert analytics_emulator.scenario.seed == 11
    with start_emulator(Scenario(seed=7)) as other:
        body = {"cohortCode": "cohort_tiny", "properties": ["distinct_id"]}
        mine = _post(analytics_emulator, COHORT_USERS, body).json()["users"]
        theirs = _post(other, COHORT_USERS, body).json()["users"]
    assert mine != theirs and len(mine) == len(theirs) == 7


@pytest.mark.parametrize(
    "analytics_emulator_scenario",
    [Scenario(cohorts={"param_cohort": 3}), Scenario(cohorts={"param_cohort": 5})],
)
def test_the_scenario_fixture_can_be_parametrized(
    analytics_emulator: RunningEmulator, analytics_emulator_scenario: Scenario
) -> None:
    answer = _post(analytics_emulator, COHORT_USERS, {"cohortCode": "param_cohort"}).json()
    assert answer["count"] == analytics_emulator_scenario.cohorts["param_cohort"]


def test_secrets_never_show(analytics_emulator: RunningEmulator) -> None:
    secrets = [analytics_emulator.token, analytics_emulator.app_key, analytics_emulator.xtoken]
    values = [secret.reveal() for secret in secrets]
    assert all(len(value) >= 16 for value in values)
    shown = " ".join(
        [repr(analytics_emulator), str(analytics_emulator), repr(analytics_emulator.admin)]
        + [f"{secret} {secret!r}" for secret in secrets]
        + [repr(analytics_emulator.server.config), repr(analytics_emulator.scenario)]
    )
    assert not any(value in shown for value in values)
    assert analytics_emulator.base_url in repr(analytics_emulator)


def test_every_start_has_fresh_credentials() -> None:
    with start_emulator() as first, start_emulator() as second:
        assert first.token.reveal() != second.token.reveal()
        assert first.base_url != second.base_url


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"proxy_cuts": {"cohort_tiny": {"rows": -1}}}, "proxy_cut.rows"),
        ({"proxy_cuts": {"nowhere": {"rows": 5}}}, "'nowhere' is not a served cohort"),
        ({"membership_changes": {"cohort_tiny": {"users": 3}}}, "after_calls is required"),
        ({"faults": [{"operation": "list_events", "kind": "explode"}]}, r"faults\[0\]: kind"),
        ({"conn_id": "not valid!"}, "conn_id"),
        ({"connection_extra": {"xtoken": "x"}}, "credentials"),
        ({"cohorts": {"big": -5}}, "non-negative size"),
        ({"events": [{"user": -1, "event": "x", "time": "2024-01-01 10:00:00"}]}, "record 0"),
        ({"data_until": "2024-01-15"}, "data_until must be a datetime.date"),
        ({"seed": "seven"}, "seed must be a non-negative integer"),
        ({"events": "2024-01-15 buy"}, "events must be a list of objects"),
    ],
)
def test_a_scenario_that_does_not_fit_is_refused_by_name(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ScenarioError, match=message), start_emulator(Scenario(**settings)):
        pass


def test_markers_merge_and_the_connection_is_undone(pytester: pytest.Pytester) -> None:
    """A user's test module, run by pytest in a process of its own with the plugin loaded from
    its entry point (nothing in this module's conftest)."""
    pytester.makeini("[pytest]\nanalytics_emulator_conn_id = from_ini\n")
    pytester.makepyfile(
        test_user=textwrap.dedent(
            """
            import os

            import pytest

            pytestmark = pytest.mark.analytics_emulator(cohorts={"a": 1, "b": 2}, seed=3)


            @pytest.mark.analytics_emulator(cohorts={"b": 5})
            class TestNested:
                @pytest.mark.analytics_emulator(seed=4)
                def test_closest_wins(self, analytics_emulator):
                    scenario = analytics_emulator.scenario
                    assert (dict(scenario.cohorts), scenario.seed) == ({"b": 5}, 4)
                    assert analytics_emulator.conn_id == "from_ini"
                    assert "AIRFLOW_CONN_FROM_INI" in os.environ


            def test_then_the_variable_is_gone():
                assert "AIRFLOW_CONN_FROM_INI" not in os.environ


            @pytest.mark.analytics_emulator(colour="blue")
            def test_unknown_setting(analytics_emulator):
                pass
            """
        )
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*ScenarioError: unknown scenario settings*colour*"])


def test_the_plugin_is_loaded_from_its_entry_point(pytestconfig: pytest.Config) -> None:
    plugin = pytestconfig.pluginmanager.get_plugin("analytics_emulator")
    assert plugin is not None and plugin.__name__ == "analytics_emulator.pytest_plugin"


def test_a_dag_test_without_an_airflow_database_says_to_migrate(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's ``dag.test()`` in an AIRFLOW_HOME never migrated: the error carries the note
    naming ``airflow db migrate`` instead of SQLite's bare "no such table"."""
    home = pytester.path / "never-migrated"
    home.mkdir()
    monkeypatch.setenv("AIRFLOW_HOME", str(home))
    monkeypatch.setenv("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    pytester.makepyfile(
        test_user=textwrap.dedent(
            """
            import pendulum
            from airflow.providers.standard.operators.empty import EmptyOperator
            from airflow.sdk import DAG


            def test_run_the_dag(analytics_emulator):
                with DAG("user_dag", schedule=None,
                         start_date=pendulum.datetime(2024, 1, 1, tz="UTC")) as dag:
                    EmptyOperator(task_id="nothing")
                dag.test(logical_date=pendulum.datetime(2024, 1, 15, tz="UTC"))
            """
        )
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*no such table*", f"*has no tables (AIRFLOW_HOME={home}): run `airflow db migrate`*"]
    )
