"""The emulator installs on its own: its wheel, built as ``make emulator-wheel`` builds it, goes
into a throwaway virtualenv with its dependencies pinned by uv.lock (from uv's cache, offline),
and there it serves requests from its console script and its pytest plugin's fixture works,
with nothing of this repository on the path."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pytest

if TYPE_CHECKING:
    from collections.abc import Sequence

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO: Final = Path(__file__).resolve().parents[3]
UV: Final = REPO / ".tools" / "bin" / "uv"
USER_TEST: Final = """
import json
import os
import urllib.request

import analytics_emulator


def test_the_fixture_serves_and_sets_the_connection(analytics_emulator):
    connection = json.loads(os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"])
    request = urllib.request.Request(
        connection["host"] + "/uba/api/cohort/users",
        data=json.dumps({"cohortCode": "cohort_tiny"}).encode(),
        headers={"token": connection["password"], "appKey": connection["extra"]["app_api_key"],
                 "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert json.loads(answer.read())["count"] == 7
"""


def _run(
    command: Sequence[str | Path], *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert UV.exists(), "the pinned uv is bootstrapped by `make venv`"
    out = tmp_path_factory.mktemp("dist")
    _run([UV, "build", "emulator", "--wheel", "--offline", "--out-dir", out], cwd=REPO)
    (built,) = out.glob("analytics_emulator-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv of its own: the emulator's dependencies (and its pytest extra) at the
    versions of uv.lock, then the wheel."""
    target = tmp_path_factory.mktemp("throwaway") / "venv"
    env = {**_clean_env(), "UV_PROJECT_ENVIRONMENT": str(target), "UV_PYTHON_DOWNLOADS": "never"}
    _run(
        [
            *(UV, "sync", "--frozen", "--offline", "--package", "analytics-emulator"),
            *("--extra", "pytest", "--no-default-groups", "--no-install-package"),
            *("analytics-emulator", "--python", "python3.11"),
        ],
        cwd=REPO,
        env=env,
    )
    python = target / "bin" / "python"
    _run([UV, "pip", "install", "--offline", "--no-deps", "--python", python, wheel], env=env)
    _run([UV, "pip", "check", "--python", python], env=env)
    return target


def _clean_env() -> dict[str, str]:
    """This process's environment without anything that would point at the repository or at
    this test session."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTHON", "PYTEST_", "VIRTUAL_ENV", "AIRFLOW", "UV_"))
    }


def test_the_wheel_holds_the_emulator_its_script_and_its_plugin(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = next(
            archive.read(name).decode() for name in names if name.endswith("entry_points.txt")
        )
    assert {name.split("/")[0] for name in names} == {
        "analytics_emulator",
        "analytics_emulator-0.2.0.dist-info",
    }
    assert "analytics_emulator/pytest_plugin.py" in names
    assert "analytics-emulator = analytics_emulator.__main__:main" in entry_points
    assert "analytics_emulator = analytics_emulator.pytest_plugin" in entry_points


def test_the_installed_emulator_serves_a_request(venv: Path, tmp_path: Path) -> None:
    imported = _run(
        [venv / "bin" / "python", "-c", "import analytics_emulator as e; print(e.__file__)"],
        cwd=tmp_path,
        env=_clean_env(),
    )
    assert imported.stdout.strip().startswith(str(venv))
    port_file = tmp_path / "port"
    server = subprocess.Popen(
        [
            *(venv / "bin" / "analytics-emulator", "--port=0", f"--port-file={port_file}"),
            *("--token=wheel-token", "--app-key=wheel-key"),
        ],
        cwd=tmp_path,
        env=_clean_env(),
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists() and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert port_file.exists(), "the installed emulator did not start"
        request = urllib.request.Request(
            f"http://127.0.0.1:{port_file.read_text().strip()}/uba/api/schema/event",
            headers={"token": "wheel-token", "appKey": "wheel-key"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 200 and json.loads(answer.read())
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_installed_plugin_gives_the_fixture(venv: Path, tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(USER_TEST)
    done = _run(
        [venv / "bin" / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user.py"],
        cwd=tmp_path,
        env=_clean_env(),
    )
    assert "1 passed" in done.stdout
