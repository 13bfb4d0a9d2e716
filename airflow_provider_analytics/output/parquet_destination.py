"""Parquet objects in object storage (any ``ObjectStoragePath``: local files, S3, GCS, ...).

Under a prefix (a destination ending in ``/``) the path carries the identity and the day,
Hive-style, so that many cohorts or reports share one prefix and a run replaces exactly its own
objects:

- a cohort: ``<prefix>cohort_code=<code>/dt=<day>/users.parquet``;
- a report: ``<prefix><table>/report_key=<key>/dt=<day>/<table>.parquet``, one folder per
  table (``funnel``, ``funnel_totals``, ...), so that a folder is one table for DuckDB, pyarrow
  datasets and warehouses, which read ``cohort_code``/``report_key`` and ``dt`` from the path.

A full object URI is used as given (templated by the user). Every object records its identity
in the Parquet file metadata (``analytics.identity``), and an object that already holds another
identity is refused by name, before any request, instead of being replaced.

A prefix written by an earlier version (``cohort=<code>/`` folders, or a report table's
``dt=<day>/`` folders without ``report_key=``) is refused by name with the move that migrates
it.

A ``number`` column is int64 while the day's values are integers and double once one is a
decimal (:mod:`~airflow_provider_analytics.export.number_rule`). Decided afresh each day, a
column could be int64 one day and double the next, and readers of the folder of days differ on
that: DuckDB takes the first file's type and rounds later decimals without a word, a pyarrow
dataset refuses the folder. So the newest earlier day's file decides
(:func:`earlier_schema`): its ``number`` columns keep their type, and a day whose data
does not fit is refused by name, naming the setting (``schema_overrides``) that changes the
type on purpose. Its columns are also what the day's ``schema_contract`` meets.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import EarlierDayUnreadableError
from airflow_provider_analytics.core.identity import (
    COHORT_COLUMN,
    COHORT_FILE,
    IDENTITY_METADATA_KEY,
    folder_name,
)
from airflow_provider_analytics.output.destination import (
    CohortFile,
    LineageTarget,
    object_target,
)
from airflow_provider_analytics.output.parquet import (
    ParquetTables,
    merge_parts,
    parquet_compression,
)
from airflow_provider_analytics.output.roots import (
    checked_destination,
    partition_value,
    staging_folder,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from airflow.sdk import ObjectStoragePath

    from airflow_provider_analytics.core.identity import Identity
    from airflow_provider_analytics.output.roots import RootList
    from airflow_provider_analytics.output.storage import StoragePath

log = logging.getLogger(__name__)

OLD_COHORT_FOLDER = "cohort"
"""The partition key an earlier version put a cohort's code under."""


def stored_identity(path: ObjectStoragePath) -> str | None:
    """The identity an existing Parquet object records, or ``None`` (no object, or an object
    written before identities were recorded)."""
    if not path.exists():
        return None
    try:
        with path.open("rb") as handle:
            metadata = pq.read_schema(handle).metadata or {}
    except (pa.ArrowException, OSError) as error:
        rules.fail(
            "destination",
            f"holds an object that is not readable Parquet ({type(error).__name__}); "
            "remove it or choose another destination",
            str(path),
        )
    value = metadata.get(IDENTITY_METADATA_KEY.encode())
    return value.decode() if value is not None else None


def earlier_schema(days: StoragePath, day: str, file_name: str) -> pa.Schema | None:
    """The columns of the newest file of a day before ``day``.

    :param days: the folder holding one ``dt=<yyyy-MM-dd>`` folder per day.
    :param day: the day being written (``yyyy-MM-dd``); it and later days are not read.
    :param file_name: the file in each day's folder (``users.parquet``).
    :return: ``None`` when no earlier day has a file (the first day decides for itself).
    """
    if not days.exists():
        return None
    earlier = sorted(
        (entry.name for entry in days.iterdir() if entry.name.startswith("dt=")),
        reverse=True,
    )
    for name in earlier:
        if name[len("dt=") :] >= day:
            continue
        source = days / name / file_name
        if not source.exists():
            continue
        try:
            with source.open("rb") as handle:
                schema = pq.read_schema(handle)
        except (pa.ArrowException, OSError) as error:
            raise EarlierDayUnreadableError(
                f"{source}: the newest earlier day's file, which decides the columns and the "
                f"types of the number columns, cannot be read as this provider's Parquet "
                f"({error}); rewrite that day (rerun it) or remove its file"
            ) from None
        log.info("the day meets the columns of %s: %s", name, schema.names)
        return schema
    return None


def output_path(
    destination: str,
    partitions: Mapping[str, str],
    file_name: str,
    allowed: Sequence[RootList] = (),
) -> ObjectStoragePath:
    """The object to write.

    A ``destination`` ending in ``/`` is a prefix: the partitions are appended Hive-style
    (``key=value/``, the value escaped as Hive escapes it: ``core.identity.hive_escape``)
    followed by ``file_name``, e.g. ``s3://aws@bucket/analytics/`` becomes
    ``s3://aws@bucket/analytics/cohort=vip/dt=2024-01-05/users.parquet``. Anything else is the
    object itself, used as given (templated by the operator).

    :param destination: rendered URI or local path.
    :param partitions: Hive partition keys and values, in order.
    :param file_name: the object's name under a prefix.
    :param allowed: roots named by the deployment
        (:func:`~airflow_provider_analytics.output.roots.deployment_roots`).
    :raises AnalyticsValidationError: naming ``destination`` or the partition at fault.
    """
    from airflow.sdk import ObjectStoragePath

    destination = checked_destination(destination, allowed)
    if destination.endswith("/"):
        layout = "".join(
            f"{folder_name(key, partition_value(value, key))}/" for key, value in partitions.items()
        )
        destination = f"{destination}{layout}{file_name}"
    return ObjectStoragePath(destination)


def table_paths(
    destination: str,
    names: Sequence[str],
    partitions: Mapping[str, str],
    allowed: Sequence[RootList] = (),
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
    :param allowed: roots named by the deployment
        (:func:`~airflow_provider_analytics.output.roots.deployment_roots`).
    """
    main_name = names[0]
    if destination.endswith("/"):
        return {
            name: output_path(f"{destination}{name}/", partitions, f"{name}.parquet", allowed)
            for name in names
        }
    main = output_path(destination, partitions, f"{main_name}.parquet", allowed)
    stem, dot, extension = main.name.partition(".")
    return {
        name: main
        if name == main_name
        else main.parent / f"{stem}{name.removeprefix(main_name)}{dot}{extension}"
        for name in names
    }


class ParquetDestination:
    """Parquet objects under a prefix, or at a full object URI.

    :param destination: the rendered prefix (ending in ``/``) or object URI.
    :param identity: what the run's rows are.
    :param allowed_roots: the roots the deployment allows destinations under.
    :param compression: Parquet codec (checked here, before any work).
    """

    def __init__(
        self,
        destination: str,
        identity: Identity,
        *,
        allowed_roots: Sequence[RootList] = (),
        compression: str = "zstd",
    ) -> None:
        self.destination = checked_destination(destination, allowed_roots)
        self.identity = identity
        self.allowed_roots = list(allowed_roots)
        self.compression = parquet_compression(compression)

    @property
    def is_prefix(self) -> bool:
        return self.destination.endswith("/")

    def paths(self, day: str, names: Sequence[str]) -> dict[str, ObjectStoragePath]:
        """The object of each table of the day (for a cohort, ``users``)."""
        partitions = {self.identity.column: self.identity.value, "dt": day}
        if self.identity.column == COHORT_COLUMN:  # one table: no folder of its own
            file_name = f"{COHORT_FILE}.parquet"
            path = output_path(self.destination, partitions, file_name, self.allowed_roots)
            return {COHORT_FILE: path}
        return table_paths(self.destination, names, partitions, self.allowed_roots)

    def _cohort_path(self, day: str) -> ObjectStoragePath:
        return self.paths(day, (COHORT_FILE,))[COHORT_FILE]

    def check(self, days: Sequence[str], names: Sequence[str]) -> None:
        """Every object's path, the earlier version's layout, and what each existing object
        holds; refused by name before any request."""
        if len(days) > 1 and not self.is_prefix:
            rules.fail(
                "destination",
                "must be a prefix ending in '/' when a run writes several days (each day goes "
                "to its own dt=<day> partition; an object URI names one object)",
                self.destination,
            )
        self._refuse_old_layout(names)
        for day in days:
            for path in self.paths(day, names).values():
                held = stored_identity(path)
                if held is not None and held != str(self.identity):
                    rules.fail(
                        "destination",
                        f"{path} holds {held}, and this run writes {self.identity}; a run "
                        "replaces only its own rows: give each cohort or report a destination "
                        "of its own, or a prefix ending in '/' (which holds many)",
                        self.destination,
                    )

    def _refuse_old_layout(self, names: Sequence[str]) -> None:
        if not self.is_prefix:
            return
        root = self.destination  # checked when the destination was made
        from airflow.sdk import ObjectStoragePath

        if self.identity.column == COHORT_COLUMN:
            old = ObjectStoragePath(f"{root}{OLD_COHORT_FOLDER}={self.identity.value}/")
            new = f"{root}{self.identity.folder}/"
            if old.exists():
                rules.fail(
                    "destination",
                    f"holds {old}, written by an earlier version (its folders are now named "
                    f"{self.identity.column}=<code>); move that folder to {new} once (for "
                    "example `aws s3 mv --recursive` or `mv`), then rerun",
                    self.destination,
                )
            return
        for name in names:
            folder = ObjectStoragePath(f"{root}{name}/")
            if not folder.exists():
                continue
            old_days = sorted(
                entry.name for entry in folder.iterdir() if entry.name.startswith("dt=")
            )
            if old_days:
                rules.fail(
                    "destination",
                    f"holds {folder}{old_days[0]}/ (and {len(old_days) - 1} more days), written "
                    f"by an earlier version without the report's key; move each dt=<day> folder "
                    f"of {folder} into {folder}{self.identity.folder}/ once, then rerun",
                    self.destination,
                )

    @contextlib.contextmanager
    def cohort_file(self, day: str) -> Iterator[CohortFile]:
        path = self._cohort_path(day)
        yield CohortFile(path, str(path), self.file_metadata())

    def staging(self, day: str) -> ObjectStoragePath:
        """Beside the prefix, not under it (``<prefix>.staging/cohort_code=<c>/dt=<day>/``),
        or beside the object (``<object>.staging/``): no reader of the prefix sees a part.
        Through the roots' gate at each use (:func:`~airflow_provider_analytics.output.roots.
        staging_folder`): under the allowed roots, and no level from ``.staging`` down a link."""
        root = f"{self.destination.rstrip('/')}.staging/"
        folder = f"{root}{self.identity.folder}/dt={day}/" if self.is_prefix else root
        staged: ObjectStoragePath = staging_folder(folder, self.allowed_roots, own_from=root)
        return staged

    def publish_parts(self, day: str, parts: Sequence[StoragePath]) -> CohortFile:
        """The parts merged into the day's one object, which replaces the earlier one
        atomically (readers see the old day or the new one)."""
        path = self._cohort_path(day)
        written = merge_parts(
            parts, path, compression=self.compression, metadata=self.file_metadata()
        )
        return CohortFile(path, str(path), self.file_metadata(), {"bytes_written": written})

    def held_schema(self, day: str) -> pa.Schema | None:
        path = self._cohort_path(day)
        return earlier_schema(path.parent.parent, day, path.name)

    def report_tables(self, day: str, names: Sequence[str]) -> ParquetTables:
        return ParquetTables(
            self.paths(day, names),
            compression=self.compression,
            metadata={IDENTITY_METADATA_KEY: str(self.identity)},
        )

    def uri(self, day: str, names: Sequence[str]) -> str:
        return str(self.paths(day, names)[names[0]])

    def lineage(self, days: Sequence[str], names: Sequence[str]) -> list[LineageTarget]:
        return [object_target(path) for day in days for path in self.paths(day, names).values()]

    def file_metadata(self) -> dict[str, str]:
        """The Parquet file metadata every object records."""
        return {IDENTITY_METADATA_KEY: str(self.identity)}
