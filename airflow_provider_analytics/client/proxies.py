"""Which proxy the calls go through, decided once by one rule for both transports and handed
to each library (neither reads the proxy variables itself); the rule is in ``docs/security.md``:
plain ``http://`` never goes through a proxy (a call is refused when the environment names
one), ``https://`` is tunnelled (``CONNECT``) through the ``proxy`` setting or the environment's.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from airflow_provider_analytics.client.config import http_url, url_secrets
from airflow_provider_analytics.core.errors import AnalyticsConfigurationError
from airflow_provider_analytics.core.redaction import remember

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_analytics.client.config import ClientConfig

PROXY_SCHEMES = ("http", "https")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _address(url: str) -> str:
    """``host:port`` of a proxy URL (``?`` for one ``urlsplit`` cannot read)."""
    try:
        parts = urlsplit(url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme.lower(), 80)
    except ValueError:
        return "?"
    host = parts.hostname or "?"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True)
class Route:
    """How the calls reach the base URL: directly, through the proxy at ``url``, or not at all
    (``refusal`` says why)."""

    url: str | None = field(default=None, repr=False)  # it may hold the proxy's password
    refusal: str | None = None

    @property
    def proxy_url(self) -> str | None:
        return None if self.refusal is not None else self.url

    def __post_init__(self) -> None:
        remember(self.secrets)  # the password is masked in every message

    @property
    def secrets(self) -> list[str]:
        """The proxy's password (as written and decoded), which every call remembers."""
        return url_secrets(self.url or "")

    def check(self, operation: str) -> None:
        """Raise the refusal, if any, for a call of ``operation`` (before anything is sent)."""
        if self.refusal is not None:
            raise AnalyticsConfigurationError(f"{operation}: {self.refusal}", operation=operation)

    def for_requests(self, url: str) -> dict[str, str | None]:
        """``requests``' ``proxies`` for ``url``: every key it looks up set to this route's
        proxy, so neither the environment nor the session can add another."""
        host = urlsplit(url).hostname or ""
        keys = [f"{scheme}://{host}" for scheme in (*PROXY_SCHEMES, "all")]
        keys += [*PROXY_SCHEMES, "all"]
        return dict.fromkeys(keys, self.proxy_url)


def _environment_proxy(scheme: str, environ: Mapping[str, str]) -> tuple[str, str] | None:
    """``(variable, value)`` of the proxy the environment names for ``scheme``: the
    lower-case variable before the upper-case one, the scheme's before ``all_proxy``."""
    for name in (f"{scheme}_proxy", f"{scheme.upper()}_PROXY", "all_proxy", "ALL_PROXY"):
        value = environ.get(name, "").strip()
        if value:
            return name, value
    return None


def _split_entry(entry: str) -> tuple[str, int | None]:
    """A ``no_proxy`` entry's host and port (``None`` for any port)."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif entry.count(":") == 1:
        host, _, port = entry.partition(":")
    else:
        host, port = entry, ""  # a bare IPv6 address or network keeps its colons
    # "²" is a digit int() refuses, and thousands of digits are past its limit
    return host, int(port) if port.isdecimal() and len(port) <= 10 else None


def bypasses_proxy(host: str, port: int, no_proxy: str) -> bool:
    """Whether ``no_proxy`` exempts ``host:port``: comma-separated entries, ``*`` (every
    host), a host name (and its subdomains; a leading ``.`` or ``*.`` ignored), an IP address or
    a CIDR network, each optionally with ``:port``."""
    host = host.lower().strip("[]")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for raw in no_proxy.replace(" ", ",").split(","):
        entry = raw.strip().lower()
        if entry == "*":
            return True
        if not entry:
            continue
        entry_host, entry_port = _split_entry(entry)
        if entry_port is not None and entry_port != port:
            continue
        try:
            network = ipaddress.ip_network(entry_host, strict=False)
        except ValueError:
            name = entry_host.removeprefix("*").lstrip(".")
            if name and (host == name or host.endswith(f".{name}")):
                return True
            continue
        if address is not None and address in network:
            return True
    return False


def proxy_route(config: ClientConfig, environ: Mapping[str, str] | None = None) -> Route:
    """The route of every call of a client of ``config`` (``environ``: ``os.environ``)."""
    environ = os.environ if environ is None else environ
    parts = urlsplit(config.base_url)
    scheme, host = parts.scheme.lower(), parts.hostname or ""
    if config.proxy:  # ClientConfig allows it with https:// only
        return Route(config.proxy)
    named = _environment_proxy(scheme, environ)
    if named is None:
        return Route()
    variable, value = named
    port = parts.port or _DEFAULT_PORTS[scheme]
    no_proxy = environ.get("no_proxy") or environ.get("NO_PROXY") or ""
    if bypasses_proxy(host, port, no_proxy):
        return Route()
    proxy = value if "://" in value else f"http://{value}"
    direct = f"add {host} to NO_PROXY to connect directly"
    if scheme == "http":
        return Route(
            proxy,
            f"plain http:// would send the credentials in clear to the proxy "
            f"{_address(proxy)} named by {variable}, which reads every plain request; use "
            f"https:// (a proxy then only relays encrypted bytes), or {direct}",
        )
    proxy_parts = http_url(proxy, any_scheme=True)
    if proxy_parts is None:
        return Route(proxy, f"{variable} names no usable proxy address; {direct}")
    if proxy_parts.scheme not in PROXY_SCHEMES:
        return Route(
            proxy,
            f"{variable} names a {proxy_parts.scheme}:// proxy; only http:// and https:// proxies "
            f"are supported; {direct}",
        )
    return Route(proxy)
