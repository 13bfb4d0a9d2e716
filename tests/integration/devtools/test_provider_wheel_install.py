"""The release as a user installs it: the provider's wheel, built as ``make dist`` builds it,
goes into a throwaway virtualenv with pip and the constraints file (every package pinned), as the
README's install says, and there Airflow finds the provider by its package name and version, with
nothing of this repository on the path."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pytest

from airflow_provider_analytics import __version__
from devtools.constraints import CONSTRAINTS

if TYPE_CHECKING:
    from collections.abc import Sequence

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO: Final = Path(__file__).resolve().parents[3]
UV: Final = REPO / ".tools" / "bin" / "uv"
PACKAGE: Final = "airflow-provider-analytics"


def _clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without anything that points at the repository or at this
    test session."""
    kept = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTHON", "PYTEST_", "VIRTUAL_ENV", "AIRFLOW", "UV_"))
    }
    return {**kept, **extra}


def _run(command: Sequence[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(part) for part in command],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        **kwargs,  # type: ignore[arg-type]
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A virtualenv holding the provider's wheel and what the constraints file pins for it,
    and the environment to run its Airflow in (an AIRFLOW_HOME of its own)."""
    assert UV.exists(), "the pinned uv is bootstrapped by `make venv`"
    root = tmp_path_factory.mktemp("release")
    dist = root / "dist"
    _run([UV, "build", "--package", PACKAGE, "--wheel", "--offline", "--out-dir", dist], cwd=REPO)
    (wheel,) = dist.glob("airflow_provider_analytics-*.whl")
    assert wheel.name == f"airflow_provider_analytics-{__version__}-py3-none-any.whl"
    venv = root / "venv"
    env = _clean_env(AIRFLOW_HOME=str(root / "airflow"))
    _run(["python3.11", "-m", "venv", venv], cwd=root, env=env)
    python = venv / "bin" / "python"
    pip = [python, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    _run([*pip, "install", wheel, "-c", CONSTRAINTS], cwd=root, env=env)
    _run([*pip, "check"], cwd=root, env=env)
    return venv, env


def test_airflow_gets_the_provider_by_its_package_name_and_version(
    installed: tuple[Path, dict[str, str]],
) -> None:
    venv, env = installed
    got = _run(
        [venv / "bin" / "airflow", "providers", "get", PACKAGE, "--output", "json"],
        cwd=venv.parent,
        env=env,
    )
    assert json.loads(got.stdout) == [{"Provider": PACKAGE, "Version": __version__}]


def test_the_provider_is_listed_among_airflows_providers(
    installed: tuple[Path, dict[str, str]],
) -> None:
    venv, env = installed
    listed = _run(
        [venv / "bin" / "airflow", "providers", "list", "--output", "json"],
        cwd=venv.parent,
        env=env,
    )
    versions = {item["package_name"]: item["version"] for item in json.loads(listed.stdout)}
    assert versions[PACKAGE] == __version__
    where = _run(
        [
            venv / "bin" / "python",
            "-c",
            "import airflow_provider_analytics as p; print(p.__file__)",
        ],
        cwd=venv.parent,
        env=env,
    )
    assert where.stdout.strip().startswith(str(venv))
