"""The provider's wheel as users install it: provider code only, the license, the URLs."""

from __future__ import annotations

import email
import subprocess
import zipfile
from email.message import Message
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from airflow_provider_analytics import __version__
from airflow_provider_analytics.provider_info import DOCUMENTATION_URL

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[3]
UV = ROOT / ".tools" / "bin" / "uv"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[zipfile.ZipFile]:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [str(UV), "build", "--wheel", "--package", "airflow-provider-analytics", "--out-dir", out],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("*.whl")
    assert built.name == f"airflow_provider_analytics-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(built) as archive:
        yield archive


def _metadata(wheel: zipfile.ZipFile) -> Message:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    return email.message_from_bytes(wheel.read(name))


def test_the_wheel_holds_the_provider_and_not_the_emulator(wheel: zipfile.ZipFile) -> None:
    packages = {name.split("/")[0] for name in wheel.namelist()}
    assert packages == {
        "airflow_provider_analytics",
        f"airflow_provider_analytics-{__version__}.dist-info",
    }
    assert not [name for name in wheel.namelist() if "analytics_emulator" in name]
    assert "airflow_provider_analytics/operators/cohort_export.py" in wheel.namelist()


def test_the_wheel_carries_the_apache_license(wheel: zipfile.ZipFile) -> None:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    text = wheel.read(name).decode()
    assert text == (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert _metadata(wheel)["License-Expression"] == "Apache-2.0"


def test_the_wheel_names_its_urls_classifiers_and_entry_point(wheel: zipfile.ZipFile) -> None:
    metadata = _metadata(wheel)
    urls = dict(entry.split(", ", 1) for entry in metadata.get_all("Project-URL") or [])
    assert set(urls) == {"Documentation", "Source", "Changelog", "Issues"}
    assert urls["Documentation"] == DOCUMENTATION_URL  # what `airflow providers get` shows
    assert all(url.startswith("https://") for url in urls.values())
    classifiers = metadata.get_all("Classifier") or []
    assert "Framework :: Apache Airflow" in classifiers
    assert "Framework :: Apache Airflow :: Provider" in classifiers
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    points = wheel.read(name).decode()
    assert "[apache_airflow_provider]" in points
    assert "provider_info = airflow_provider_analytics:get_provider_info" in points
