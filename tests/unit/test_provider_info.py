"""The provider's metadata: what Airflow reads through the entry point."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from pathlib import Path

import airflow_provider_analytics
from airflow_provider_analytics import get_provider_info
from airflow_provider_analytics.provider_info import DOCUMENTATION_URL

ROOT = Path(__file__).resolve().parents[2]


def test_entry_point_resolves_to_get_provider_info() -> None:
    (point,) = [
        p
        for p in entry_points(group="apache_airflow_provider")
        if p.value.startswith("airflow_provider_analytics")
    ]
    assert point.load() is get_provider_info


def test_every_listed_module_and_class_imports() -> None:
    info = get_provider_info()
    modules = [
        m
        for key in ("hooks", "operators", "sensors", "triggers")
        for entry in info[key]
        for m in entry["python-modules"]
    ]
    assert len(modules) >= 7
    for name in modules:
        importlib.import_module(name)
    (conn,) = info["connection-types"]
    module, _, cls = conn["hook-class-name"].rpartition(".")
    hook = getattr(importlib.import_module(module), cls)
    assert hook.conn_type == conn["connection-type"] == "analytics"
    assert hook.default_conn_name == "analytics_default"


def test_secrets_are_password_fields_and_version_matches() -> None:
    info = get_provider_info()
    fields = info["connection-types"][0]["conn-fields"]
    assert fields["app_api_key"]["schema"]["format"] == "password"
    assert fields["xtoken"]["schema"]["format"] == "password"
    assert "format" not in fields["utm_prefix"]["schema"]
    assert info["versions"][0] == airflow_provider_analytics.__version__


def test_how_to_guides_are_pages_of_the_documentation() -> None:
    (integration,) = get_provider_info()["integrations"]
    guides = integration["how-to-guide"]
    assert guides
    for guide in guides:
        assert guide.startswith("/docs/") and (ROOT / guide.lstrip("/")).is_file(), guide
    assert integration["external-doc-url"] == DOCUMENTATION_URL


def test_airflow_shows_the_documentation_url() -> None:
    """Airflow reads ``documentation-url`` from the installed distribution's project URLs."""
    from airflow.providers_manager import ProvidersManager

    provider = ProvidersManager().providers["airflow-provider-analytics"]
    assert provider.data["documentation-url"] == DOCUMENTATION_URL
