"""Output locations: a full object URI, or a prefix that gets the Hive-style default layout."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow.sdk import ObjectStoragePath

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


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
    """
    if not destination:
        raise ValueError("destination: must be an object URI or a prefix ending in '/'")
    if destination.endswith("/"):
        layout = "".join(f"{key}={value}/" for key, value in partitions.items())
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
