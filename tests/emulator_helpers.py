"""Test helpers around a running emulator: its admin API and its credential headers."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Final

import requests

if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import date

    from analytics_emulator.server import EmulatorServer

ADMIN_HEADER = "X-Emulator-Admin"
IDLE_POLL_SECONDS: Final = 0.02


def project_headers(server: EmulatorServer) -> dict[str, str]:
    """The ``token``/``appKey`` headers project operations need."""
    return {"token": server.config.token, "appKey": server.config.app_key}


def account_headers(server: EmulatorServer) -> dict[str, str]:
    """The ``xtoken`` header account operations need."""
    return {"xtoken": server.config.xtoken}


class EmulatorAdmin:
    """The ``/_emulator/`` admin API of one server; every method is one real HTTP call.

    :param server: a running server whose config has an ``admin_token``.
    """

    def __init__(self, server: EmulatorServer, *, timeout: float = 30.0) -> None:
        if server.config.admin_token is None:
            raise ValueError("the server was started without an admin token")
        self.server = server
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers[ADMIN_HEADER] = server.config.admin_token

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        response = self.session.request(
            method, f"{self.server.base_url}/_emulator/{path}", json=body, timeout=self.timeout
        )
        if response.status_code != 200:
            raise AssertionError(f"admin {method} {path}: {response.status_code} {response.text}")
        return response.json()

    def fault(self, operation: str, kind: str, **args: Any) -> dict[str, Any]:
        """Arm a fault (``times`` defaults to 1) for the next requests of ``operation``."""
        result: dict[str, Any] = self._call(
            "POST", "faults", {"operation": operation, "kind": kind, **args}
        )
        return result

    def clear_faults(self) -> None:
        self._call("DELETE", "faults")

    def reset(self) -> None:
        """Back to the seeded start (plan, ad tracking, accounts, faults, stats, ...)."""
        self._call("POST", "reset")

    def set_data_until(self, day: date | None) -> None:
        """Analyses see no events after ``day`` (None: all events)."""
        self._call("PUT", "data-until", {"date": None if day is None else day.isoformat()})

    def set_data_status(
        self, status: int, *, event: str | None = None, prop: str | None = None
    ) -> None:
        self._call("PUT", "data-status", {"event": event, "property": prop, "dataStatus": status})

    def mask_values(self, properties: Iterable[str]) -> None:
        """These properties read as the masked marker (an empty list undoes it)."""
        self._call("PUT", "mask-values", {"properties": list(properties)})

    def replace_event_log(self, events: list[dict[str, Any]]) -> int:
        count: int = self._call("PUT", "event-log", {"events": events})["events"]
        return count

    def add_events(self, events: list[dict[str, Any]]) -> int:
        """Add events (late arrivals, any day) to the log analyses read; returns its new size."""
        count: int = self._call("POST", "event-log/events", {"events": events})["events"]
        return count

    def stats(self) -> dict[str, Any]:
        """``{"requests": {operation: count}, "connections": n, ...}`` since the last reset."""
        result: dict[str, Any] = self._call("GET", "stats")
        return result

    def wait_until_idle(self, within: float) -> int:
        """Poll until the server serves no API request (``in_flight`` is 0), for at most
        ``within`` seconds; returns how many were still being served at the end (0: idle).

        :param within: the longest wait, in seconds.
        """
        deadline = time.monotonic() + within
        while (busy := int(self.stats()["in_flight"])) and time.monotonic() < deadline:
            time.sleep(IDLE_POLL_SECONDS)
        return busy

    def close(self) -> None:
        self.session.close()
