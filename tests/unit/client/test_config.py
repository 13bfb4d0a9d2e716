"""ClientConfig: what it accepts, what it refuses, and that it never shows a secret."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from airflow_provider_analytics import __version__
from airflow_provider_analytics.client import AnalyticsConfigurationError, ClientConfig
from airflow_provider_analytics.client.config import ConnectionSettings, Secret

SECRETS = {"token": "tok-Zq81", "app_key": "app-Kx42", "xtoken": "xt-Pw77"}


def test_defaults_follow_the_spec_and_keep_tls_on() -> None:
    config = ClientConfig("https://analytics.example.com")
    assert config.utm_prefix == "/svc"
    assert config.verify is True
    assert config.allow_insecure_http is False
    assert (config.connect_timeout, config.read_timeout, config.export_read_timeout) == (
        10.0,
        60.0,
        600.0,
    )
    assert (config.max_attempts, config.backoff_base, config.backoff_max) == (4, 0.5, 30.0)
    assert config.pool_maxsize == 16
    assert config.user_agent == f"airflow-provider-analytics/{__version__}"


@pytest.mark.parametrize(
    ("base_url", "root"),
    [
        ("https://analytics.example.com/", "https://analytics.example.com"),
        ("https://analytics.example.com:4005", "https://analytics.example.com:4005"),
        ("https://gw.example.com/analytics//", "https://gw.example.com/analytics"),
        ("http://127.0.0.1:4005", "http://127.0.0.1:4005"),
        ("http://127.8.9.10", "http://127.8.9.10"),
        ("http://localhost:4005/", "http://localhost:4005"),
        ("http://LOCALHOST", "http://LOCALHOST"),
        ("http://[::1]:4005", "http://[::1]:4005"),
    ],
)
def test_accepted_base_urls_and_their_root(base_url: str, root: str) -> None:
    assert ClientConfig(base_url).api_root == root


@pytest.mark.parametrize(
    "base_url",
    [
        "analytics.example.com",
        "ftp://analytics.example.com",
        "https://",
        "https:///path",
        "https://host:notaport",
        "https://host/?x=1",
        "https://host/#frag",
        "https://ho st/",  # requests refused these only once a call was made
        "https://ho\x00st/",
        "https://host\t:443/",
        "",
    ],
)
def test_malformed_base_urls_are_refused(base_url: str) -> None:
    with pytest.raises(AnalyticsConfigurationError, match="base_url"):
        ClientConfig(base_url)


def test_base_url_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(AnalyticsConfigurationError, match="base_url"):
        ClientConfig(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "base_url", ["http://analytics.example.com", "http://10.0.0.5:4005", "http://[fe80::1]"]
)
def test_plain_http_to_a_remote_host_needs_explicit_consent(base_url: str) -> None:
    with pytest.raises(AnalyticsConfigurationError, match="allow_insecure_http"):
        ClientConfig(base_url)
    assert ClientConfig(base_url, allow_insecure_http=True).base_url == base_url


def test_credentials_in_the_url_are_refused_without_echoing_them() -> None:
    with pytest.raises(AnalyticsConfigurationError) as caught:
        ClientConfig("https://user:hunter2@analytics.example.com")
    assert "hunter2" not in str(caught.value)
    assert "base_url" in str(caught.value)


@pytest.mark.parametrize(
    ("prefix", "normalised"),
    [("/svc", "/svc"), ("svc", "/svc"), ("/ark/", "/ark"), ("", ""), ("/", "")],
)
def test_utm_prefix_is_normalised(prefix: str, normalised: str) -> None:
    assert ClientConfig("https://h", utm_prefix=prefix).utm_prefix == normalised


@pytest.mark.parametrize("prefix", ["/a/b", "a b", "/svc?x", 5])
def test_utm_prefix_must_be_one_segment(prefix: object) -> None:
    with pytest.raises(AnalyticsConfigurationError, match="utm_prefix"):
        ClientConfig("https://h", utm_prefix=prefix)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["connect_timeout", "read_timeout", "export_read_timeout"])
@pytest.mark.parametrize("value", [0, -1.0, math.nan, math.inf, True, "10"])
def test_timeouts_must_be_positive_numbers(name: str, value: object) -> None:
    with pytest.raises(AnalyticsConfigurationError, match=name):
        ClientConfig("https://h", **{name: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("max_attempts", 0),
        ("max_attempts", True),
        ("max_attempts", 2.0),
        ("pool_maxsize", 0),
        ("backoff_base", -0.1),
        ("backoff_max", math.inf),
        ("verify", ""),
        ("verify", 1),
        ("allow_insecure_http", "yes"),
        ("user_agent", ""),
        ("user_agent", "bad\r\nheader"),
        ("user_agent", "bad\x85header"),  # a C1 control
        ("user_agent", "\u0430\u0433\u0435\u043d\u0442"),  # beyond Latin-1: no header holds it
    ],
)
def test_other_settings_are_checked(name: str, value: object) -> None:
    with pytest.raises(AnalyticsConfigurationError, match=name):
        ClientConfig("https://h", **{name: value})  # type: ignore[arg-type]


def test_verify_accepts_a_ca_bundle_path_and_false(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    assert ClientConfig("https://h", verify=str(bundle)).verify == str(bundle)
    assert ClientConfig("https://h", verify=False).verify is False


def test_a_verify_path_that_names_nothing_is_refused_naming_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a relative path: the message shows a value shortened past a bound, which a deep
    # temporary folder (under xdist, say) could reach
    monkeypatch.chdir(tmp_path)
    missing = Path("no-such-ca.pem")
    with pytest.raises(
        AnalyticsConfigurationError, match=r"ClientConfig\.verify: names no CA"
    ) as e:
        ClientConfig("https://h", verify=str(missing))
    assert str(missing) in str(e.value)


@pytest.mark.parametrize("field", ["token", "app_key", "xtoken"])
@pytest.mark.parametrize(
    "bad",
    [
        "secret-Vv19\u20ac",
        "\u0161ecret-Vv19",
        "secret\x85Vv19",
        "secret\x00Vv19",
        "s\U0001f600Vv19",
    ],
)
def test_secrets_beyond_printable_latin1_are_refused_without_echo(field: str, bad: str) -> None:
    with pytest.raises(AnalyticsConfigurationError) as caught:
        ClientConfig("https://h", **{field: bad})
    shown = f"{caught.value} {caught.value!r} {caught.value.args}"
    assert field in shown
    assert "Vv19" not in shown and "ecret" not in shown


def test_printable_latin1_secrets_are_accepted() -> None:
    assert ClientConfig("https://h", token="caf\u00e9-\u00ff-Vv19").token == "caf\u00e9-\u00ff-Vv19"


@pytest.mark.parametrize("field", ["token", "app_key", "xtoken"])
@pytest.mark.parametrize("bad", ["sec\nret-Vv19", " secret-Vv19", "secret-Vv19\t"])
def test_secrets_that_cannot_be_headers_are_refused_without_echo(field: str, bad: str) -> None:
    with pytest.raises(AnalyticsConfigurationError) as caught:
        ClientConfig("https://h", **{field: bad})
    assert field in str(caught.value)
    assert "Vv19" not in str(caught.value)


def test_empty_secrets_count_as_missing() -> None:
    config = ClientConfig("https://h", token="", app_key="", xtoken="")
    assert (config.token, config.app_key, config.xtoken) == (None, None, None)
    assert config.secrets() == ()


def test_repr_masks_every_secret_and_secrets_lists_them() -> None:
    config = ClientConfig("https://h", **SECRETS)
    text = repr(config)
    for value in SECRETS.values():
        assert value not in text
    assert "token='***'" in text and "app_key='***'" in text and "xtoken='***'" in text
    assert sorted(config.secrets()) == sorted(SECRETS.values())
    assert "xtoken=None" in repr(ClientConfig("https://h", token="t"))


def test_config_is_frozen() -> None:
    config = ClientConfig("https://h")
    with pytest.raises(ValidationError, match="frozen"):
        config.token = "x"  # type: ignore[misc]


NUMERIC = [
    name
    for name, info in ClientConfig.model_fields.items()
    if isinstance(info.default, int | float) and not isinstance(info.default, bool)
]


def _read(extras: dict[str, object], **fields: object) -> ConnectionSettings:
    """A connection as Airflow hands it over (no Airflow needed for the reading)."""
    conn = SimpleNamespace(
        conn_id="analytics_default",
        host="https://analytics.example.com",
        port=None,
        schema=None,
        password="tok-Zq81",
        extra_dejson=extras,
    )
    vars(conn).update(fields)
    return ConnectionSettings.from_connection(conn)


def test_every_numeric_setting_is_declared_with_one_rule() -> None:
    assert set(NUMERIC) >= {
        "connect_timeout",
        "read_timeout",
        "export_read_timeout",
        "export_deadline",
        "request_deadline",
        "max_attempts",
        "backoff_base",
        "backoff_max",
        "retry_after_max",
        "max_concurrent_calls",
        "pool_maxsize",
        "progress_interval",
    }


@pytest.mark.parametrize("name", NUMERIC)
@pytest.mark.parametrize("value", [True, False, "10", math.nan, math.inf, -1, None, [10]])
def test_every_numeric_setting_refuses_the_same_values_in_python(name: str, value: object) -> None:
    with pytest.raises(AnalyticsConfigurationError, match=rf"^ClientConfig\.{name}: must be an? "):
        ClientConfig("https://h", **{name: value})


@pytest.mark.parametrize("name", NUMERIC)
def test_an_int_too_long_for_a_float_is_an_integer_or_refused(name: str) -> None:
    """Huge ints never raise ``OverflowError``: an integer setting refuses one past its bound, a
    setting in seconds refuses one as no finite number, and every setting refuses a huge
    negative one."""
    if isinstance(ClientConfig.model_fields[name].default, int):
        # a count past 1,000: attempts overflowed the doubled backoff, a pool of 10**12
        # connections was filled one by one at the first call
        for too_many in (10**400, 1_001, 10**12):
            with pytest.raises(AnalyticsConfigurationError, match="and at most 1,000"):
                ClientConfig("https://h", **{name: too_many})
        assert getattr(ClientConfig("https://h", **{name: 1_000}), name) == 1_000
    else:
        with pytest.raises(AnalyticsConfigurationError, match="and at most 2,592,000"):
            ClientConfig("https://h", **{name: 10**400})
        # a wait the OS cannot make failed calls with its OverflowError (9.2e9 s and more)
        with pytest.raises(AnalyticsConfigurationError, match="and at most 2,592,000"):
            ClientConfig("https://h", **{name: 1e10})
        assert getattr(ClientConfig("https://h", **{name: 2_592_000}), name) == 2_592_000
    with pytest.raises(AnalyticsConfigurationError, match=rf"^ClientConfig\.{name}: must be"):
        ClientConfig("https://h", **{name: -(10**400)})


@pytest.mark.parametrize("name", NUMERIC)
def test_every_numeric_extra_reads_text_numbers_and_refuses_bools_alike(name: str) -> None:
    """Text numbers are read for every numeric extra alike (Airflow's URI form and command
    line give every extra as text); true, false and words are refused for every one."""
    assert getattr(_read({name: "7"}), name) == 7
    assert getattr(_read({name: 7}), name) == 7
    for bad in (True, False, "true", "false", "ten", "-1", "nan", "1e999"):
        with pytest.raises(
            AnalyticsConfigurationError,
            match=rf"^connection 'analytics_default': extra '{name}': must be an? ",
        ):
            _read({name: bad})


def test_retry_after_max_follows_its_neighbours() -> None:
    """It read ``true`` as 1 s, ``false`` as 0 s and ``"10"`` as 10 s while its neighbours
    refused them; now one rule decides all of them."""
    for value in (True, False):
        with pytest.raises(AnalyticsConfigurationError, match="extra 'retry_after_max'"):
            _read({"retry_after_max": value})
        with pytest.raises(AnalyticsConfigurationError, match=r"ClientConfig\.retry_after_max"):
            ClientConfig("https://h", retry_after_max=value)
    assert _read({"retry_after_max": "10", "max_attempts": "4"}).retry_after_max == 10.0
    with pytest.raises(AnalyticsConfigurationError, match=r"ClientConfig\.retry_after_max"):
        ClientConfig("https://h", retry_after_max="10")  # type: ignore[arg-type]


def test_the_connection_reads_every_declared_extra_and_its_older_names() -> None:
    settings = _read(
        {
            "extra__analytics__app_api_key": "app-Kx42",
            "xtoken": "xt-Pw77",
            "allow_insecure_http": "yes",
            "verify": "false",
            "timezone": "Asia/Shanghai",
            "allowed_destinations": ["file:///data/"],
            "unknown_extra": "ignored",
        },
        host="http://10.0.0.5",
        port=4005,
    )
    assert settings.base_url == "http://10.0.0.5:4005"
    assert (settings.token, settings.app_key, settings.xtoken) == (
        "tok-Zq81",
        "app-Kx42",
        "xt-Pw77",
    )
    assert (settings.allow_insecure_http, settings.verify) == (True, False)
    assert (settings.timezone, settings.allowed_destinations) == (
        "Asia/Shanghai",
        ["file:///data/"],
    )
    assert settings.progress_bar is False  # Airflow tasks log lines
    assert isinstance(settings, ClientConfig)
    assert _read({"appKey": "app-older"}).app_key == "app-older"


def test_a_refusal_from_the_connection_never_echoes_a_secret() -> None:
    with pytest.raises(AnalyticsConfigurationError) as caught:
        _read({"app_api_key": "app-Kx42\n", "max_attempts": 0})
    assert "app-Kx42" not in str(caught.value) and "tok-Zq81" not in str(caught.value)


def test_credentials_are_held_with_a_masked_repr() -> None:
    config = ClientConfig("https://h", **SECRETS)
    for name, value in SECRETS.items():
        held = getattr(config, name)
        assert isinstance(held, Secret) and held == value
        assert repr(held) == "'***'" and value not in repr({"header": held})
        assert f"{held}" == value  # what is sent is the value itself


def test_a_refused_setting_never_echoes_a_secret_written_where_it_does_not_belong() -> None:
    """A secret under a misspelled keyword, in a base URL without a scheme, or in a proxy URL
    whose password holds a ``/`` (no URL reader finds that password) was shown in the refusal."""
    cases = [
        ({"appKey": "app-Sx91"}, "appKey"),
        ({"proxy": "http://u:pa/app-Sx91@proxy:3128"}, "proxy"),
    ]
    for settings, field in cases:
        with pytest.raises(AnalyticsConfigurationError, match=rf"ClientConfig\.{field}: ") as got:
            ClientConfig("https://h", **settings)
        assert "Sx91" not in str(got.value)
    for base_url in (
        "admin:app-Sx91@analytics.example.com",
        "user:pa/app-Sx91@host",
        "https://user:app-Sx91@host:badport",
        "https://user:pa/app-Sx91@host",
        "https:/user:app-Sx91@host",
    ):
        with pytest.raises(AnalyticsConfigurationError, match="must not carry credentials") as got:
            ClientConfig(base_url)
        assert "Sx91" not in str(got.value), base_url
    for proxy in ("user:app-Sx91@proxy:3128", "http:/user:app-Sx91@proxy:3128"):
        with pytest.raises(AnalyticsConfigurationError, match=r"ClientConfig\.proxy: ") as got:
            ClientConfig("https://h", proxy=proxy)
        assert "Sx91" not in str(got.value), proxy
    with pytest.raises(AnalyticsConfigurationError, match="must not carry credentials") as got:
        _read({}, host="admin:app-Sx91@analytics.example.com")
    assert "Sx91" not in str(got.value)


def test_a_user_agent_with_white_space_around_it_is_refused_before_any_call() -> None:
    """The HTTP library refused it only when the first call was sent, naming no setting."""
    for bad in (" x", "x ", "\tx"):
        with pytest.raises(AnalyticsConfigurationError, match=r"ClientConfig\.user_agent: "):
            ClientConfig("https://h", user_agent=bad)
    assert ClientConfig("https://h", user_agent="a b/1").user_agent == "a b/1"


def test_numbers_in_a_connection_are_written_in_ascii_digits() -> None:
    """``float()`` reads every script's digits ("١٢" is 12); a setting is read as written."""
    with pytest.raises(AnalyticsConfigurationError, match="extra 'max_attempts': must be"):
        _read({"max_attempts": "١٢"})


def test_an_extra_holding_a_number_too_long_to_read_is_refused_by_name() -> None:
    """Airflow's JSON reading of the extra raised a bare ``ValueError`` (4,300 digits and
    more), whatever key held the number."""

    class Unreadable(SimpleNamespace):
        @property
        def extra_dejson(self) -> object:
            import json

            return json.loads('{"unused": ' + "9" * 5000 + "}")

    conn = Unreadable(conn_id="analytics_default", host="https://h", port=None, schema=None)
    conn.password = "tok-Zq81"
    with pytest.raises(AnalyticsConfigurationError, match="a number too long to read"):
        ConnectionSettings.from_connection(conn)
