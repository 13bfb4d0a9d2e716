"""The ``analytics_default`` connection the reliability tests put in the environment."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from tests.reliability.fault_catalog import READ_TIMEOUT

if TYPE_CHECKING:
    import pytest
    from analytics_emulator.server import EmulatorServer

CONNECTION_ENV: Final = "AIRFLOW_CONN_ANALYTICS_DEFAULT"


def quick_retries(read_timeout: float = READ_TIMEOUT) -> dict[str, float]:
    """Three attempts and waits of milliseconds, so retries stay quick.

    :param read_timeout: how long reads wait for data (ordinary calls and the export); the
        default leaves the emulator's answers a wide margin on a loaded machine.
    """
    return {
        "max_attempts": 3,
        "backoff_base": 0.01,
        "connect_timeout": READ_TIMEOUT,
        "read_timeout": read_timeout,
        "export_read_timeout": read_timeout,
    }


def connection_json(server: EmulatorServer, **extra: Any) -> str:
    """The connection to ``server`` as Airflow reads it from ``AIRFLOW_CONN_*``.

    :param server: the emulator; its credentials are the connection's.
    :param extra: extras on top of the credentials (timeouts, attempts...).
    """
    config = server.config
    return json.dumps(
        {
            "conn_type": "analytics",
            "host": server.base_url,
            "password": config.token,
            "extra": {"app_api_key": config.app_key, "xtoken": config.xtoken, **extra},
        }
    )


def use_connection(monkeypatch: pytest.MonkeyPatch, server: EmulatorServer, **extra: Any) -> None:
    """Point ``analytics_default`` at ``server`` for one test."""
    monkeypatch.setenv(CONNECTION_ENV, connection_json(server, **extra))
