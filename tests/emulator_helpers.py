"""Test helpers around a running emulator: its admin API and its credential headers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import requests
from analytics_emulator.admin_client import ADMIN_HEADER, PREFIX, AdminClient, AdminError
from analytics_emulator.testing import Secret

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig

if TYPE_CHECKING:
    from analytics_emulator.server import EmulatorServer

__all__ = [
    "ADMIN_HEADER",
    "EmulatorAdmin",
    "account_headers",
    "live_plan",
    "project_headers",
]


def project_headers(server: EmulatorServer) -> dict[str, str]:
    """The ``token``/``appKey`` headers project operations need."""
    return {"token": server.config.token, "appKey": server.config.app_key}


def live_plan(base_url: str, token: str, app_key: str) -> dict[str, Any]:
    """The emulator's tracking plan as the platform lists it: user properties and events by id."""
    with AnalyticsClient(ClientConfig(base_url, token=token, app_key=app_key)) as client:
        return {
            "users": {r["id"]: r for r in client.list_user_properties()},
            "events": {r["id"]: r for r in client.list_events()},
        }


def account_headers(server: EmulatorServer) -> dict[str, str]:
    """The ``xtoken`` header account operations need."""
    return {"xtoken": server.config.xtoken}


class EmulatorAdmin(AdminClient):
    """The emulator's admin client for a server a test started, over one kept-alive connection:
    the emulator counts connections, and tests of connection reuse read that count.

    :param server: a running server whose config has an ``admin_token``.
    """

    def __init__(self, server: EmulatorServer, *, timeout: float = 30.0) -> None:
        if server.config.admin_token is None:
            raise ValueError("the server was started without an admin token")
        super().__init__(server.base_url, Secret(server.config.admin_token), timeout=timeout)
        self.server = server
        self.session = requests.Session()
        self.session.headers[ADMIN_HEADER] = server.config.admin_token

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        url = f"{self.base_url}{PREFIX}/{path}"
        try:
            response = self.session.request(method, url, json=body, timeout=self.timeout)
        except requests.ConnectionError:
            # the kept-alive connection closed by the server between two calls (a test's
            # fault or a restart): a call whose repeat changes nothing more goes once again
            if method == "POST" and path != "reset":
                raise
            response = self.session.request(method, url, json=body, timeout=self.timeout)
        if response.status_code != 200:
            raise AdminError(method, path, response.status_code, response.text)
        return response.json()

    def close(self) -> None:
        self.session.close()
