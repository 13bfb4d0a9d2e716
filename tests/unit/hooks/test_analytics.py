"""AnalyticsHook: connection -> client configuration, secrets masked, operations delegated."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import requests_mock as rm
from airflow.sdk.log import _secrets_masker

from airflow_provider_analytics.client import AnalyticsClient, AnalyticsConfigurationError
from airflow_provider_analytics.core import redaction
from airflow_provider_analytics.core.redaction import Redactor
from airflow_provider_analytics.hooks.analytics import AnalyticsHook

TOKEN, APP_KEY, XTOKEN = "tok-3f9a1c77e2", "ak-5d2e8b01c4", "xt-9c4b2a6e13"


def set_connection(
    monkeypatch: pytest.MonkeyPatch, conn_id: str = "analytics_default", **fields
) -> None:
    conn = {"conn_type": "analytics", "host": "https://analytics.example.com:4005"}
    conn.update(fields)
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))


def test_connection_fields_and_extras_become_the_client_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    set_connection(
        monkeypatch,
        password=TOKEN,
        extra={
            "app_key": APP_KEY,
            "xtoken": XTOKEN,
            "utm_prefix": "/ark",
            "connect_timeout": "3.5",
            "read_timeout": 20,
            "export_read_timeout": 900,
            "max_attempts": "6",
            "verify": "false",
            "timezone": "Asia/Shanghai",
        },
    )
    hook = AnalyticsHook()
    config = hook.client_config
    assert config.base_url.rstrip("/") == "https://analytics.example.com:4005"
    assert (config.token, config.app_key, config.xtoken) == (TOKEN, APP_KEY, XTOKEN)
    assert config.utm_prefix == "/ark"
    assert (config.connect_timeout, config.read_timeout, config.export_read_timeout) == (
        3.5,
        20,
        900,
    )
    assert config.max_attempts == 6
    assert config.verify is False
    assert hook.project_timezone == "Asia/Shanghai"
    assert isinstance(hook.get_conn(), AnalyticsClient)
    assert hook.get_conn() is hook.get_conn()


def test_host_without_scheme_uses_schema_and_port(monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(monkeypatch, "plain", host="127.0.0.1", port=4005, schema="http", password=TOKEN)
    assert AnalyticsHook("plain").client_config.base_url.rstrip("/") == "http://127.0.0.1:4005"
    set_connection(monkeypatch, "tls", host="analytics.example.com", schema="https")
    assert (
        AnalyticsHook("tls").client_config.base_url.rstrip("/") == "https://analytics.example.com"
    )


@pytest.mark.parametrize(
    ("fields", "base_url"),
    [
        ({"host": "https://analytics.example.com/api"}, "https://analytics.example.com:4005/api"),
        (
            {"host": "analytics.example.com/api", "schema": "https"},
            "https://analytics.example.com:4005/api",
        ),
        ({"host": "https://[::1]/api"}, "https://[::1]:4005/api"),
    ],
)
def test_the_port_goes_before_the_hosts_path(
    monkeypatch: pytest.MonkeyPatch, fields: dict, base_url: str
) -> None:
    """It was appended after the path: ``https://analytics.example.com/api:4005``, another
    path on the default port."""
    set_connection(monkeypatch, port=4005, password=TOKEN, **fields)
    assert AnalyticsHook().client_config.base_url == base_url


@pytest.mark.parametrize(("host", "port"), [("127.0.0.1:4005", None), ("127.0.0.1", 4005)])
def test_a_host_naming_no_scheme_is_refused_saying_how_to_write_it(
    monkeypatch: pytest.MonkeyPatch, host: str, port: int | None
) -> None:
    """https is not assumed (it failed later with ``SSL: WRONG_VERSION_NUMBER`` against a
    plain-http platform): the message shows both ways to write the host."""
    set_connection(monkeypatch, host=host, port=port, password=TOKEN)
    with pytest.raises(AnalyticsConfigurationError) as caught:
        _ = AnalyticsHook().client_config
    message = str(caught.value)
    assert message.startswith("connection 'analytics_default': base_url: ")
    assert "https://127.0.0.1:4005" in message and "http://127.0.0.1:4005" in message
    assert "no scheme" in message and TOKEN not in message


def test_ui_prefixed_extras_and_ca_bundle(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    set_connection(
        monkeypatch,
        password=TOKEN,
        extra={"extra__analytics__app_key": APP_KEY, "verify": str(bundle)},
    )
    config = AnalyticsHook().client_config
    assert config.app_key == APP_KEY
    assert config.verify == str(bundle)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"host": ""}, "no host"),
        ({"extra": {"max_attempts": "many"}}, "max_attempts"),
        ({"extra": {"allow_insecure_http": "maybe"}}, "allow_insecure_http"),
        ({"host": "http://analytics.example.com"}, "http"),
        # the jobs refused it at the first export, naming an operator argument not given
        ({"extra": {"timezone": "Mars/Olympus"}}, "extra 'timezone': must be a time zone"),
    ],
)
def test_unusable_connections_fail_with_a_clear_message(
    monkeypatch: pytest.MonkeyPatch, fields: dict, message: str
) -> None:
    set_connection(monkeypatch, **{"password": TOKEN, **fields})
    with pytest.raises(AnalyticsConfigurationError, match=message) as info:
        _ = AnalyticsHook().client_config
    assert TOKEN not in str(info.value)


@pytest.mark.parametrize("extra", [[1, 2], "5", '"text"', f'["{TOKEN}"]'])
def test_an_extra_that_is_not_a_json_object_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, extra: object
) -> None:
    """Airflow hands over whatever JSON the extra holds: a list or a number escaped as
    ``AttributeError: 'list' object has no attribute 'get'`` from both hooks."""
    from airflow_provider_analytics.hooks.iceberg import IcebergCatalogHook

    set_connection(monkeypatch, password=TOKEN, extra=extra)
    set_connection(monkeypatch, "iceberg_default", conn_type="iceberg", extra=extra)
    for read in (lambda: AnalyticsHook().client_config, lambda: IcebergCatalogHook().get_conn()):
        with pytest.raises(AnalyticsConfigurationError, match="extra: must be a JSON object"):
            read()
    with pytest.raises(AnalyticsConfigurationError) as info:
        _ = IcebergCatalogHook().catalog_name
    assert TOKEN not in str(info.value)


def test_an_extra_nested_too_deeply_to_read_is_refused_by_name() -> None:
    """A connection from the database or a secrets backend hands its extra over as stored:
    Airflow's ``json.loads`` of one nested past Python's limit let a bare RecursionError out."""
    from airflow.sdk import Connection

    from airflow_provider_analytics.hooks.analytics import client_config_from_connection

    extra = "[" * 100_000 + "]" * 100_000
    conn = Connection(
        conn_id="deep", conn_type="analytics", host="https://a.example.com", extra=extra
    )
    with pytest.raises(AnalyticsConfigurationError, match=r"extra: .* nested too deeply"):
        client_config_from_connection(conn)


@pytest.mark.parametrize(
    ("fields", "setting", "value"),
    [
        ({"extra": {"app_api_key": APP_KEY, "appKey": XTOKEN}}, "app_key", APP_KEY),
        ({"extra": {"read_timeout": 5, "extra__analytics__read_timeout": 60}}, "read_timeout", 5),
        ({"password": TOKEN, "extra": {"token": XTOKEN}}, "token", TOKEN),
    ],
)
def test_a_setting_given_under_two_spellings_is_read_from_the_documented_one(
    monkeypatch: pytest.MonkeyPatch, fields: dict, setting: str, value: object
) -> None:
    """A connection edited in the UI over time keeps its older spellings beside the form's
    field: the form's field (and the password field for the token) is the one read."""
    set_connection(monkeypatch, **{"password": TOKEN, **fields})
    assert getattr(AnalyticsHook().client_config, setting) == value


def test_secrets_are_masked_and_never_in_reprs(monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(monkeypatch, password=TOKEN, extra={"app_key": APP_KEY, "xtoken": XTOKEN})
    hook = AnalyticsHook()
    config = hook.client_config
    redacted = _secrets_masker().redact(f"token={TOKEN} appKey={APP_KEY} xtoken={XTOKEN}")
    assert TOKEN not in redacted and APP_KEY not in redacted and XTOKEN not in redacted
    for text in (repr(hook), repr(config), str(config), repr(hook.get_conn())):
        assert TOKEN not in text and APP_KEY not in text and XTOKEN not in text


def test_a_root_carrying_a_password_is_neither_echoed_nor_in_the_repr(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Airflow masks no extra named ``allowed_destinations``: its refusal echoed the list, and
    the configuration's repr showed the roots, password and all."""
    root = "s3://AKIAEXAMPLE:roots-pass-9f3@bucket/"
    set_connection(monkeypatch, password=TOKEN, extra={"allowed_destinations": [root, 5]})
    with pytest.raises(AnalyticsConfigurationError, match="allowed_destinations") as info:
        _ = AnalyticsHook().client_config
    set_connection(monkeypatch, password=TOKEN, extra={"allowed_destinations": root})
    config = AnalyticsHook().client_config
    assert config.allowed_destinations == root
    for text in (str(info.value), repr(config), str(config)):
        assert "roots-pass-9f3" not in text


def test_the_client_masks_what_airflows_masker_masks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook hands the secrets to Airflow's masker and sets the client's minimum to the
    deployment's ``[logging] min_length_masked_secret``: both mask the same values."""
    short, seven = "tk1", "seven77"
    set_connection(monkeypatch, password=short, extra={"app_key": seven})
    monkeypatch.setenv("AIRFLOW__LOGGING__MIN_LENGTH_MASKED_SECRET", "8")
    try:
        config = AnalyticsHook().client_config
        assert redaction.is_masked("eight888") and not redaction.is_masked(seven)
        assert Redactor(config.secrets()).text(f"{short} {seven}") == f"{short} {seven}"
    finally:
        redaction.set_min_secret_length(redaction.MIN_SECRET_LENGTH)
    monkeypatch.delenv("AIRFLOW__LOGGING__MIN_LENGTH_MASKED_SECRET")
    config = AnalyticsHook().client_config
    assert redaction.is_masked("five5") and not redaction.is_masked("four")
    assert Redactor(config.secrets()).text(f"{short} {seven}") == f"{short} ***"
    assert _secrets_masker().redact(f"{short} {seven}") == f"{short} ***"


def test_the_proxy_extra_becomes_the_proxy_setting_its_password_masked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proxy = "http://ops:Pr0xy-Secret-77@proxy.corp:3128"
    set_connection(monkeypatch, password=TOKEN, extra={"proxy": proxy})
    config = AnalyticsHook().client_config
    assert config.proxy == proxy
    # "proxy" is one of Airflow's sensitive names: the whole value is masked, the password
    # on its own too
    assert "Pr0xy-Secret-77" not in _secrets_masker().redact(f"{proxy} Pr0xy-Secret-77")
    set_connection(
        monkeypatch, host="http://127.0.0.1:4005", password=TOKEN, extra={"proxy": proxy}
    )
    with pytest.raises(AnalyticsConfigurationError, match="plain http://") as caught:
        AnalyticsHook().client_config  # noqa: B018
    assert "Pr0xy-Secret-77" not in str(caught.value)


def test_the_hooks_client_sends_the_connections_credentials(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    set_connection(monkeypatch, password=TOKEN, extra={"app_key": APP_KEY})
    hook = AnalyticsHook()
    assert isinstance(hook.get_conn(), AnalyticsClient)
    assert hook.get_conn() is hook.get_conn()  # built once per hook
    with rm.Mocker() as mock, caplog.at_level(logging.DEBUG):
        mock.get(
            "https://analytics.example.com:4005/uba/api/schema/event?plan=1",
            json=[{"id": "$startup", "name": "App start"}],
        )
        assert hook.get_conn().list_events(plan=1) == [{"id": "$startup", "name": "App start"}]
        request = mock.request_history[0]
        assert request.headers["token"] == TOKEN and request.headers["appKey"] == APP_KEY
    assert TOKEN not in caplog.text and APP_KEY not in caplog.text


def test_test_connection_reports_failure_without_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(monkeypatch, password=TOKEN, extra={"app_key": APP_KEY})
    with rm.Mocker() as mock:
        mock.get(
            "https://analytics.example.com:4005/uba/api/schema/event",
            status_code=401,
            json={"code": 401, "msg": f"bad token {TOKEN}", "data": None},
        )
        ok, message = AnalyticsHook().test_connection()
    assert ok is False
    assert "token" in message.lower() and TOKEN not in message
