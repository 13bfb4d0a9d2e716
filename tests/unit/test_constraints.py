"""The pip constraints file is what uv.lock pins for the provider with its [s3] extra."""

from __future__ import annotations

import tomllib

from devtools.constraints import CONSTRAINTS, REPO, generate


def _pins(text: str) -> dict[str, set[str]]:
    pins: dict[str, set[str]] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, rest = line.partition("==")
            pins.setdefault(name.strip().lower(), set()).add(rest.split(";")[0].strip())
    return pins


def test_the_committed_file_is_generated_from_the_lock() -> None:
    assert CONSTRAINTS.read_text() == generate()


def test_every_pin_is_the_locked_version_and_the_s3_stack_is_pinned() -> None:
    lock = tomllib.loads((REPO / "uv.lock").read_text())
    locked: dict[str, set[str]] = {}
    for package in lock["package"]:
        locked.setdefault(package["name"].lower(), set()).add(package.get("version", ""))
    pins = _pins(CONSTRAINTS.read_text())
    for name, versions in pins.items():
        assert versions <= locked[name], name
    for needed in ("apache-airflow", "apache-airflow-providers-amazon", "s3fs", "aiobotocore"):
        assert needed in pins
    for development_only in ("pytest", "moto", "analytics-emulator", "airflow-provider-analytics"):
        assert development_only not in pins
