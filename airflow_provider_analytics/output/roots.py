"""Where the package may write, read its own files, or delete: the one gate for every location.

A destination, a staging folder, its records and an Iceberg table's data files all pass
:func:`checked_destination`, which reads a location every way ``ObjectStoragePath`` and fsspec
may read it; on the worker's disk staging is a real folder at every level the package made and
its own files are opened without following a link (``docs/security.md`` says why and how).
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final
from urllib.parse import unquote, urlsplit

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import (
    AnalyticsConfigurationError,
    AnalyticsValidationError,
    ShardStagingError,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_analytics.output.storage import StoragePath

SYSTEM_DIRECTORIES = frozenset(
    {"bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "proc", "root", "sbin", "sys", "usr"}
)
LOCAL_SCHEMES = frozenset({"", "file", "local"})  # "": a bare path
CONFIG_SECTION, CONFIG_OPTION = "analytics", "allowed_destinations"

PARTITION_RULE = (
    "must be a non-empty value without '/', '\\', '..', '=' or control characters "
    "(it names a storage partition)"
)
_PARTITION_UNSAFE = re.compile(r"[/\\=\x00-\x1f\x7f-\x9f]|\.\.")
_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*):")
_SLASHES = re.compile(r"/{2,}")
_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/]*:[^/]*@")  # scheme://user:password@
_CLIMB_RULE = (
    "must not contain '.' or '..' path segments or backslashes, also when percent-escapes "
    "are decoded (a rendered destination may not climb out of its prefix)"
)


@dataclass(frozen=True)
class Location:
    """Where a destination (or an allowed root) leads, in one reading (``file`` and ``""``
    as bucket for every local form)."""

    scheme: str
    bucket: str
    path: str
    conn_id: str | None = None

    def __str__(self) -> str:
        conn = f"{self.conn_id}@" if self.conn_id else ""
        return f"{self.scheme}://{conn}{self.bucket}{self.path}"

    def within(self, root: Location, *, prefix: bool) -> bool:
        """Whether this is below ``root``, or is ``root`` read as a ``prefix`` (an object named
        as the root has its siblings, a report's other tables, beside it); a root naming a
        connection id holds only locations written through that connection."""
        if (self.scheme, self.bucket) != (root.scheme, root.bucket):
            return False
        if root.conn_id is not None and self.conn_id != root.conn_id:
            return False
        return self.path.startswith(root.path) or (prefix and self.path == root.path.rstrip("/"))


RootList = tuple[str, tuple[Location, ...]]  # allowed roots and where they were named


def _split(text: str) -> tuple[str, str | None, str, str]:
    """``(scheme, conn_id, bucket, rest)``: a local destination keeps its path in ``rest``."""
    match = _SCHEME.match(text)
    scheme = match["scheme"].lower() if match else ""
    rest = text[match.end() :] if match else text
    if scheme in LOCAL_SCHEMES:
        return scheme, None, "", rest
    if not rest.startswith("//"):
        rules.fail("destination", f"must be {scheme}://<bucket>/<path>")
    authority, slash, path = rest[2:].partition("/")
    conn_id, at, bucket = authority.rpartition("@")
    if not bucket:
        rules.fail("destination", f"must be {scheme}://<bucket>/<path>")
    return scheme, (conn_id if at else None), bucket, slash + path


def _absolute(path: str) -> str:
    """A local path as fsspec opens it (``~`` expanded, relative to the working directory)."""
    if path.startswith("~"):
        path = os.path.expanduser(path)
    if not path.startswith("/"):
        path = posixpath.join(os.getcwd(), path)
    return path


def _local_readings(destination: str, rest: str, scheme: str | None) -> list[str]:
    """The URI's own path and the one ``ObjectStoragePath`` gives it, each as written and
    with the links on the worker's disk resolved (a link under a root may lead out of it)."""
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
        rules.fail(
            "destination",
            f"must be {scheme}:///<absolute path>: {scheme}:<path> is read from the disk's "
            "root by Airflow's object storage and from the working directory by others",
        )
    else:
        own = rest
    from airflow.sdk import ObjectStoragePath

    try:
        storage = ObjectStoragePath(destination).path
    except Exception as exc:  # whatever the path library refuses
        rules.fail("destination", f"cannot be read as a local path ({type(exc).__name__})")
    paths = [_absolute(own), _absolute(storage)]
    return paths + [os.path.realpath(path) for path in paths]  # through the links on the disk


def _readings(destination: str) -> list[Location]:
    """Every reading of ``destination``: as written and percent-decoded, slashes as they
    are and collapsed (an object key keeps ``//``; a local path does not)."""
    scheme, conn_id, bucket, rest = _split(destination)
    if scheme in LOCAL_SCHEMES:
        paths = _local_readings(destination, rest, scheme or None)
        scheme = "file"
    else:
        try:  # what ObjectStoragePath will do with it (an IPv6-like '[', NFKC characters)
            urlsplit(destination)
        except ValueError as error:
            rules.fail("destination", f"cannot be read as a URL ({error})")
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
    """The roots named by ``value`` (comma-separated text or a list of URIs), ``origin``
    saying where, for messages."""
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
        if _PASSWORD.match(text):  # not shown: refusals of destinations name the roots
            raise AnalyticsConfigurationError(
                f"{origin}: a root must not carry a password (user:password@); name a connection"
            )
        try:
            scheme, conn_id, bucket, rest = _split(text)
            if scheme in LOCAL_SCHEMES:
                rest = rest[2:] if rest.startswith("//") else rest
                scheme = "file"
                if not rest:  # file: or file:// (a template that rendered empty?)
                    rules.fail("destination", "must name a folder, such as file:///data/")
            path = _SLASHES.sub("/", rest or "/")
            segments = path.split("/")
            if not path.startswith("/") or any(part in (".", "..") for part in segments):
                rules.fail("destination", "must be an absolute URI or path without '.' or '..'")
        except AnalyticsValidationError as exc:
            raise AnalyticsConfigurationError(
                f"{origin}: {text!r} is not a usable root: {exc.rule}"
            ) from None
        roots.append(Location(scheme, bucket, path.rstrip("/") + "/", conn_id))
        if scheme == "file":  # a root reached through a link holds where the link leads
            roots.append(Location(scheme, bucket, os.path.realpath(path).rstrip("/") + "/"))
    return tuple(dict.fromkeys(roots))


def partition_value(value: object, field: str) -> str:
    """A Hive partition value that stays one path level: checked, returned unchanged."""
    if (
        not isinstance(value, str)
        or not value.strip()
        or value != value.strip()
        or _PARTITION_UNSAFE.search(value)
    ):
        rules.fail(field, PARTITION_RULE, value)
    return value


def checked_destination(
    destination: object, allowed: Sequence[RootList] = (), field: str = "destination"
) -> str:
    """A rendered destination that leads, however it is read, under an allowed root (or,
    when none is named, not into a system directory); returned unchanged, or refused naming
    ``field`` (``staging``, ``iceberg data file``)."""
    if not isinstance(destination, str) or not destination:
        rules.fail(field, "must be an object URI or a prefix ending in '/'", destination)
    rules.sendable(destination, field)
    if _PASSWORD.match(destination.strip()):  # the value is not shown: it holds a secret
        rules.fail(
            field,
            "must not carry a password (user:password@); name an Airflow connection "
            "instead: <scheme>://<conn_id>@<bucket>/<path>",
        )
    if destination != destination.strip():  # " s3://b/x" is a relative local path
        rules.fail(field, "must not begin or end with whitespace", destination)
    if "?" in destination or "#" in destination:
        rules.fail(
            field,
            "must not contain '?' or '#' (some readers take them for a query or a fragment, "
            "fsspec for part of the name)",
            destination,
        )
    try:
        readings = _readings(destination)
    except AnalyticsValidationError as exc:
        raise AnalyticsValidationError(field, exc.rule, destination) from None
    for origin, roots in allowed:
        prefix = destination.endswith("/")
        for reading in readings:
            if not any(reading.within(root, prefix=prefix) for root in roots):
                shown = ", ".join(str(root) for root in roots) or "none"
                rules.fail(
                    field,
                    f"must lie under a root allowed by {origin} ({shown}); it leads to {reading}",
                    destination,
                )
    if not allowed:
        for reading in readings:
            top = reading.path.split("/")[1] if reading.scheme == "file" else ""
            if top in SYSTEM_DIRECTORIES:
                rules.fail(
                    field,
                    f"must not be under the system directory /{top} (it leads to "
                    f"{reading.path}); write to a data directory or to object storage, or "
                    f"name the allowed roots in [{CONFIG_SECTION}] {CONFIG_OPTION}",
                    destination,
                )
    return destination


def local_path(path: StoragePath | str) -> str | None:
    """The path on the worker's disk of a location, ``None`` for object storage."""
    if isinstance(path, str):
        scheme, _, _, rest = _split(path)
        if scheme not in LOCAL_SCHEMES:
            return None
        return _absolute(rest[2:] if scheme and rest.startswith("//") else rest)
    if getattr(path, "protocol", "") in LOCAL_SCHEMES:
        return _absolute(str(getattr(path, "path", path)))
    return None


def open_own(path: StoragePath) -> IO[bytes]:
    """A file the package wrote itself (a record, a part) opened for reading: on the worker's
    disk never through a link and only when it is a plain file (a named pipe would block)."""
    local = local_path(path)
    if local is None:
        return path.open("rb")
    try:
        descriptor = os.open(local, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        if os.path.islink(local):  # O_NOFOLLOW refused it (a missing file is no link)
            raise ShardStagingError(
                f"{local}: is a symbolic link where the package keeps its own file; the "
                "package does not follow links there: remove it, then run again"
            ) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ShardStagingError(
                f"{local}: is not a plain file (a pipe, a device or a folder) where the "
                "package keeps its own file: remove it, then run again"
            )
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


PRIVATE_FOLDER = "analytics-{uid}"  # in the temporary space: the default staging


def private_folder() -> Path:
    """The worker's private folder, made 0700 when missing and checked at each use (a folder,
    not a link, this user's, closed to others); fixed, so a retry finds what was staged."""
    uid = os.geteuid()
    folder = Path(tempfile.gettempdir()) / PRIVATE_FOLDER.format(uid=uid)
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = os.lstat(folder)
    problem = None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        problem = "is not a folder (a symbolic link, or a file)"
    elif info.st_uid != uid:
        problem = f"belongs to user id {info.st_uid}, not to this worker's ({uid})"
    elif info.st_mode & 0o077:
        problem = f"may be entered by other users (mode {stat.filemode(info.st_mode)})"
    if problem:
        raise ShardStagingError(
            f"{folder}: the worker's private staging folder {problem}; the package keeps its "
            "staging only in a folder of its own: remove it (it is made again), or give "
            "`staging`"
        )
    return folder


def staging_folder(location: str, allowed: Sequence[RootList], *, own_from: str) -> Any:
    """A staging folder checked against the roots, and on the worker's disk made a real
    folder at every level from ``own_from`` (the first level the package makes) down, so that
    clearing it deletes nothing elsewhere."""
    from airflow.sdk import ObjectStoragePath

    checked = checked_destination(location, allowed, "staging")
    local, top = local_path(checked), local_path(own_from)
    if local is not None and top is not None:
        level = top.rstrip("/")
        os.makedirs(os.path.dirname(level), exist_ok=True)
        for name in local.removeprefix(level).split("/"):  # the first is "": the top itself
            level = f"{level}/{name}" if name else level
            with contextlib.suppress(FileExistsError):
                os.mkdir(level)
            info = os.lstat(level)
            if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
                raise ShardStagingError(
                    f"{level}: is a symbolic link or not a folder where the package keeps its "
                    "staging; the package does not follow links where it deletes: remove it, "
                    "then run again"
                )
    return ObjectStoragePath(checked)


ROOTS_EXTRA: Final = "allowed_destinations"  # the connection extra


def deployment_roots(connection_roots: str | list[str] | None = None) -> list[RootList]:
    """The roots a deployment allows destinations under: the Airflow option and the
    connection extra ``allowed_destinations``, each a bound of its own."""
    from airflow.sdk import conf

    lists: list[RootList] = []
    option = conf.get(CONFIG_SECTION, CONFIG_OPTION, fallback=None)
    if option and option.strip():
        origin = f"[{CONFIG_SECTION}] {CONFIG_OPTION}"
        lists.append((origin, allowed_roots(option, origin)))
    if connection_roots:
        origin = f"the connection extra {ROOTS_EXTRA}"
        lists.append((origin, allowed_roots(connection_roots, origin)))
    return lists
