"""Shared fixtures: running emulators and their admin API (helpers in emulator_helpers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from airflow_provider_analytics.emulator.server import EmulatorConfig, EmulatorServer
from tests.emulator_helpers import EmulatorAdmin

if TYPE_CHECKING:
    from collections.abc import Iterator

TEST_ADMIN_TOKEN = "emulator-admin-token"


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
