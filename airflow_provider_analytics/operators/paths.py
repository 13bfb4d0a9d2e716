"""Output locations: a full object URI, or a prefix that gets the Hive-style default layout.

A destination is rendered from a template and a partition value can come from ``params``, so
both are checked before anything is written: no partition value may add a path level or
climb out of one, no rendered destination may hold a ``.`` or ``..`` segment, and no local
destination may lie under a system directory. Writes there are never analytics output, and
a worker running as root (as in many container images) would not be stopped by the
operating system.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from airflow.sdk import ObjectStoragePath

from airflow_provider_analytics.core import rules

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

SYSTEM_DIRECTORIES = frozenset(
    {"bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "proc", "root", "sbin", "sys", "usr"}
)
"""Top-level local directories no destination may point into."""

PARTITION_RULE = (
    "must be a non-empty value without '/', '\\', '..', '=' or control characters "
    "(it names a storage partition)"
)
_PARTITION_UNSAFE = re.compile(r"[/\\=\x00-\x1f\x7f-\x9f]|\.\.")
_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")


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


def checked_destination(destination: object) -> str:
    """A rendered destination that cannot climb out of its prefix or into a system directory.

    :param destination: the rendered URI or local path.
    """
    if not isinstance(destination, str) or not destination:
        rules.fail("destination", "must be an object URI or a prefix ending in '/'", destination)
    rules.sendable(destination, "destination")
    scheme = _SCHEME.match(destination)
    path = destination[scheme.end() :] if scheme else destination
    if "\\" in path or any(segment in (".", "..") for segment in path.split("/")):
        rules.fail(
            "destination",
            "must not contain '.' or '..' path segments or backslashes (a rendered "
            "destination may not climb out of its prefix)",
            destination,
        )
    local = scheme is None or scheme["scheme"].lower() in ("file", "local")
    parts = PurePosixPath(path).parts
    if local and len(parts) > 1 and parts[0] == "/" and parts[1] in SYSTEM_DIRECTORIES:
        rules.fail(
            "destination",
            f"must not be under the system directory /{parts[1]}; write to a data directory "
            "or to object storage",
            destination,
        )
    return destination


def output_path(
    destination: str, partitions: Mapping[str, str], file_name: str
) -> ObjectStoragePath:
    """The object to write.

    A ``destination`` ending in ``/`` is a prefix: the partitions are appended Hive-style
    (``key=value/``) followed by ``file_name``, e.g. ``s3://aws@bucket/analytics/`` becomes
    ``s3://aws@bucket/analytics/cohort=vip/dt=2024-01-05/users.parquet``. Anything else is the
    object itself, used as given (templated by the operator).

    :param destination: rendered URI or local path.
    :param partitions: Hive partition keys and values, in order.
    :param file_name: the object's name under a prefix.
    :raises AnalyticsValidationError: naming ``destination`` or the partition at fault.
    """
    destination = checked_destination(destination)
    if destination.endswith("/"):
        layout = "".join(
            f"{key}={partition_value(value, key)}/" for key, value in partitions.items()
        )
        destination = f"{destination}{layout}{file_name}"
    return ObjectStoragePath(destination)


def table_paths(
    destination: str, names: Sequence[str], partitions: Mapping[str, str]
) -> dict[str, ObjectStoragePath]:
    """The objects of a report's tables, one table per grain, the first being the main one.

    Under a prefix each table gets a directory of its own, so that a directory is one table for
    DuckDB, pyarrow datasets and warehouses: ``.../checkout/`` becomes
    ``.../checkout/funnel/dt=2024-01-05/funnel.parquet``,
    ``.../checkout/funnel_totals/dt=2024-01-05/funnel_totals.parquet``, ... A full object URI
    is the main table's; the others are its siblings whose names end the way the table names
    do (``funnel.parquet`` -> ``funnel_totals.parquet``).

    :param destination: rendered URI or local path.
    :param names: the tables' names, main table first.
    :param partitions: Hive partition keys and values, in order.
    """
    main_name = names[0]
    if destination.endswith("/"):
        return {
            name: output_path(f"{destination}{name}/", partitions, f"{name}.parquet")
            for name in names
        }
    main = output_path(destination, partitions, f"{main_name}.parquet")
    stem, dot, extension = main.name.partition(".")
    return {
        name: main
        if name == main_name
        else main.parent / f"{stem}{name.removeprefix(main_name)}{dot}{extension}"
        for name in names
    }
