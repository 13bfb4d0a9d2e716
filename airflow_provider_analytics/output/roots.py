"""Where the package may write: a rendered destination checked before anything is written.

A destination is rendered from a template and a partition value can come from ``params``, so
both are checked before anything is written: no partition value may add a path level or
climb out of one, and a rendered destination is checked for where it really leads.

A destination is read the way ``ObjectStoragePath`` and fsspec will read it, and every
reading must pass: ``//etc/x`` is ``/etc/x``, ``file:/etc/x`` and ``file:etc/x`` are
``/etc/x``, a relative path is under the worker's working directory, ``~`` is the worker's
home, and percent-escapes are read both as they are (fsspec's local files) and decoded (other
readers). No reading may hold a ``.`` or ``..`` segment. A deployment names the roots
destinations may lie under (``operators.paths.deployment_roots``); without any, no local
destination may lie under a system directory: writes there are never analytics output, and a
worker running as root (as in many container images) would not be stopped by the operating
system.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from airflow.sdk import ObjectStoragePath

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import (
    AnalyticsConfigurationError,
    AnalyticsValidationError,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

SYSTEM_DIRECTORIES = frozenset(
    {"bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "proc", "root", "sbin", "sys", "usr"}
)
"""Top-level local directories no destination may point into (when no roots are named)."""

LOCAL_SCHEMES = frozenset({"", "file", "local"})
"""Schemes fsspec writes to the worker's own disk with (``""``: a bare path)."""

CONFIG_SECTION, CONFIG_OPTION = "analytics", "allowed_destinations"

PARTITION_RULE = (
    "must be a non-empty value without '/', '\\', '..', '=' or control characters "
    "(it names a storage partition)"
)
_PARTITION_UNSAFE = re.compile(r"[/\\=\x00-\x1f\x7f-\x9f]|\.\.")
_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*):")
_SLASHES = re.compile(r"/{2,}")
_CLIMB_RULE = (
    "must not contain '.' or '..' path segments or backslashes, also when percent-escapes "
    "are decoded (a rendered destination may not climb out of its prefix)"
)


@dataclass(frozen=True)
class Location:
    """Where a destination (or an allowed root) leads, in one reading.

    :param scheme: ``file`` for every local form, else the URI's scheme in lower case.
    :param bucket: the bucket (the URI's authority without a connection id); ``""`` locally.
    :param path: the absolute path below the bucket, ``/``-separated.
    :param conn_id: the Airflow connection named before ``@``, if any.
    """

    scheme: str
    bucket: str
    path: str
    conn_id: str | None = None

    def __str__(self) -> str:
        conn = f"{self.conn_id}@" if self.conn_id else ""
        return f"{self.scheme}://{conn}{self.bucket}{self.path}"

    def within(self, root: Location) -> bool:
        """Whether this location is ``root`` or below it (a root's path ends with ``/``; a
        root naming a connection id holds only locations written through that connection)."""
        if (self.scheme, self.bucket) != (root.scheme, root.bucket):
            return False
        if root.conn_id is not None and self.conn_id != root.conn_id:
            return False
        return self.path == root.path.rstrip("/") or self.path.startswith(root.path)


RootList = tuple[str, tuple[Location, ...]]
"""Allowed roots and where they were named (shown when a destination is refused)."""


def _split(text: str) -> tuple[str, str | None, str, str]:
    """``(scheme, conn_id, bucket, rest)``: a local destination keeps its path in ``rest``."""
    match = _SCHEME.match(text)
    scheme = match["scheme"].lower() if match else ""
    rest = text[match.end() :] if match else text
    if scheme in LOCAL_SCHEMES:
        return ("file" if match else ""), None, "", rest
    if not rest.startswith("//"):
        rules.fail("destination", f"must be {scheme}://<bucket>/<path>")
    authority, slash, path = rest[2:].partition("/")
    conn_id, at, bucket = authority.rpartition("@")
    if not bucket:
        rules.fail("destination", f"must be {scheme}://<bucket>/<path>")
    return scheme, (conn_id if at else None), bucket, slash + path


def _absolute(path: str) -> str:
    """A local path as fsspec opens it: ``~`` expanded, a relative path under the working
    directory."""
    if path.startswith("~"):
        path = os.path.expanduser(path)
    if not path.startswith("/"):
        path = posixpath.join(os.getcwd(), path)
    return path


def _local_readings(destination: str, rest: str, scheme: str | None) -> list[str]:
    """The paths a local destination can be read as: the URI's own path, and the path
    ``ObjectStoragePath`` gives it."""
    if scheme and rest.startswith("//"):
        authority, _, tail = rest[2:].partition("/")
        if authority:
            rules.fail(
                "destination",
                f"must not name a host: fsspec reads {scheme}://<name>/... as a path relative "
                f"to the worker's working directory; write {scheme}:///<absolute path>",
            )
        own = "/" + tail
    elif scheme and not rest.startswith("/"):
        own = "/" + rest  # file:x is /x to ObjectStoragePath
    else:
        own = rest
    try:
        storage = ObjectStoragePath(destination).path
    except Exception as exc:  # whatever the path library refuses
        rules.fail("destination", f"cannot be read as a local path ({type(exc).__name__})")
    return [_absolute(own), _absolute(storage)]


def _readings(destination: str) -> list[Location]:
    """Every reading of ``destination``: as written and percent-decoded, slashes as they
    are and collapsed (an object key keeps ``//``; a local path does not)."""
    scheme, conn_id, bucket, rest = _split(destination)
    if scheme in LOCAL_SCHEMES:
        written = _SCHEME.match(destination)
        paths = _local_readings(destination, rest, written["scheme"] if written else None)
        scheme = "file"
    else:
        paths = [rest or "/"]
    found: dict[Location, None] = {}
    for path in paths:
        for variant in (path, unquote(path)):
            segments = variant.split("/")
            if "\\" in variant or any(part in (".", "..") for part in segments):
                rules.fail("destination", _CLIMB_RULE)
            collapsed = _SLASHES.sub("/", variant)
            kept = (collapsed,) if scheme == "file" else (variant, collapsed)
            for one in kept:
                found[Location(scheme, bucket, one, conn_id)] = None
    return list(found)


def allowed_roots(value: Any, origin: str) -> tuple[Location, ...]:
    """The roots named by ``value``: a comma-separated text (or a list) of URIs such as
    ``file:///data/, s3://analytics-bucket/``.

    :param value: the option's or the extra's value.
    :param origin: where it was named, for messages.
    :raises AnalyticsConfigurationError: a root is not an absolute URI or path, or climbs.
    """
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise AnalyticsConfigurationError(
            f"{origin}: must be a comma-separated list of URIs (got {value!r})"
        )
    roots: list[Location] = []
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        try:
            scheme, conn_id, bucket, rest = _split(text)
            if scheme in LOCAL_SCHEMES:
                rest = rest[2:] if rest.startswith("//") else rest
                scheme = "file"
            path = _SLASHES.sub("/", rest or "/")
            segments = path.split("/")
            if not path.startswith("/") or any(part in (".", "..") for part in segments):
                rules.fail("destination", "must be an absolute URI or path without '.' or '..'")
        except AnalyticsValidationError as exc:
            raise AnalyticsConfigurationError(
                f"{origin}: {text!r} is not a usable root: {exc.rule}"
            ) from None
        roots.append(Location(scheme, bucket, path.rstrip("/") + "/", conn_id))
    return tuple(roots)


def partition_value(value: object, field: str) -> str:
    """A Hive partition value that stays one path level: checked, returned unchanged.

    :param value: the rendered value.
    :param field: the argument it came from, for the message.
    """
    if (
        not isinstance(value, str)
        or not value.strip()
        or value != value.strip()
        or _PARTITION_UNSAFE.search(value)
    ):
        rules.fail(field, PARTITION_RULE, value)
    return value


def checked_destination(destination: object, allowed: Sequence[RootList] = ()) -> str:
    """A rendered destination that leads, however it is read, under an allowed root (or,
    when none is named, not into a system directory); returned unchanged.

    :param destination: the rendered URI or local path.
    :param allowed: roots named by the deployment (``operators.paths.deployment_roots``).
    :raises AnalyticsValidationError: naming ``destination``, before any request.
    """
    if not isinstance(destination, str) or not destination:
        rules.fail("destination", "must be an object URI or a prefix ending in '/'", destination)
    rules.sendable(destination, "destination")
    if "?" in destination or "#" in destination:
        rules.fail(
            "destination",
            "must not contain '?' or '#' (some readers take them for a query or a fragment, "
            "fsspec for part of the name)",
            destination,
        )
    try:
        readings = _readings(destination)
    except AnalyticsValidationError as exc:
        raise AnalyticsValidationError("destination", exc.rule, destination) from None
    for origin, roots in allowed:
        for reading in readings:
            if not any(reading.within(root) for root in roots):
                shown = ", ".join(str(root) for root in roots) or "none"
                rules.fail(
                    "destination",
                    f"must lie under a root allowed by {origin} ({shown}); it leads to {reading}",
                    destination,
                )
    if not allowed:
        for reading in readings:
            top = reading.path.split("/")[1] if reading.scheme == "file" else ""
            if top in SYSTEM_DIRECTORIES:
                rules.fail(
                    "destination",
                    f"must not be under the system directory /{top} (it leads to "
                    f"{reading.path}); write to a data directory or to object storage, or "
                    f"name the allowed roots in [{CONFIG_SECTION}] {CONFIG_OPTION}",
                    destination,
                )
    return destination
