"""Which proxy the calls go through: decided here, by one rule, for both transports.

``requests`` and ``httpx`` each read the proxy environment variables their own way; left to
them, plain ``http://`` calls went to whatever ``HTTP_PROXY`` named, credentials in clear.
So the client decides, once per transport, and hands both libraries the same answer
(``requests`` gets it with every request, ``httpx`` when its client is built; neither reads
the proxy variables itself):

- Plain ``http://`` never goes through a proxy: a proxy reads a plain request whole, headers
  included, so the credentials would reach a host other than the base URL's. When the
  environment names a proxy for the base URL (``http_proxy``, ``HTTP_PROXY``,
  ``all_proxy`` or ``ALL_PROXY``, unless ``no_proxy``/``NO_PROXY`` exempts the host), every
  call is refused, naming the variable, before anything is sent. This holds for a proxy on
  loopback too: where a local proxy forwards the request is not for the client to know.
  (``ClientConfig`` refuses a ``proxy`` setting with a plain ``http://`` base URL.)
- ``https://`` goes through the ``proxy`` setting when there is one, else through the
  environment's ``https_proxy``/``HTTPS_PROXY``/``all_proxy``/``ALL_PROXY`` unless
  ``no_proxy`` exempts the host, always as a ``CONNECT`` tunnel: the proxy learns the
  host and port and relays encrypted bytes; the credentials travel inside TLS to the base
  URL's host only. Only ``http://`` and ``https://`` proxies are used; another scheme
  (``socks5://``) is refused by name.
- Redirects are never followed (both transports), so no answer can send the credentials to
  another host either.

``no_proxy`` holds comma-separated entries: ``*`` (every host), a host name (also matching
its subdomains; a leading ``.`` or ``*.`` is ignored), an IP address or a CIDR network,
each optionally with ``:port``.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from airflow_provider_analytics.client.config import proxy_secrets
from airflow_provider_analytics.core.errors import AnalyticsConfigurationError
from airflow_provider_analytics.core.redaction import remember

if TYPE_CHECKING:
    from collections.abc import Mapping

    from airflow_provider_analytics.client.config import ClientConfig

PROXY_SCHEMES = ("http", "https")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _address(url: str) -> str:
    """A proxy's ``host:port``, without credentials: how messages name it."""
    parts = urlsplit(url)
    port = parts.port or _DEFAULT_PORTS.get(parts.scheme.lower(), 80)
    host = parts.hostname or "?"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True)
class Route:
    """How the calls reach the base URL: directly, tunnelled through the proxy at ``url``, or
    not at all (``refusal`` says why; ``url`` is then the proxy that was named).
    """

    url: str | None = None
    refusal: str | None = None

    @property
    def proxy_url(self) -> str | None:
        """The proxy's URL, ``None`` to connect directly (or when refused)."""
        return None if self.refusal is not None else self.url

    def __post_init__(self) -> None:
        remember(proxy_secrets(self.url or ""))  # the password is masked in every message

    def check(self, operation: str) -> None:
        """Raise the refusal, if any, for a call of ``operation`` (before anything is sent).

        :raises AnalyticsConfigurationError: naming the variable that names the proxy.
        """
        if self.refusal is not None:
            raise AnalyticsConfigurationError(f"{operation}: {self.refusal}", operation=operation)

    def for_requests(self, url: str) -> dict[str, str | None]:
        """``requests``' ``proxies`` argument for ``url``: every key it looks up set to this
        route's proxy, so neither the environment nor a session's own ``proxies`` can add
        another (a ``None`` leaves ``requests`` no proxy at all)."""
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
    return host, int(port) if port.isdigit() else None


def bypasses_proxy(host: str, port: int, no_proxy: str) -> bool:
    """Whether ``no_proxy`` exempts ``host:port`` from the proxy.

    :param host: the base URL's host.
    :param port: its port.
    :param no_proxy: the variable's value.
    """
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
    """The route of every call of a client of ``config``, by the rule of this module.

    :param config: the base URL and the ``proxy`` setting.
    :param environ: the environment (``os.environ`` by default).
    """
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
    try:
        proxy_parts = urlsplit(proxy)
        proxy_parts.port  # noqa: B018 (raises ValueError on a malformed port)
    except ValueError:
        proxy_parts = None
    if proxy_parts is None or not proxy_parts.hostname:
        return Route(proxy, f"{variable} names no usable proxy address; {direct}")
    if proxy_parts.scheme.lower() not in PROXY_SCHEMES:
        return Route(
            proxy,
            f"{variable} names a {proxy_parts.scheme}:// proxy; only http:// and https:// "
            f"proxies are supported; {direct}",
        )
    return Route(proxy)
