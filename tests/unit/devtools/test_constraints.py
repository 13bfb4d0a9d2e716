"""The pip constraints file is what uv.lock pins for the provider with every extra of it."""

from __future__ import annotations

import tomllib

from devtools.constraints import CONSTRAINTS, EXTRAS, REPO, generate, pinned, unpinned


def test_the_committed_file_is_generated_from_the_lock() -> None:
    assert CONSTRAINTS.read_text() == generate()


def test_the_file_covers_every_extra_the_project_declares() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert set(EXTRAS) == set(project["optional-dependencies"])


def test_every_pin_is_the_locked_version_and_every_extra_is_pinned() -> None:
    lock = tomllib.loads((REPO / "uv.lock").read_text())
    locked: dict[str, set[str]] = {}
    for package in lock["package"]:
        locked.setdefault(package["name"].lower(), set()).add(package.get("version", ""))
    pins = pinned(CONSTRAINTS.read_text())
    for name, versions in pins.items():
        assert versions <= locked[name], name
    for needed in (
        "apache-airflow",
        "apache-airflow-providers-amazon",  # [s3]
        "s3fs",
        "aiobotocore",
        "pyiceberg",  # [iceberg]
        "sqlalchemy",
        "psycopg2-binary",
        "pandas",  # [pandas]
        "tqdm",  # [progress]
    ):
        assert needed in pins, needed
    for development_only in ("pytest", "moto", "analytics-emulator", "airflow-provider-analytics"):
        assert development_only not in pins


def test_a_package_pip_would_install_unpinned_or_at_another_version_is_named() -> None:
    pins = pinned(
        "# header\npandas==3.1.1\nnumpy==2.4.6 ; python_full_version < '3.12'\n"
        "numpy==2.5.5 ; python_full_version >= '3.12'\n"
    )
    report = {
        "install": [
            {"metadata": {"name": "airflow_provider_analytics", "version": "0.2.0"}},
            {"metadata": {"name": "pandas", "version": "3.1.1"}},
            {"metadata": {"name": "numpy", "version": "2.4.6"}},
            {"metadata": {"name": "tqdm", "version": "4.70.1"}},
            {"metadata": {"name": "Pandas", "version": "3.0.0"}},
        ]
    }
    assert unpinned(report, pins, own={"airflow-provider-analytics"}) == [
        "pandas==3.0.0",
        "tqdm==4.70.1",
    ]
