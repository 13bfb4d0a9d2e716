"""The proxy rule, decided by the client for both transports: plain http never through a
proxy (refused by name when one is named for the base URL), https tunnelled through the
``proxy`` setting or the environment's, ``NO_PROXY`` honoured. The real proxies are in
``tests/integration/client/test_transport_parity.py``."""

from __future__ import annotations

import pytest

from airflow_provider_analytics.client import AnalyticsConfigurationError, ClientConfig
from airflow_provider_analytics.client.proxies import Route, bypasses_proxy, proxy_route
from airflow_provider_analytics.core.redaction import known

HTTPS = "https://analytics.example.com:4005"
HTTP = "http://127.0.0.1:4005"


def route(base_url: str, environ: dict[str, str], **settings: str) -> Route:
    return proxy_route(ClientConfig(base_url, token="tok-12345", **settings), environ)


@pytest.mark.parametrize(
    ("environ", "variable"),
    [
        ({"HTTP_PROXY": "http://proxy.corp:3128"}, "HTTP_PROXY"),
        ({"http_proxy": "proxy.corp:3128", "HTTP_PROXY": "http://other:1"}, "http_proxy"),
        ({"ALL_PROXY": "http://proxy.corp:3128"}, "ALL_PROXY"),
        ({"all_proxy": "socks5://proxy.corp:1080"}, "all_proxy"),
        ({"HTTP_PROXY": "http://127.0.0.1:3128"}, "HTTP_PROXY"),  # loopback too
        ({"HTTP_PROXY": "http://proxy.corp:3128", "NO_PROXY": "example.com"}, "HTTP_PROXY"),
        ({"HTTP_PROXY": "http://ops:pw@[proxy.corp:3128"}, "HTTP_PROXY"),  # urlsplit refuses it
        ({"HTTP_PROXY": "http://proxy.corp:port"}, "HTTP_PROXY"),
    ],
)
def test_plain_http_is_refused_when_the_environment_names_a_proxy(
    environ: dict[str, str], variable: str
) -> None:
    chosen = route(HTTP, environ)
    assert chosen.proxy_url is None
    with pytest.raises(AnalyticsConfigurationError) as caught:
        chosen.check("list_events")
    message = str(caught.value)
    assert message.startswith("list_events: plain http:// would send the credentials in clear")
    assert f"named by {variable}" in message
    assert "add 127.0.0.1 to NO_PROXY" in message
    assert caught.value.operation == "list_events"


def test_the_refusal_shows_no_proxy_password() -> None:
    chosen = route(HTTP, {"HTTP_PROXY": "http://ops:Pr0xy-Secret-77@proxy.corp:3128"})
    with pytest.raises(AnalyticsConfigurationError) as caught:
        chosen.check("list_events")
    assert "proxy.corp:3128" in str(caught.value)
    assert "Pr0xy-Secret-77" not in str(caught.value)
    assert "Pr0xy-Secret-77" not in repr(chosen)
    assert known().text("ops:Pr0xy-Secret-77 ops:Pr0xy%2DSecret") == "ops:*** ops:Pr0xy%2DSecret"


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"HTTPS_PROXY": "http://proxy.corp:3128"},  # not for http
        {"HTTP_PROXY": "http://proxy.corp:3128", "NO_PROXY": "127.0.0.1"},
        {"HTTP_PROXY": "http://proxy.corp:3128", "no_proxy": "localhost, 127.0.0.0/8"},
        {"HTTP_PROXY": "http://proxy.corp:3128", "NO_PROXY": "*"},
        {"HTTP_PROXY": "http://proxy.corp:3128", "NO_PROXY": "127.0.0.1:4005"},
    ],
)
def test_plain_http_goes_directly_when_no_proxy_applies(environ: dict[str, str]) -> None:
    chosen = route(HTTP, environ)
    chosen.check("list_events")
    assert chosen.proxy_url is None
    assert set(chosen.for_requests(HTTP + "/x").values()) == {None}


@pytest.mark.parametrize(
    ("environ", "settings", "expected"),
    [
        ({}, {}, None),
        ({"HTTPS_PROXY": "http://proxy.corp:3128"}, {}, "http://proxy.corp:3128"),
        ({"https_proxy": "proxy.corp:3128"}, {}, "http://proxy.corp:3128"),
        ({"ALL_PROXY": "https://proxy.corp:443"}, {}, "https://proxy.corp:443"),
        ({"HTTP_PROXY": "http://proxy.corp:3128"}, {}, None),  # not for https
        ({"HTTPS_PROXY": "http://proxy.corp:3128", "NO_PROXY": ".example.com"}, {}, None),
        ({"HTTPS_PROXY": "http://proxy.corp:3128", "NO_PROXY": "*.example.com"}, {}, None),
        (
            {"HTTPS_PROXY": "http://proxy.corp:3128", "NO_PROXY": "example.com:443"},
            {},
            "http://proxy.corp:3128",
        ),
        (
            {"HTTPS_PROXY": "http://proxy.corp:3128", "NO_PROXY": "ample.com"},
            {},
            "http://proxy.corp:3128",
        ),
        ({"HTTPS_PROXY": "http://a:1"}, {"proxy": "http://b:2"}, "http://b:2"),
        ({"NO_PROXY": "*"}, {"proxy": "http://b:2"}, "http://b:2"),  # the setting is explicit
    ],
)
def test_https_tunnels_through_the_setting_or_the_environment(
    environ: dict[str, str], settings: dict[str, str], expected: str | None
) -> None:
    chosen = route(HTTPS, environ, **settings)
    chosen.check("list_events")
    assert chosen.proxy_url == expected
    proxies = chosen.for_requests(HTTPS + "/uba/api/schema/event")
    assert proxies["https"] == proxies["https://analytics.example.com"] == proxies["all"]
    assert proxies["https"] == expected


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("socks5://proxy.corp:1080", "HTTPS_PROXY names a socks5:// proxy"),
        ("http://:3128", "HTTPS_PROXY names no usable proxy address"),
        ("http://proxy.corp:port", "HTTPS_PROXY names no usable proxy address"),
    ],
)
def test_an_unusable_environment_proxy_is_refused_by_name(value: str, says: str) -> None:
    chosen = route(HTTPS, {"HTTPS_PROXY": value})
    assert chosen.proxy_url is None
    with pytest.raises(AnalyticsConfigurationError, match=says):
        chosen.check("list_events")


@pytest.mark.parametrize(
    ("host", "port", "no_proxy", "bypassed"),
    [
        ("api.example.com", 443, "example.com", True),
        ("example.com", 443, ".example.com", True),
        ("badexample.com", 443, "example.com", False),
        ("api.example.com", 443, "example.com:8443", False),
        ("10.1.2.3", 443, "10.0.0.0/8", True),
        ("10.1.2.3", 443, "10.1.2.4", False),
        ("::1", 443, "[::1]:443", True),
        ("::1", 443, "::1", True),
        ("EXAMPLE.com", 443, " Example.COM ", True),
        ("example.com", 443, "", False),
        ("example.com", 443, "example.com:\u00b2", True),  # a port int() cannot read: any port
        ("example.com", 443, "example.com:" + "4" * 5000, True),  # past int()'s digits
    ],
)
def test_no_proxy_entries(host: str, port: int, no_proxy: str, bypassed: bool) -> None:
    assert bypasses_proxy(host, port, no_proxy) is bypassed


def test_the_proxy_setting_is_checked_and_never_shown_with_its_password() -> None:
    config = ClientConfig(HTTPS, token="tok-12345", proxy="http://ops:Pr0xy-Secret-77@p:3128")
    assert "Pr0xy-Secret-77" not in repr(config)
    assert "proxy='http://ops:***@p:3128'" in repr(config)
    assert "Pr0xy-Secret-77" in config.secrets()
    assert ClientConfig(HTTPS, proxy="").proxy is None


@pytest.mark.parametrize(
    ("base_url", "proxy", "says"),
    [
        (HTTP, "http://127.0.0.1:3128", "plain http:// would send the credentials in clear"),
        (HTTPS, "socks5://p:1080", "must be the URL of an http:// or https:// proxy"),
        (HTTPS, "p:3128", "must be the URL of an http:// or https:// proxy"),
        (HTTPS, "http://p:3128/path", "without a path"),
        (HTTPS, "http://p:port", "must be the URL"),
    ],
)
def test_an_unusable_proxy_setting_is_refused_by_name(base_url: str, proxy: str, says: str) -> None:
    with pytest.raises(AnalyticsConfigurationError, match=r"ClientConfig\.proxy: ") as caught:
        ClientConfig(base_url, token="tok-12345", proxy=proxy)
    assert says in str(caught.value)


def test_a_malformed_environment_proxy_is_refused_at_the_call_and_its_password_masked() -> None:
    """``urlsplit`` refuses a broken host after the password: the client is still built, the
    call is refused by name, and the password is masked although the URL cannot be parsed."""
    chosen = route(HTTPS, {"HTTPS_PROXY": "http://ops:Env-Pw-4471@[proxy.corp:3128"})
    assert known().text("Env-Pw-4471") == "***"
    with pytest.raises(AnalyticsConfigurationError, match="HTTPS_PROXY") as refused:
        chosen.check("list_events")
    assert "Env-Pw-4471" not in str(refused.value)


def test_a_malformed_proxy_setting_is_refused_with_its_password_masked() -> None:
    with pytest.raises(AnalyticsConfigurationError, match=r"ClientConfig\.proxy: ") as caught:
        ClientConfig(HTTPS, token="tok-12345", proxy="http://u:Set-Pw-9913@[bad:80")
    assert "Set-Pw-9913" not in f"{caught.value} {caught.value!r}"
    assert "u:***@" in str(caught.value)
    assert caught.value.__suppress_context__  # pydantic's error, which echoes the input


def test_each_call_masks_the_environment_proxys_password_again() -> None:
    """A client outlives a redactor's ``forget()`` (a long-lived hook, a module fixture):
    every call remembers its route's password, as it remembers the credentials."""
    from airflow_provider_analytics.client.attempts import CallAttempts
    from airflow_provider_analytics.client.operations import LIST_EVENTS
    from airflow_provider_analytics.core import redaction
    from airflow_provider_analytics.core.retry import RetryPolicy

    config = ClientConfig(HTTPS, token="tok-12345", app_key="app-12345")
    chosen = route(HTTPS, {"HTTPS_PROXY": "http://ops:Env-Pw-5580@proxy.corp:3128"})
    redaction.forget()
    assert known().text("Env-Pw-5580") == "Env-Pw-5580"
    CallAttempts(config, RetryPolicy(), LIST_EVENTS, route=chosen)
    assert known().text("Env-Pw-5580") == "***"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://u:p@ss@proxy:3128", "http://u:***@proxy:3128"),  # an "@" in the password
        ("http://u:pw@proxy:3128/a://b", "http://u:***@proxy:3128/a://b"),  # "://" in the path
        ("http://u:pw@[proxy:3128", "http://u:***@[proxy:3128"),  # a host urlsplit refuses
        ("http://proxy:3128", "http://proxy:3128"),
    ],
)
def test_a_shown_proxy_hides_its_whole_password(url: str, shown: str) -> None:
    from airflow_provider_analytics.client.config import shown_proxy

    assert shown_proxy(url) == shown
