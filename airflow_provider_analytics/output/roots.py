"""Where the package may write, read its own files, or delete: the one gate for every location.

Every location the package writes or deletes passes :func:`checked_destination` against the
deployment's roots: a rendered destination, a staging folder (beside a Parquet prefix, the
``staging`` of an Iceberg export, or the worker's private folder), the records kept there (the
plan, the shards', ``hold.json``) and the data files of an Iceberg table (a run's, the
migration's). On the worker's disk two more rules hold where the package deletes or reads its
own files: a staging folder is a real folder at every level the package made (no symbolic link
leads a clean-up elsewhere, :func:`staging_folder`), and its records and parts are opened
without following a link and only when they are plain files (a named pipe would block the
export, :func:`open_own`). The default staging lies in the worker's private folder
(:func:`private_folder`): made with 0700 permissions, and checked before each use.

A destination is rendered from a template and a partition value can come from ``params``, so
both are checked before anything is written: no partition value may add a path level or
climb out of one, and a rendered destination is checked for where it really leads.

A destination is read the way ``ObjectStoragePath`` and fsspec will read it, and every
reading must pass: ``//etc/x`` is ``/etc/x``, ``file:/etc/x`` and ``file:etc/x`` are
``/etc/x``, a relative path is under the worker's working directory, ``~`` is the worker's
home, and percent-escapes are read both as they are (fsspec's local files) and decoded (other
readers). No reading may hold a ``.`` or ``..`` segment. A deployment names the roots
destinations may lie under (``output.roots.deployment_roots``); without any, no local
destination may lie under a system directory: writes there are never analytics output, and a
worker running as root (as in many container images) would not be stopped by the operating
system.
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
from urllib.parse import unquote

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
    from airflow.sdk import ObjectStoragePath

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


def checked_destination(
    destination: object, allowed: Sequence[RootList] = (), field: str = "destination"
) -> str:
    """A rendered destination that leads, however it is read, under an allowed root (or,
    when none is named, not into a system directory); returned unchanged.

    :param destination: the rendered URI or local path.
    :param allowed: roots named by the deployment (``output.roots.deployment_roots``).
    :param field: what the location is, for the refusal (``staging``, ``iceberg data file``).
    :raises AnalyticsValidationError: naming ``field``, before any request.
    """
    try:
        return _checked(destination, allowed)
    except AnalyticsValidationError as refused:
        if field == "destination":
            raise
        raise AnalyticsValidationError(field, refused.rule, destination) from None


def _checked(destination: object, allowed: Sequence[RootList]) -> str:
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


def local_path(path: StoragePath | str) -> str | None:
    """The path on the worker's disk of a location (a ``file://`` or bare path), ``None`` for
    object storage (which has no links or pipes to follow)."""
    if isinstance(path, str):
        scheme, _, _, rest = _split(path)
        if scheme not in LOCAL_SCHEMES:
            return None
        return _absolute(rest[2:] if rest.startswith("//") else rest)
    if getattr(path, "protocol", "") in ("", "file", "local"):
        return _absolute(str(getattr(path, "path", path)))
    return None


def open_own(path: StoragePath) -> IO[bytes]:
    """A file the package wrote itself (a record, a part) opened for reading: on the worker's
    disk never through a symbolic link and only when it is a plain file, so that a link to a
    named pipe cannot block the export and a link to another file cannot be read as a part.

    :raises FileNotFoundError: there is no such file.
    :raises ShardStagingError: naming the file, when it is a link or not a plain file.
    """
    local = local_path(path)
    if local is None:
        handle: IO[bytes] = path.open("rb")
        return handle
    try:
        descriptor = os.open(local, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        if isinstance(error, FileNotFoundError):
            raise
        if os.path.islink(local):
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


PRIVATE_FOLDER = "analytics-{uid}"
"""The worker's private folder in the temporary space (one per user id): the default staging."""


def private_folder() -> Path:
    """The worker's private folder in the temporary space, made with 0700 permissions when
    missing and checked at each use: a folder (not a link), owned by this user, which no other
    user may enter. Its place is fixed, so that a retry of a task on the same worker finds
    what the try before it staged.

    :raises ShardStagingError: naming the folder and what is wrong with it.
    """
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


def staging_folder(
    location: str, allowed: Sequence[RootList], *, own_from: str, field: str = "staging"
) -> Any:
    """A staging folder (parts, records, ``hold.json``), through the one gate before each use:
    ``location`` checked against the roots (:func:`checked_destination`), and on the worker's
    disk made a real folder at every level from ``own_from`` (the first level the package
    makes) down, none of them a symbolic link, so that clearing it deletes nothing elsewhere.

    :param location: the folder's URI or path, ending in ``/``.
    :param allowed: the roots the deployment allows.
    :param own_from: the first level of ``location`` the package makes (it and every level
        below it are checked).
    :param field: what the location is, for a refusal.
    :raises AnalyticsValidationError: the folder lies outside the roots.
    :raises ShardStagingError: a level of it is a link or not a folder.
    """
    from airflow.sdk import ObjectStoragePath

    checked = checked_destination(location, allowed, field)
    local, top = local_path(checked), local_path(own_from)
    if local is not None and top is not None:
        levels = [top.rstrip("/")]
        os.makedirs(os.path.dirname(levels[0]), exist_ok=True)
        for name in local.removeprefix(levels[0]).split("/"):
            if name:
                levels.append(f"{levels[-1]}/{name}")
        for level in levels:
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


ROOTS_EXTRA: Final = "allowed_destinations"
"""The connection extra naming allowed roots, like the Airflow option
``[analytics] allowed_destinations``."""


def deployment_roots(connection_roots: str | list[str] | None = None) -> list[RootList]:
    """The roots a deployment allows destinations under: the Airflow option
    ``[analytics] allowed_destinations`` and the connection extra ``allowed_destinations``.

    Each one set is a bound of its own: a destination must lie under a root of each (the
    connection cannot widen what the deployment allows, nor the other way round).

    :param connection_roots: the ``analytics`` connection's ``allowed_destinations`` (text
        or a list), as its settings read it.
    """
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
