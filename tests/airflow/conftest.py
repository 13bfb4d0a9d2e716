"""Fixtures for tests that run DAGs for real with `airflow dags test`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from devtools.airflow_runner import DagRunner, connection_env, migrate

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(scope="session")
def airflow_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated AIRFLOW_HOME with its own SQLite database (one per test worker)."""
    home = tmp_path_factory.mktemp("airflow-home")
    migrate(home)
    return home


@pytest.fixture(scope="session")
def dag_runner(airflow_home: Path) -> DagRunner:
    return DagRunner(airflow_home)


@pytest.fixture
def emulator_connection_env(emulator) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """The `analytics_default` connection pointing at the session's emulator."""
    config = emulator.config
    return connection_env(
        emulator.base_url, token=config.token, app_key=config.app_key, xtoken=config.xtoken
    )
