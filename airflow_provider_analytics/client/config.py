"""Connection settings of the client, declared once (:class:`ClientConfig`): each setting's
type, rule, default, connection form field and documentation row.

Every numeric setting is a finite number in its range, never a bool; read from a connection it
may also be text (``"4"``, ``"2.5"``): Airflow's URI form, the command line and several secrets
backends hand every extra over as text.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import sys
from contextvars import ContextVar
from typing import TYPE_CHECKING, Annotated, Any, Final
from urllib.parse import SplitResult, unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError, model_validator

from airflow_provider_analytics.client.throttle import DEFAULT_MAX_CONCURRENT_CALLS
from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import (
    AnalyticsConfigurationError,
    AnalyticsValidationError,
    bounded_repr,
)
from airflow_provider_analytics.core.progress import DEFAULT_PROGRESS_INTERVAL
from airflow_provider_analytics.core.redaction import Secret
from airflow_provider_analytics.core.version import __version__
from airflow_provider_analytics.provider_info import APP_KEY_EXTRA

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from pydantic.fields import FieldInfo

_READING: ContextVar[str | None] = ContextVar("analytics_connection_read", default=None)
"""The id of the Airflow connection being read, while its values are validated."""
_SECRET_FIELDS = ("token", "app_key", "xtoken")
_PREFIX_SEGMENT = re.compile(r"[A-Za-z0-9._~-]+")
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")
"""Bytes a header, a URL or a catalog property must not hold (C0 controls and DEL)."""
# A header value travels as Latin-1: printable ASCII and printable Latin-1 only, no C0/C1
# controls (which could split a header) and nothing that Latin-1 cannot encode.
_HEADER_VALUE = re.compile(r"[\x20-\x7e\xa0-\xff]+")
_NUMBER_TEXT = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", re.ASCII)
_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1 or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _split_userinfo(url: str) -> tuple[str, str, str]:
    """``scheme://``, the userinfo, and the rest of a URL, split where ``urlsplit`` splits
    them (the first ``://``, the last ``@`` before the path), also for a malformed URL."""
    scheme, separator, tail = url.partition("://")
    authority, slash, path = tail.partition("/")
    userinfo, _, host = authority.rpartition("@")
    return scheme + separator, userinfo, host + slash + path


def _proxy_password(url: str) -> str | None:
    """The password of a proxy URL, also when the URL is malformed (``urlsplit`` refuses a
    broken host, ``[proxy:3128``, after the password is written)."""
    try:
        return urlsplit(url).password
    except ValueError:
        return _split_userinfo(url)[1].partition(":")[2] or None


def shown_proxy(url: str) -> str:
    """A proxy URL fit to show: whatever may be its password, from the first ``:`` of the
    userinfo to the last ``@``, replaced by ``***`` (a password holding a ``/``, which URL
    readers take for the path's start, is masked too)."""
    scheme, separator, tail = url.partition("://")
    if not separator:  # "user:pw@proxy:3128", "http:/user:pw@...": all before the @ goes
        scheme, tail = "", url
    userinfo, at, rest = tail.rpartition("@")
    if not at:
        return url
    if not separator or ":" not in userinfo:
        return f"{scheme}***@{rest}"
    return f"{scheme}{separator}{userinfo.partition(':')[0]}:***@{rest}"


def url_secrets(url: str) -> list[str]:
    """The password of a URL (a proxy's, a catalog's), as written and percent-decoded, for
    redaction; also when the URL is malformed."""
    password = _proxy_password(url)
    return [password, unquote(password)] if password else []


class _Refused(AnalyticsConfigurationError):
    """A rule broken by a setting (a ``ValueError``, so pydantic collects it); ``field`` names
    the setting when the check spans several, ``echo`` whether the value may be shown."""

    def __init__(self, rule: str, field: str | None = None, *, echo: bool = True) -> None:
        super().__init__(rule)
        self.field = field
        self.echo = echo


def _from_connection() -> bool:
    return _READING.get() is not None


MOST_SECONDS: Final = 30 * 86_400
"""The longest time a setting may give (a timeout, a pause): 30 days. The OS refuses a wait of
~9.2e9 s mid-call with an ``OverflowError``."""

MOST_COUNT: Final = 1000
"""The most a count may be (attempts, calls at once, pooled connections): a backoff doubled past
~1,000 attempts overflows a float, and a pool of 10**12 connections is filled one by one."""


def _number(whole: bool, low: float, *, above: bool) -> Callable[[Any], Any]:
    bound = f"> {low:g}" if above else f">= {low:g}"
    most = f" and at most {MOST_COUNT:,}" if whole else f" and at most {MOST_SECONDS:,} (30 days)"
    rule = (
        f"must be an integer {bound}{most}" if whole else f"must be a finite number {bound}{most}"
    )

    def check(value: Any) -> Any:
        if _from_connection():
            if isinstance(value, str) and _NUMBER_TEXT.fullmatch(value.strip()):
                value = float(value)
            if whole and isinstance(value, float) and value.is_integer():
                value = int(value)
        if not whole and isinstance(value, int) and abs(value) > sys.float_info.max:
            value = math.inf  # an int no float can hold
        ok = (
            isinstance(value, int if whole else int | float)
            and not isinstance(value, bool)
            and value <= (MOST_COUNT if whole else MOST_SECONDS)  # and finite
            and (value > low if above else value >= low)
        )
        if not ok:
            raise _Refused(rule)
        return value if whole else float(value)

    return check


def _flag(value: Any) -> bool:
    if _from_connection() and isinstance(value, str | int) and not isinstance(value, bool):
        text = str(value).strip().lower()
        if text in _TRUE | _FALSE:
            return text in _TRUE
    if not isinstance(value, bool):
        raise _Refused("must be true or false")
    return value


def _optional(check: Callable[[Any], Any]) -> PlainValidator:
    """``check`` for a setting that may be unset: ``None`` and ``""`` both read as ``None``."""
    return PlainValidator(lambda value: None if value is None or value == "" else check(value))


def _secret(value: Any) -> Secret:
    if not isinstance(value, str):
        raise _Refused("must be a string or None", echo=False)
    if not _HEADER_VALUE.fullmatch(value) or value != value.strip():
        raise _Refused(
            "must be printable Latin-1 characters (no control characters, no characters "
            "beyond Latin-1) without surrounding whitespace: it is sent as an HTTP header",
            echo=False,
        )
    return Secret(value)


def _verify(value: Any) -> bool | str:
    if isinstance(value, bool):
        return value
    if _from_connection() and str(value).strip().lower() in _TRUE | _FALSE:
        return _flag(value)
    if not isinstance(value, str) or not value:
        raise _Refused("must be True, False or the path of a CA bundle")
    if CONTROL_CHARACTERS.search(value) or not os.path.exists(value):
        raise _Refused(
            "names no CA bundle file or directory on this machine; give the path of a PEM "
            "bundle readable by the worker, or True to use the default bundle"
        )
    return value


def _prefix(value: Any) -> str:
    segment = value.strip("/") if isinstance(value, str) else None
    if segment is None or (segment and not _PREFIX_SEGMENT.fullmatch(segment)):
        raise _Refused('must be "" or one path segment such as "/svc"')
    return "/" + segment if segment else ""


def http_url(value: Any, *, any_scheme: bool = False) -> SplitResult | None:
    """``value`` split, if it is an ``http://`` or ``https://`` (or ``any_scheme``) URL with a
    host and a readable port: the one reading of the base URL and of every proxy address."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (raises ValueError on a malformed port)
    except (TypeError, ValueError, AttributeError):
        return None
    scheme_ok = any_scheme or parts.scheme in ("http", "https")
    # urlsplit drops tabs and newlines, and requests refuses a space in a host only when sent
    plain = isinstance(value, str) and value.isprintable() and " " not in value
    ok = plain and scheme_ok and parts.hostname
    return parts if ok else None


def _base_url(value: Any) -> str:
    rule = "must be an absolute http:// or https:// URL with a host"
    if isinstance(value, str) and "@" in value:  # (not shown: it may hold a password)
        raise _Refused(
            "must not carry credentials; put them in token, app_key and xtoken", echo=False
        )
    if isinstance(value, str) and value and "://" not in value:
        raise _Refused(
            f"{value!r} names no scheme, and none is assumed: write it as https://{value} "
            f"(or http://{value} for a platform on loopback)",
            echo=False,
        )
    parts = http_url(value)
    if parts is None:
        raise _Refused(rule)
    if parts.query or parts.fragment:
        raise _Refused("must not have a query or a fragment")
    return value


def _proxy(value: Any) -> str:
    rule = "must be the URL of an http:// or https:// proxy: http://host:port"
    if not isinstance(value, str) or CONTROL_CHARACTERS.search(value):
        raise _Refused(rule, echo=False)
    parts = http_url(value)
    if parts is None:
        raise _Refused(rule)
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise _Refused("must be a proxy's address without a path or a query", echo=False)
    return value


def _user_agent(value: Any) -> str:
    if not isinstance(value, str) or not _HEADER_VALUE.fullmatch(value) or value != value.strip():
        raise _Refused(
            "must be a non-empty string without control characters or surrounding white space, "
            "in Latin-1 (it is sent as an HTTP header)"
        )
    return value


def _zone(value: Any) -> str:
    try:  # the jobs' rule, checked where the connection is read (not at the first export)
        return rules.time_zone(value)
    except AnalyticsValidationError as error:
        raise _Refused(error.rule) from None


def _roots(value: Any) -> str | list[str]:
    if isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(v, str) for v in value)
    ):
        return value
    raise _Refused("must be text or a list of texts", echo=False)  # a root may hold a password


Seconds = Annotated[float, PlainValidator(_number(False, 0, above=True))]
Pause = Annotated[float, PlainValidator(_number(False, 0, above=False))]
Count = Annotated[int, PlainValidator(_number(True, 1, above=False))]
Flag = Annotated[bool, PlainValidator(_flag)]
MaybeFlag = Annotated[bool | None, PlainValidator(lambda v: v if v is None else _flag(v))]
Credential = Annotated[str | None, _optional(_secret)]


def _setting(
    default: Any, label: str | None, doc: str, *, shown_in_repr: bool = True, **shown: Any
) -> Any:
    """``label``: its connection form field (``None``: none); ``shown``: ``stored`` and
    ``default_text`` for the docs table, ``connection=False`` to leave it out of the connection."""
    return Field(default, title=label, description=doc, json_schema_extra=shown, repr=shown_in_repr)


class ClientConfig(BaseModel):
    """Where the platform is and how to talk to it; validated on construction (refusals are
    :class:`~airflow_provider_analytics.core.errors.AnalyticsConfigurationError` naming the
    setting). Frozen. ``ClientConfig(base_url, token=..., app_key=..., ...)``; each setting's
    meaning is in the table of the connection page, drawn from these declarations.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)

    base_url: Annotated[str, PlainValidator(_base_url)] = _setting(
        ...,
        "Base URL",
        "scheme, host and port of the platform's API, e.g. `https://analytics.example.com:4005`; "
        "a host without `https://` or `http://` is refused, not guessed",
        stored="host",
        default_text="(required)",
    )
    token: Credential = _setting(
        None,
        "Project token",
        "the project's API secret, sent as header `token`",
        stored="password",
        default_text="(required)",
    )
    app_key: Credential = _setting(
        None,
        "App key",
        "the project's `appKey` (header `appKey`), hidden in the UI and the REST API",
        default_text="(required)",
    )
    xtoken: Credential = _setting(
        None,
        "Platform xtoken",
        "the platform-wide token (header `xtoken`), needed only for account operations",
    )
    utm_prefix: Annotated[str, PlainValidator(_prefix)] = _setting(
        "/svc",
        "Ad tracking path prefix",
        "first path segment of the ad tracking paths: `/svc` as the spec writes it, `/ark` as "
        'most deployments document it, `""` for none',
    )
    connect_timeout: Seconds = _setting(10.0, "Connect timeout (s)", "seconds to open a connection")
    read_timeout: Seconds = _setting(
        60.0, "Read timeout (s)", "seconds to wait for data on ordinary calls"
    )
    export_read_timeout: Seconds = _setting(
        600.0, "Export read timeout (s)", "seconds a cohort export stream may stall"
    )
    export_deadline: Seconds = _setting(
        4 * 3600.0,
        None,
        "seconds one export attempt may take in all, however the server paces its bytes",
    )
    request_deadline: Seconds = _setting(
        600.0, None, "seconds an ordinary call may take in all, retries included"
    )
    verify: Annotated[bool | str, PlainValidator(_verify)] = _setting(
        True,
        "Verify TLS",
        "check the server's certificate; the path of a PEM bundle names the CA to trust",
    )
    max_attempts: Count = _setting(
        4, "Attempts", "tries per call for transient failures, the first included; 1 = no retry"
    )
    backoff_base: Pause = _setting(
        0.5, None, "first backoff ceiling in seconds; it doubles each attempt"
    )
    backoff_max: Pause = _setting(30.0, None, "largest backoff ceiling in seconds")
    retry_after_max: Pause = _setting(
        120.0,
        "Longest Retry-After (s)",
        "longest wait a `429`/`503` `Retry-After` is honoured for: by the call that got it, "
        "every other call of the process, and the other shards of a sharded export",
    )
    max_concurrent_calls: Count = _setting(
        DEFAULT_MAX_CONCURRENT_CALLS,
        "Calls at once",
        "most calls in flight to the platform from one process, shared by every client and "
        "thread with the same base URL; a streamed export counts until its body is read",
    )
    allow_insecure_http: Flag = _setting(
        False,
        "Allow plain http",
        "allow `http://` to a host other than loopback (the tokens cross the network in clear)",
    )
    proxy: Annotated[str | None, _optional(_proxy)] = _setting(
        None,
        "HTTPS proxy",
        "`http://host:port` of a proxy to tunnel `https://` calls through, instead of "
        "`HTTPS_PROXY`; plain `http://` never goes through a proxy",
    )
    pool_maxsize: Count = _setting(16, None, "connections kept per host (threads sharing a client)")
    user_agent: Annotated[str, PlainValidator(_user_agent)] = _setting(
        f"airflow-provider-analytics/{__version__}", None, "the `User-Agent` header"
    )
    progress_interval: Seconds = _setting(
        DEFAULT_PROGRESS_INTERVAL,
        "Progress interval (s)",
        "seconds between the progress lines of long exports and reports",
    )
    progress_bar: MaybeFlag = _setting(
        None,
        None,
        "a progress bar on stderr: `None` shows one where someone watches (a terminal or a "
        "notebook), `True`/`False` force it; Airflow tasks never show one",
        connection=False,
    )

    def __init__(self, base_url: Any = None, /, **settings: Any) -> None:
        if base_url is not None or "base_url" not in settings:
            settings["base_url"] = base_url
        try:
            super().__init__(**settings)
        except ValidationError as error:
            raise _refusal(error, type(self).__name__) from None

    @model_validator(mode="after")
    def _consistent(self) -> ClientConfig:
        parts = urlsplit(self.base_url)
        host = (parts.hostname or "").lower()
        if parts.scheme == "http" and not self.allow_insecure_http and not is_loopback(host):
            raise _Refused(
                "plain http:// would send the credentials unencrypted to a host that is not "
                "loopback; use https://, or set allow_insecure_http=True on a trusted network "
                f"(got {self.base_url!r})",
                "base_url",
                echo=False,
            )
        if self.proxy and parts.scheme == "http":
            raise _Refused(
                "plain http:// would send the credentials in clear to the proxy, which reads "
                "every plain request; a proxy is only used with an https:// base_url "
                f"(got {shown_proxy(self.proxy)!r})",
                "proxy",
                echo=False,
            )
        return self

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            yield name, (shown_proxy(value) if name == "proxy" and value else value)

    def secrets(self) -> tuple[str, ...]:
        """The non-empty secrets (token, app_key, xtoken, the proxy's password)."""
        found = [v for v in (self.token, self.app_key, self.xtoken) if v]
        return tuple(Secret(v) for v in (*found, *url_secrets(self.proxy or "")))

    @property
    def api_root(self) -> str:
        return self.base_url.rstrip("/")


class ConfiguredClient:
    """What both clients share: the configuration they are built with, checked to be one."""

    def __init__(self, config: ClientConfig) -> None:
        if not isinstance(config, ClientConfig):
            raise AnalyticsConfigurationError(
                f"{type(self).__name__} needs a ClientConfig, got {type(config).__name__}"
            )
        self._config = config

    @property
    def config(self) -> ClientConfig:
        """The configuration the client was built with (its repr masks the secrets)."""
        return self._config

    def __repr__(self) -> str:
        base_url, utm_prefix = self._config.base_url, self._config.utm_prefix
        return f"{type(self).__name__}(base_url={base_url!r}, utm_prefix={utm_prefix!r})"


def _refusal(error: ValidationError, model: str) -> AnalyticsConfigurationError:
    """The first broken rule, naming the setting (as the connection being read stores it);
    secrets never echoed, a proxy's password masked."""
    first = error.errors()[0]
    cause = (first.get("ctx") or {}).get("error")
    field = getattr(cause, "field", None) or ".".join(str(p) for p in first["loc"]) or "?"
    text = str(cause) if cause is not None else first["msg"]
    value = first.get("input")
    shown_ok = getattr(cause, "echo", True) and first["type"] != "extra_forbidden"
    if len(first["loc"]) == 1 and shown_ok and field not in _SECRET_FIELDS:  # (a typo'd secret)
        shown = shown_proxy(value) if field == "proxy" and isinstance(value, str) else value
        text += f" (got {bounded_repr(shown, 300)})"
    conn_id, extra = _READING.get(), extra_name(field)
    if conn_id is None:
        return AnalyticsConfigurationError(f"{model}.{field}: {text}")
    where = f"extra {extra!r}" + (f" ({field!r})" if extra != field else "")
    where = field if field in ("base_url", "token") else where
    return AnalyticsConfigurationError(f"connection {conn_id!r}: {where}: {text}")


class ConnectionSettings(ClientConfig):
    """What an Airflow connection of type ``analytics`` holds: the client's settings, and
    the project's timezone and the allowed destination roots, which the jobs read."""

    timezone: Annotated[str | None, _optional(_zone)] = _setting(
        None,
        "Project timezone",
        "the IANA zone (or an offset such as `+08:00`) the platform writes datetimes in",
        default_text="UTC, with a warning on exports",
    )
    allowed_destinations: Annotated[str | list[str] | None, _optional(_roots)] = _setting(
        None,
        "Allowed destinations",
        "roots that every destination must lie under, comma-separated or a JSON list, e.g. "
        "`file:///data/, s3://analytics-bucket/` (also `[analytics] allowed_destinations`)",
        shown_in_repr=False,  # a root may carry a password (refused where the roots are read)
    )

    @classmethod
    def from_connection(cls, conn: Any) -> ConnectionSettings:
        """Read an Airflow connection: host is the base URL (its scheme stated, never
        assumed), password the project token, the extras each setting under its
        :func:`extra_name` (or ``extra__analytics__<name>``; ``app_key`` and ``appKey`` are
        still read for the appKey). Extras the model does not declare are ignored.

        :param conn: the connection (``conn_id``, ``host``, ``port``, ``schema``,
            ``password``, ``extra_dejson``).
        :raises AnalyticsConfigurationError: naming the connection and the setting.
        """
        extras = connection_extras(conn)
        values: dict[str, Any] = {"base_url": _connection_url(conn, extras)}
        for name in connection_settings():
            names = (extra_name(name), name, "appKey") if name == "app_key" else (name,)
            # the documented spelling first: a connection edited in the UI keeps its older
            # spellings beside the form's field
            for key in (k for n in names for k in (n, f"extra__analytics__{n}")):
                if extras.get(key) not in (None, ""):
                    values[name] = extras[key]
                    break
        if conn.password:  # the connection's password field wins over a token extra
            values["token"] = conn.password
        values["progress_bar"] = False  # a task's progress goes to its log, in lines
        reading = _READING.set(conn.conn_id)
        try:
            return cls(**values)
        finally:
            _READING.reset(reading)


def connection_extras(conn: Any) -> dict[str, Any]:
    """The extras of an Airflow connection: a JSON object (Airflow hands over whatever JSON
    the extra holds, a list or a number too), refused by name otherwise (not echoed: an extra
    may hold secrets)."""
    try:
        extras = conn.extra_dejson or {}
        got = f"a JSON {type(extras).__name__}"
    except RecursionError:  # Airflow's json.loads, of an extra nested past Python's limit
        extras, got = None, "one nested too deeply to read"
    except ValueError:  # json.loads of an integer longer than int() reads (4,300 digits)
        extras, got = None, "one holding a number too long to read"
    if not isinstance(extras, dict):
        raise AnalyticsConfigurationError(
            f"connection {conn.conn_id!r}: extra: must be a JSON object of settings (got {got})"
        )
    return extras


def _connection_url(conn: Any, extras: Mapping[str, Any]) -> str:
    """The host, with the scheme of the schema field (or a ``scheme`` extra) and the port; a
    host naming no scheme is left so (and refused)."""
    host = (conn.host or "").strip()
    if not host:
        raise AnalyticsConfigurationError(
            f"connection {conn.conn_id!r} has no host: set it to the platform's base URL, "
            "for example https://analytics.example.com:4005"
        )
    scheme = extras.get("scheme") or conn.schema
    if "://" not in host and scheme in ("http", "https"):
        host = f"{scheme}://{host}"
    if conn.port:  # into the authority: after a path it made another path, and no port
        prefix, separator, rest = host.partition("://")
        prefix, rest = (prefix + separator, rest) if separator else ("", host)
        authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
        if not re.search(r":\d+$", authority):
            host = f"{prefix}{authority}:{conn.port}{rest[len(authority) :]}"
    return host


def connection_settings() -> dict[str, Any]:
    """The declared settings a connection holds (all but the host and the Python-only ones),
    by name, with their pydantic field info."""
    return {
        name: info
        for name, info in ConnectionSettings.model_fields.items()
        if name != "base_url" and _shown(info).get("connection", True)
    }


def _shown(info: FieldInfo) -> dict[str, Any]:
    extra = info.json_schema_extra
    return extra if isinstance(extra, dict) else {}


def extra_name(name: str) -> str:
    """The extra a setting is stored under (the appKey under :data:`APP_KEY_EXTRA`)."""
    return APP_KEY_EXTRA if name == "app_key" else name


def connection_form_fields() -> dict[str, dict[str, Any]]:
    """Airflow's ``conn-fields``: a form field per extra that has a label, its JSON type
    and default from the declaration; credentials are password fields."""
    fields: dict[str, dict[str, Any]] = {}
    for name, info in connection_settings().items():
        if info.title is None or "stored" in _shown(info):  # the host and password fields
            continue
        kind = {bool: "boolean", int: "integer", float: "number"}.get(type(info.default), "string")
        schema: dict[str, Any] = {"type": [kind, "null"]}
        if name in _SECRET_FIELDS:
            schema["format"] = "password"
        elif info.default is not None:
            schema["default"] = info.default
        fields[extra_name(name)] = {
            "label": info.title,
            "schema": schema,
            "description": info.description,
        }
    return fields


def connection_table() -> str:
    """The table of ``docs/connection.md``: every setting a connection holds, its form field,
    where it is stored, what it means and its default."""
    rows = ["| form field | stored as | meaning | default |", "|---|---|---|---|"]
    fields = ConnectionSettings.model_fields
    for name, info in {"base_url": fields["base_url"], **connection_settings()}.items():
        shown = _shown(info)
        default = shown.get("default_text") or _shown_default(info.default)
        stored = shown.get("stored") or f"extra `{extra_name(name)}`"
        label = info.title or "(extra only)"
        rows.append(f"| {label} | {stored} | {info.description} | {default} |")
    return "\n".join(rows)


def _shown_default(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"`{value:g}`" if isinstance(value, float) else f"`{value}`"
