"""The pytest plugin of the emulator (entry point ``pytest11``, name ``analytics_emulator``).

Installed with the emulator, it gives every test run the fixture ``analytics_emulator``: an
emulator on a free port of 127.0.0.1 with fresh credentials, its scenario's faults armed, and
``AIRFLOW_CONN_<CONN_ID>`` pointing at it for the test's duration (undone afterwards, as with
``monkeypatch.setenv``). A test chooses the scenario with the marker::

    @pytest.mark.analytics_emulator(cohorts={"everyone": 10_000_000},
                                    proxy_cuts={"everyone": {"rows": 50_000}})
    def test_export(analytics_emulator): ...

A marker on a class or a module applies to its tests; a closer one overrides the settings
it names. A :class:`~analytics_emulator.testing.Scenario` may be given as the marker's only
positional argument, and the fixture ``analytics_emulator_scenario`` may be overridden or
parametrized directly like any fixture. The default connection id comes from the ini option
``analytics_emulator_conn_id`` (``analytics_default``).

A test using the fixture that fails because Airflow's metadata database has no tables (a
``dag.test()`` in an ``AIRFLOW_HOME`` never migrated) gets a note saying how to make it.

The module imports nothing heavy: the web stack is imported when the fixture is first used.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

    from analytics_emulator.testing import RunningEmulator, Scenario

MARKER: Final = "analytics_emulator"
CONN_ID_INI: Final = "analytics_emulator_conn_id"
NO_DATABASE: Final = (
    "Airflow's metadata database has no tables (AIRFLOW_HOME={home}): run `airflow db migrate` "
    "with that AIRFLOW_HOME once before the tests (or point AIRFLOW_HOME at a home that has "
    "one), as the emulator page's test kit shows"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        CONN_ID_INI,
        "Airflow connection id the analytics_emulator fixture sets (AIRFLOW_CONN_<ID>)",
        default="analytics_default",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(scenario=None, **settings): what the analytics_emulator fixture serves: "
        "cohorts, proxy_cuts, membership_changes, faults, seed, events, data_until, "
        "max_page_size, conn_id, timezone, connection_extra "
        "(see analytics_emulator.testing.Scenario)",
    )


def scenario_for(node: pytest.Item, base: Scenario) -> Scenario:
    """``base`` with the settings of every ``analytics_emulator`` marker of ``node`` applied,
    the farthest (module) first, so the closest wins.

    :raises analytics_emulator.testing.ScenarioError: for a setting that does not fit.
    """
    from analytics_emulator.testing import Scenario, ScenarioError

    scenario = base
    for marker in reversed(list(node.iter_markers(MARKER))):
        if len(marker.args) > 1 or (marker.args and not isinstance(marker.args[0], Scenario)):
            raise ScenarioError(
                f"@pytest.mark.{MARKER} takes one Scenario at most as a positional argument"
            )
        if marker.args:
            scenario = marker.args[0]
        scenario = scenario.with_settings(**marker.kwargs)
    return scenario


@pytest.fixture
def analytics_emulator_scenario(request: pytest.FixtureRequest) -> Scenario:
    """The scenario the ``analytics_emulator`` fixture serves, from the test's markers."""
    from analytics_emulator.testing import Scenario

    base = Scenario(conn_id=str(request.config.getini(CONN_ID_INI)))
    return scenario_for(request.node, base)


@pytest.fixture
def analytics_emulator(
    analytics_emulator_scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> Iterator[RunningEmulator]:
    """An emulator serving the test's scenario, with ``AIRFLOW_CONN_<CONN_ID>`` set to it;
    stopped, and the variable restored, after the test."""
    from analytics_emulator.testing import start_emulator

    with start_emulator(analytics_emulator_scenario) as running:
        monkeypatch.setenv(running.connection_env_name, running.connection_json())
        yield running


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Add :data:`NO_DATABASE` to the error of a fixture user's test that met an Airflow
    database without tables (``sqlite3.OperationalError: no such table: task_instance``)."""
    try:
        return (yield)
    except Exception as error:
        if MARKER in getattr(item, "fixturenames", ()) and "no such table" in str(error):
            home = os.environ.get("AIRFLOW_HOME", "~/airflow")
            error.add_note(NO_DATABASE.format(home=home))
        raise
