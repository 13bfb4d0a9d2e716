"""The server itself: start, stop, ports, the CLI and the shared fixtures."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from typing import TYPE_CHECKING, Final

import pytest
import requests
from analytics_emulator.server import EmulatorConfig, EmulatorServer

from tests.emulator_helpers import project_headers

if TYPE_CHECKING:
    from pathlib import Path

    from tests.emulator_helpers import EmulatorAdmin

pytestmark = pytest.mark.integration


def _port_is_free(port: int) -> bool:
    """Whether a listener could bind the port again (connections in TIME_WAIT allowed)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_server_picks_a_port_serves_and_frees_it() -> None:
    server = EmulatorServer(EmulatorConfig())
    server.start()
    port = server.port
    assert port is not None and port > 0
    assert server.base_url == f"http://127.0.0.1:{port}"
    response = requests.get(
        f"{server.base_url}/uba/api/schema/event", headers=project_headers(server), timeout=10
    )
    assert response.status_code == 200
    server.stop()
    assert server.port is None
    assert _port_is_free(port)
    assert not any(
        t.name == f"analytics-emulator-{port}" for t in __import__("threading").enumerate()
    )


def test_context_manager_and_separate_state() -> None:
    with EmulatorServer() as first, EmulatorServer() as second:
        assert first.port != second.port
        assert first.state is not second.state


def test_non_loopback_host_is_refused() -> None:
    with pytest.raises(ValueError, match="loopback"):
        EmulatorConfig(host="0.0.0.0")


def test_config_repr_hides_secrets() -> None:
    text = repr(EmulatorConfig(token="s3cret-token", xtoken="s3cret-x", admin_token="s3cret-a"))
    assert "s3cret" not in text


def test_session_fixtures_work_together(
    emulator: EmulatorServer, emulator_admin: EmulatorAdmin
) -> None:
    requests.get(
        f"{emulator.base_url}/uba/api/schema/event", headers=project_headers(emulator), timeout=10
    )
    assert emulator_admin.stats()["requests"].get("list_events", 0) >= 1


def test_fresh_emulator_is_its_own(
    emulator: EmulatorServer, fresh_emulator: EmulatorServer
) -> None:
    assert fresh_emulator.port != emulator.port
    assert fresh_emulator.state is not emulator.state


def test_cli_serves_until_sigterm_and_writes_the_port(tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "analytics_emulator",
            "--port",
            "0",
            "--token",
            "cli-token",
            "--cohort",
            "cohort_cli=3",
            "--port-file",
            str(port_file),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        port = int(port_file.read_text())
        assert line == f"emulator listening on http://127.0.0.1:{port}"
        printed = [process.stdout.readline().split() for _ in range(4)]
        assert [words[0] for words in printed] == ["token", "app_api_key", "xtoken", "timezone"]
        assert [words[-1] for words in printed] == [
            "cli-token",
            "emulator-app-key",
            "emulator-xtoken",
            "Asia/Shanghai",
        ]
        response = requests.post(
            f"http://127.0.0.1:{port}/uba/api/cohort/users",
            headers={"token": "cli-token", "appKey": "emulator-app-key"},
            json={"cohortCode": "cohort_cli"},
            timeout=10,
        )
        assert response.status_code == 200
        assert response.json()["count"] == 3
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


HELP_COLUMNS: Final = "200"
"""The terminal width argparse wraps the CLI's help and usage at: pinned (the test's own
terminal may be narrow), and wide enough that no value is split at a hyphen."""


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m analytics_emulator`` with ``args`` and a pinned terminal width."""
    return subprocess.run(
        [sys.executable, "-m", "analytics_emulator", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": HELP_COLUMNS},
    )


def test_cli_help_names_the_default_credentials() -> None:
    result = run_cli("--help")
    assert result.returncode == 0, result.stderr
    defaults = EmulatorConfig()
    text = " ".join(result.stdout.split())
    for secret in (defaults.token, defaults.app_key, defaults.xtoken, "Asia/Shanghai"):
        assert secret in text


def test_cli_refuses_a_public_host() -> None:
    result = run_cli("--port", "0", "--host", "0.0.0.0")
    assert result.returncode != 0
    assert "loopback" in result.stderr
