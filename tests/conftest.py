"""Shared fixtures: running emulators and their admin API (helpers in emulator_helpers)."""

from __future__ import annotations

import datetime as dt
import os
from typing import TYPE_CHECKING

import pytest
from analytics_emulator.server import EmulatorConfig, EmulatorServer
from hypothesis import Phase, settings

from airflow_provider_analytics.client.throttle import forget_platforms
from airflow_provider_analytics.core import redaction
from tests.emulator_helpers import EmulatorAdmin

if TYPE_CHECKING:
    from collections.abc import Iterator

    from airflow_provider_analytics.client import AnalyticsClient

TEST_ADMIN_TOKEN = "emulator-admin-token"

# Property tests are deterministic unless asked otherwise: the same examples every run
# (derandomize), no example database deciding what is tried, a bounded budget, and no
# shrinking (a failure reports its first counterexample at once instead of spending minutes).
# `HYPOTHESIS_PROFILE=explore` searches with fresh random examples and shrinks, for local
# bug hunting; a counterexample found that way belongs in a regression test.
settings.register_profile(
    "deterministic",
    derandomize=True,
    database=None,
    deadline=dt.timedelta(seconds=20),
    max_examples=100,
    phases=(Phase.explicit, Phase.generate),
    print_blob=True,
)
settings.register_profile("explore", derandomize=False, deadline=None, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


@pytest.fixture(autouse=True)
def _platforms_start_unthrottled() -> None:
    """Each test starts with no call in flight and no hold-off left by an earlier test's
    ``Retry-After`` (the client shares both per platform within the process), and with no
    secret remembered by an earlier test's clients (masked in every message of the process)."""
    forget_platforms()
    redaction.forget()


@pytest.fixture(scope="session")
def emulator_config() -> EmulatorConfig:
    """The default configuration with the admin API switched on."""
    return EmulatorConfig(admin_token=TEST_ADMIN_TOKEN)


@pytest.fixture(scope="session")
def emulator(emulator_config: EmulatorConfig) -> Iterator[EmulatorServer]:
    """One emulator for the whole session (per test worker). Tests must not rely on state
    other tests left behind; use ``fresh_emulator`` for heavy state changes."""
    with EmulatorServer(emulator_config) as server:
        yield server


@pytest.fixture
def fresh_emulator(emulator_config: EmulatorConfig) -> Iterator[EmulatorServer]:
    """An emulator of its own for one test, with its own state."""
    with EmulatorServer(emulator_config) as server:
        yield server


@pytest.fixture
def emulator_admin(emulator: EmulatorServer) -> Iterator[EmulatorAdmin]:
    """The session emulator's admin API; the emulator is reset after the test, so faults,
    data-until, masks and hand-built event logs never leak into other tests."""
    admin = EmulatorAdmin(emulator)
    try:
        yield admin
    finally:
        admin.reset()
        admin.close()


@pytest.fixture
def client(emulator: EmulatorServer) -> Iterator[AnalyticsClient]:
    """A client of the session emulator."""
    from airflow_provider_analytics.client import AnalyticsClient, ClientConfig

    config = emulator.config
    with AnalyticsClient(
        ClientConfig(emulator.base_url, token=config.token, app_key=config.app_key)
    ) as api:
        yield api
