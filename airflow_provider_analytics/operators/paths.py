"""Output locations: a full object URI, or a prefix that gets the Hive-style default layout."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow.sdk import ObjectStoragePath

if TYPE_CHECKING:
    from collections.abc import Mapping


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
