"""Airflow's own connection views (a real ``airflow api-server``) never show the appKey.

Airflow hides a connection extra by the name of its key. The provider stores the appKey
under ``app_api_key`` (a name Airflow treats as sensitive); the older ``app_key`` is still
read by the hook, and this test shows why it is no longer offered: the server shows it.
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import TYPE_CHECKING, Any

import pytest
import requests

from airflow_provider_analytics.hooks.analytics import client_config_from_connection
from airflow_provider_analytics.provider_info import APP_KEY_EXTRA, CONNECTION_FIELDS
from devtools.airflow_runner import AIRFLOW, airflow_env
from devtools.ports import free_port

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.slow

APP_KEY = "appkey-Qm7Rt2Vx9Lp4"
LEGACY_APP_KEY = "appkey-legacy-Hn5Wd8Ks3"
XTOKEN = "xtoken-Bz6Yc1Nf8Gj2"
TOKEN = "token-Ua4Ep9Ko7Di3"


@pytest.fixture(scope="module")
def api_server(airflow_home: Path) -> Iterator[str]:
    """A real api-server on a free loopback port, over the migrated test home."""
    port = free_port()
    dags = airflow_home / "dags"
    env = airflow_env(
        airflow_home,
        dags,
        {
            "AIRFLOW__CORE__AUTH_MANAGER": (
                "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
            ),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__API__PORT": str(port),
        },
    )
    log = (airflow_home / f"api-server-{port}.log").open("w")
    command = [AIRFLOW, "api-server", "--apps", "core", "--workers", "1"]
    server = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        # ~20 s on an idle machine; far longer when the cores are shared with other work
        deadline = time.monotonic() + 180
        while True:
            try:
                if requests.get(f"{base}/api/v2/monitor/health", timeout=10).ok:
                    break
            except requests.RequestException:  # not listening yet, or too busy to answer
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                log.flush()
                output = (airflow_home / f"api-server-{port}.log").read_text()[-3000:]
                pytest.fail(f"api-server did not come up:\n{output}")
            time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _stored(base: str, conn_id: str, extra: dict[str, Any]) -> dict[str, Any]:
    """Create a connection through the REST API, then read it back as the UI does."""
    requests.delete(f"{base}/api/v2/connections/{conn_id}", timeout=30)
    created = requests.post(
        f"{base}/api/v2/connections",
        json={
            "connection_id": conn_id,
            "conn_type": "analytics",
            "host": "https://analytics.example.com",
            "password": TOKEN,
            "extra": json.dumps(extra),
        },
        timeout=30,
    )
    assert created.status_code in (200, 201), created.text
    shown = requests.get(f"{base}/api/v2/connections/{conn_id}", timeout=30)
    assert shown.status_code == 200, shown.text
    listed = requests.get(f"{base}/api/v2/connections", timeout=30)
    assert listed.status_code == 200, listed.text
    return {"one": shown.text, "list": listed.text, "extra": json.loads(shown.json()["extra"])}


def test_the_rest_api_masks_the_app_key_under_its_stored_name(api_server: str) -> None:
    views = _stored(api_server, "analytics_views", {APP_KEY_EXTRA: APP_KEY, "xtoken": XTOKEN})
    for text in (views["one"], views["list"]):
        assert APP_KEY not in text
        assert XTOKEN not in text
        assert TOKEN not in text
    assert views["extra"][APP_KEY_EXTRA] != APP_KEY
    assert APP_KEY_EXTRA in CONNECTION_FIELDS


def test_the_legacy_name_would_be_shown_so_it_is_only_read(api_server: str) -> None:
    """The control: the same server shows ``app_key`` in clear, so the masking above is real."""
    views = _stored(api_server, "analytics_legacy", {"app_key": LEGACY_APP_KEY})
    assert views["extra"]["app_key"] == LEGACY_APP_KEY
    assert "app_key" not in CONNECTION_FIELDS


def test_the_hook_reads_both_names_preferring_the_stored_one() -> None:
    from airflow.sdk import Connection

    def config(extra: dict[str, str]) -> str | None:
        connection = Connection(
            conn_id="c",
            conn_type="analytics",
            host="https://analytics.example.com",
            password=TOKEN,
            extra=json.dumps(extra),
        )
        return client_config_from_connection(connection).app_key

    assert config({APP_KEY_EXTRA: APP_KEY}) == APP_KEY
    assert config({"app_key": LEGACY_APP_KEY}) == LEGACY_APP_KEY
    assert config({"appKey": LEGACY_APP_KEY}) == LEGACY_APP_KEY
    assert config({APP_KEY_EXTRA: APP_KEY, "app_key": LEGACY_APP_KEY}) == APP_KEY
