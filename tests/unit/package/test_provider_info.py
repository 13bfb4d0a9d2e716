"""The provider's metadata: what Airflow reads through the entry point."""

from __future__ import annotations

import importlib
import json
from importlib.metadata import entry_points
from pathlib import Path
from types import SimpleNamespace

import airflow_provider_analytics
from airflow_provider_analytics import get_provider_info
from airflow_provider_analytics.client.config import (
    ConnectionSettings,
    connection_form_fields,
    connection_settings,
    connection_table,
    extra_name,
)
from airflow_provider_analytics.provider_info import CONNECTION_FIELDS, DOCUMENTATION_URL

ROOT = Path(__file__).resolve().parents[3]


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


def test_the_form_comes_from_the_settings_declaration() -> None:
    """Each form field is a declared setting under its extra's name, typed as declared, and
    what the form stores (its defaults, as JSON) the connection reads back unchanged."""
    (conn,) = get_provider_info()["connection-types"]
    fields = conn["conn-fields"]
    assert fields == CONNECTION_FIELDS == connection_form_fields()
    declared = {extra_name(name): name for name in connection_settings()}
    kinds = {"number": float, "integer": int, "boolean": bool}
    stored = {}
    for key, field in fields.items():
        info = ConnectionSettings.model_fields[declared[key]]
        assert (field["label"], field["description"]) == (info.title, info.description)
        kind = field["schema"]["type"][0]
        if kind in kinds:
            assert type(info.default) is kinds[kind], key
        if "default" in field["schema"]:
            stored[key] = json.loads(json.dumps(field["schema"]["default"]))
    for name in ("max_attempts", "retry_after_max", "max_concurrent_calls", "progress_interval"):
        assert fields[name]["schema"]["type"][0] in ("number", "integer")
    read = ConnectionSettings.from_connection(
        SimpleNamespace(
            conn_id="c",
            host="https://h",
            port=None,
            schema=None,
            password="tok-1234",
            extra_dejson=stored,
        )
    )
    for key, value in stored.items():
        assert getattr(read, declared[key]) == value, key


def test_the_docs_table_comes_from_the_same_declaration() -> None:
    """The connection page's table is drawn at build time (a MyST substitution set in
    docs/conf.py), so the page holds the placeholder, not a copy."""
    page = (ROOT / "docs" / "connection.md").read_text(encoding="utf-8")
    assert "{{ connection_settings }}" in page
    assert "| extra `max_attempts`" not in page  # no hand-written rows beside it
    conf = (ROOT / "docs" / "conf.py").read_text(encoding="utf-8")
    assert '"connection_settings": connection_table()' in conf
    table = connection_table()
    for key, field in CONNECTION_FIELDS.items():
        assert f"| {field['label']} | extra `{key}` | {field['description']} |" in table
    for name in connection_settings().keys() - {"token"}:  # the token is the password
        assert f"extra `{extra_name(name)}`" in table
    assert "| Base URL | host |" in table and "| Project token | password |" in table
