"""Connection settings of :class:`~airflow_provider_analytics.client.api.AnalyticsClient`."""

from __future__ import annotations

import ipaddress
import math
import os
import re
from dataclasses import dataclass, fields
from typing import Any, NoReturn
from urllib.parse import unquote, urlsplit

from airflow_provider_analytics import __version__
from airflow_provider_analytics.client.throttle import DEFAULT_MAX_CONCURRENT_CALLS
from airflow_provider_analytics.core import redaction
from airflow_provider_analytics.core.errors import AnalyticsConfigurationError
from airflow_provider_analytics.core.progress import DEFAULT_PROGRESS_INTERVAL
from airflow_provider_analytics.core.redaction import Secret

_SECRET_FIELDS = ("token", "app_key", "xtoken")
_PREFIX_SEGMENT = re.compile(r"[A-Za-z0-9._~-]+")
_HEADER_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")
# A header value travels as Latin-1: printable ASCII and printable Latin-1 only, no C0/C1
# controls (which could split a header) and nothing that Latin-1 cannot encode.
_HEADER_SECRET = re.compile(r"[\x20-\x7e\xa0-\xff]+")


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1 or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def shown_proxy(url: str) -> str:
    """A proxy URL fit to show: its password, if any, replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"{parts.username}:***@{host}").geturl()


def proxy_secrets(url: str) -> list[str]:
    """The password of a proxy URL, as written and percent-decoded, for redaction."""
    password = urlsplit(url).password
    return [password, unquote(password)] if password else []


@dataclass(frozen=True, repr=False)
class ClientConfig:
    """Where the platform is and how to talk to it; validated on construction.

    :param base_url: absolute ``http(s)://host[:port][/path]`` of the platform's open API.
    :param token: project API secret, sent as header ``token`` (project operations).
    :param app_key: project key, sent as header ``appKey`` (project operations).
    :param xtoken: platform super token, sent as header ``xtoken`` (account operations).
    :param utm_prefix: first path segment of the ad tracking paths: ``/svc`` in the spec,
        ``/ark`` on many deployments, ``""`` for none.
    :param connect_timeout: seconds to establish a connection.
    :param read_timeout: seconds to wait for data on ordinary calls.
    :param export_read_timeout: seconds to wait for data on a cohort export stream.
    :param export_deadline: seconds one export attempt may take in all, however the
        server paces its bytes (a trickle cannot hold a task forever).
    :param request_deadline: seconds an ordinary call may take in all, retries included.
    :param verify: TLS verification: ``True``, ``False`` or a CA bundle path.
    :param max_attempts: attempts per operation, first try included.
    :param backoff_base: first backoff ceiling in seconds; doubles each attempt.
    :param backoff_max: largest backoff ceiling in seconds.
    :param retry_after_max: longest wait a ``Retry-After`` is honoured for, in seconds: both
        the retry of the call that got it and the hold-off of every other call to the
        platform in this process (:mod:`~airflow_provider_analytics.client.throttle`), and the
        hold-off a sharded export's record passes to its other shards
        (:mod:`~airflow_provider_analytics.export.shard_hold`).
    :param max_concurrent_calls: most calls in flight to this platform from this process at
        once, shared by every client and thread with the same ``base_url``; a streamed export
        counts until its body has been read or closed. Other calls wait their turn within
        their own deadline.
    :param allow_insecure_http: allow plain ``http://`` to a host that is not loopback.
    :param proxy: ``http://host:port`` (or ``https://``) of the proxy to tunnel ``https://``
        calls through, instead of the environment's ``HTTPS_PROXY``; plain ``http://`` never
        goes through a proxy (:mod:`~airflow_provider_analytics.client.proxies`).
    :param pool_maxsize: connections kept per host (threads sharing one client).
    :param user_agent: ``User-Agent`` header.
    :param progress_interval: seconds between the progress lines of long work (exports, and
        reports over many windows or days).
    :param progress_bar: a progress bar for long work: ``None`` (default) shows one when
        ``tqdm`` is installed (the ``progress`` extra) and someone watches (a terminal or a
        notebook); ``True`` or ``False`` force it. Airflow tasks never show one.
    """

    base_url: str
    token: str | None = None
    app_key: str | None = None
    xtoken: str | None = None
    utm_prefix: str = "/svc"
    connect_timeout: float = 10.0
    read_timeout: float = 60.0
    export_read_timeout: float = 600.0
    export_deadline: float = 4 * 3600.0
    request_deadline: float = 600.0
    verify: bool | str = True
    max_attempts: int = 4
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    retry_after_max: float = 120.0
    max_concurrent_calls: int = DEFAULT_MAX_CONCURRENT_CALLS
    allow_insecure_http: bool = False
    proxy: str | None = None
    pool_maxsize: int = 16
    user_agent: str = f"airflow-provider-analytics/{__version__}"
    progress_interval: float = DEFAULT_PROGRESS_INTERVAL
    progress_bar: bool | None = None

    def __post_init__(self) -> None:
        self._check_base_url()
        for name in _SECRET_FIELDS:
            self._check_secret(name)
            if getattr(self, name):  # shown as *** by repr, masked everywhere in the process
                object.__setattr__(self, name, Secret(getattr(self, name)))
        object.__setattr__(self, "utm_prefix", self._normalised_prefix())
        for name in (
            "connect_timeout",
            "read_timeout",
            "export_read_timeout",
            "export_deadline",
            "request_deadline",
            "progress_interval",
        ):
            self._check_number(name, minimum=0.0, inclusive=False)
        if self.progress_bar is not None and not isinstance(self.progress_bar, bool):
            self._refuse("progress_bar", "must be None, True or False", self.progress_bar)
        for name in ("backoff_base", "backoff_max", "retry_after_max"):
            self._check_number(name, minimum=0.0, inclusive=True)
        self._check_int("max_attempts", minimum=1)
        self._check_int("max_concurrent_calls", minimum=1)
        self._check_int("pool_maxsize", minimum=1)
        self._check_verify()
        if not isinstance(self.allow_insecure_http, bool):
            self._refuse("allow_insecure_http", "must be a bool")
        self._check_proxy()
        redaction.remember(self.secrets())
        if (
            not isinstance(self.user_agent, str)
            or not self.user_agent
            or _HEADER_UNSAFE.search(self.user_agent)
        ):
            self._refuse("user_agent", "must be a non-empty string without control characters")

    def __repr__(self) -> str:
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _SECRET_FIELDS:
                parts.append(f"{f.name}={'***' if value else None}")
            elif f.name == "proxy" and value:
                parts.append(f"proxy={shown_proxy(value)!r}")
            else:
                parts.append(f"{f.name}={value!r}")
        return f"ClientConfig({', '.join(parts)})"

    def secrets(self) -> tuple[str, ...]:
        """The non-empty secret values (token, app_key, xtoken and the proxy's password),
        for redaction."""
        found = [v for v in (self.token, self.app_key, self.xtoken) if v]
        if self.proxy:
            found += proxy_secrets(self.proxy)
        return tuple(found)

    @property
    def api_root(self) -> str:
        """``base_url`` without its trailing slashes; paths are appended to it."""
        return self.base_url.rstrip("/")

    def _refuse(self, name: str, rule: str, value: Any = None, *, show: bool = True) -> NoReturn:
        shown = f" (got {value!r})" if show else ""
        raise AnalyticsConfigurationError(f"ClientConfig.{name}: {rule}{shown}")

    def _check_base_url(self) -> None:
        url = self.base_url
        rule = "must be an absolute http:// or https:// URL with a host"
        if not isinstance(url, str):
            self._refuse("base_url", rule, url)
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 (raises ValueError on a malformed port)
        except ValueError:
            self._refuse("base_url", rule, url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            self._refuse("base_url", rule, url)
        if parts.username is not None or parts.password is not None:
            self._refuse(
                "base_url",
                "must not carry credentials; put them in token, app_key and xtoken",
                show=False,
            )
        if parts.query or parts.fragment:
            self._refuse("base_url", "must not have a query or a fragment", url)
        if (
            parts.scheme == "http"
            and not self.allow_insecure_http
            and not is_loopback(parts.hostname.lower())
        ):
            self._refuse(
                "base_url",
                "plain http:// would send the credentials unencrypted to a host that is not "
                "loopback; use https://, or set allow_insecure_http=True on a trusted network",
                url,
            )

    def _check_proxy(self) -> None:
        proxy = self.proxy
        if proxy is None or proxy == "":
            object.__setattr__(self, "proxy", None)
            return
        rule = "must be the URL of an http:// or https:// proxy: http://host:port"
        if not isinstance(proxy, str) or _HEADER_UNSAFE.search(proxy):
            self._refuse("proxy", rule, show=False)
        try:
            parts = urlsplit(proxy)
            parts.port  # noqa: B018 (raises ValueError on a malformed port)
        except ValueError:
            self._refuse("proxy", rule, shown_proxy(proxy))
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            self._refuse("proxy", rule, shown_proxy(proxy))
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            self._refuse("proxy", "must be a proxy's address without a path or a query", show=False)
        if urlsplit(self.base_url).scheme == "http":
            self._refuse(
                "proxy",
                "plain http:// would send the credentials in clear to the proxy, which reads "
                "every plain request; a proxy is only used with an https:// base_url",
                shown_proxy(proxy),
            )

    def _check_secret(self, name: str) -> None:
        value = getattr(self, name)
        if value is None:
            return
        if not isinstance(value, str):
            self._refuse(name, "must be a string or None", show=False)
        if value == "":
            object.__setattr__(self, name, None)
        elif not _HEADER_SECRET.fullmatch(value) or value != value.strip():
            self._refuse(
                name,
                "must be printable Latin-1 characters (no control characters, no characters "
                "beyond Latin-1) without surrounding whitespace: it is sent as an HTTP header",
                show=False,
            )

    def _check_verify(self) -> None:
        verify = self.verify
        if isinstance(verify, bool):
            return
        if not isinstance(verify, str) or not verify:
            self._refuse("verify", "must be True, False or the path of a CA bundle", verify)
        if _HEADER_UNSAFE.search(verify) or not os.path.exists(verify):
            self._refuse(
                "verify",
                "names no CA bundle file or directory on this machine; give the path of a PEM "
                "bundle readable by the worker, or True to use the default bundle",
                verify,
            )

    def _normalised_prefix(self) -> str:
        prefix = self.utm_prefix
        if not isinstance(prefix, str):
            self._refuse("utm_prefix", 'must be "" or one path segment such as "/svc"', prefix)
        segment = prefix.strip("/")
        if segment == "":
            return ""
        if not _PREFIX_SEGMENT.fullmatch(segment):
            self._refuse("utm_prefix", 'must be "" or one path segment such as "/svc"', prefix)
        return "/" + segment

    def _check_number(self, name: str, *, minimum: float, inclusive: bool) -> None:
        value = getattr(self, name)
        ok = (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and (value >= minimum if inclusive else value > minimum)
        )
        if not ok:
            bound = f">= {minimum:g}" if inclusive else f"> {minimum:g}"
            self._refuse(name, f"must be a finite number {bound}", value)

    def _check_int(self, name: str, *, minimum: int) -> None:
        value = getattr(self, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            self._refuse(name, f"must be an integer >= {minimum}", value)
