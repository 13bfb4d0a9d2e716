"""Parquet objects in object storage (any ``ObjectStoragePath``), under a prefix laid out
Hive-style by identity and day, or at a full object URI (``docs/output_layout.md``).

Every object records its identity; one holding another identity, or a prefix of an earlier
version's layout, is refused by name before any request. The newest earlier day's file decides
the ``number`` columns' types and is what the ``schema_contract`` meets
(``docs/output_tables.md``).
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import KW_ONLY, dataclass
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
    local_path,
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

OLD_COHORT_FOLDER = "cohort"  # the partition key an earlier version put a cohort's code under


def stored_identity(path: ObjectStoragePath) -> str | None:
    """The identity an existing Parquet object records, or ``None`` (no object, or an object
    written before identities were recorded)."""
    if not path.exists():
        return None
    try:
        with path.open("rb") as handle:
            metadata = pq.read_schema(handle).metadata or {}
        value = metadata.get(IDENTITY_METADATA_KEY.encode())
        return value.decode() if value is not None else None
    except (pa.ArrowException, OSError, UnicodeDecodeError) as error:
        rules.fail(
            "destination",
            f"holds an object that is not readable Parquet ({type(error).__name__}); "
            "remove it or choose another destination",
            str(path),
        )


def earlier_schema(days: StoragePath, day: str, file_name: str) -> pa.Schema | None:
    """The columns of ``file_name`` in the newest ``dt=`` folder of ``days`` before ``day``
    (``None`` when there is none: the first day decides for itself)."""
    earlier = (name for name in _day_folders(days) if name[len("dt=") :] < day)
    for name in sorted(earlier, reverse=True):
        source = days / name / file_name
        if source.exists():
            return _held_columns(source, "the newest earlier day's file")
    return None


def _day_folders(folder: StoragePath) -> list[str]:
    """The ``dt=`` folder names in ``folder`` (none when it is missing), refusing by name a
    file where the folder goes (it let a bare NotADirectoryError out)."""
    if not folder.exists():
        return []
    try:
        return sorted(entry.name for entry in folder.iterdir() if entry.name.startswith("dt="))
    except NotADirectoryError:
        rules.fail(
            "destination",
            f"holds a file at {folder}, where its folders go: remove it or choose another "
            "destination",
        )


def _held_columns(source: StoragePath, what: str) -> pa.Schema:
    """The columns of a Parquet object the destination holds, which a day meets."""
    try:
        with source.open("rb") as handle:
            schema = pq.read_schema(handle)
        names = schema.names
    except (pa.ArrowException, OSError, UnicodeDecodeError) as error:
        raise EarlierDayUnreadableError(
            f"{source}: {what}, which decides the columns and the types of the number "
            f"columns, cannot be read as this provider's Parquet ({error}); rewrite it "
            "(rerun that day) or remove it"
        ) from None
    log.info("the day meets the columns of %s: %s", source, names)
    return schema


def output_path(
    destination: str, partitions: Mapping[str, str], file_name: str
) -> ObjectStoragePath:
    """The object to write at a checked ``destination``: below a prefix (``/``) the partitions
    Hive-style (``key=value/``, as Hive escapes them) and ``file_name``, else the object."""
    from airflow.sdk import ObjectStoragePath

    if destination.endswith("/"):
        layout = "".join(
            f"{folder_name(key, partition_value(value, key))}/" for key, value in partitions.items()
        )
        destination = f"{destination}{layout}{file_name}"
    return ObjectStoragePath(destination)


def table_paths(
    destination: str, names: Sequence[str], partitions: Mapping[str, str]
) -> dict[str, ObjectStoragePath]:
    """The objects of a report's tables, main table first: under a prefix a folder per table;
    a full object URI is the main table's, the others its siblings named the way the tables
    are (``funnel.parquet`` -> ``funnel_totals.parquet``)."""
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


@dataclass(eq=False, repr=False)
class ParquetDestination:
    """Parquet objects under a prefix (ending in ``/``), or at a full object URI."""

    destination: str
    identity: Identity
    _: KW_ONLY
    allowed_roots: Sequence[RootList] = ()
    compression: str = "zstd"

    def __post_init__(self) -> None:
        self.destination = checked_destination(self.destination, self.allowed_roots)
        parquet_compression(self.compression)
        self.metadata = {IDENTITY_METADATA_KEY: str(self.identity)}  # every object records it

    @property
    def is_prefix(self) -> bool:
        return self.destination.endswith("/")

    def paths(self, day: str, names: Sequence[str]) -> dict[str, ObjectStoragePath]:
        """The object of each table of the day (for a cohort, ``users``). On the worker's
        disk each passes the roots' gate too: a link among the folders added below the
        prefix (a table's, a partition's) would lead the write out of the roots."""
        partitions = {self.identity.column: self.identity.value, "dt": day}
        if self.identity.column == COHORT_COLUMN:  # one table: no folder of its own
            name = f"{COHORT_FILE}.parquet"
            found = {COHORT_FILE: output_path(self.destination, partitions, name)}
        else:
            found = table_paths(self.destination, names, partitions)
        for path in found.values():
            if (local := local_path(path)) is not None:
                checked_destination(local, self.allowed_roots)
        return found

    def _cohort_path(self, day: str) -> ObjectStoragePath:
        return self.paths(day, (COHORT_FILE,))[COHORT_FILE]

    def check(self, days: Sequence[str], names: Sequence[str]) -> None:
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
            old_days = _day_folders(folder)
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
        yield CohortFile(path, str(path), self.metadata)

    def staging(self, day: str) -> ObjectStoragePath:
        """Beside the prefix or the object (``<prefix>.staging/...``), not under it, through
        the roots' gate at each use; a bucket's root keeps it hidden under it
        (``<bucket>/.staging/``: beside it, ``<bucket>.staging`` is another bucket)."""
        stem = self.destination.rstrip("/")
        bucket = local_path(stem) is None and "/" not in stem.partition("://")[2]
        root = f"{stem}/.staging/" if bucket else f"{stem}.staging/"
        folder = f"{root}{self.identity.folder}/dt={day}/" if self.is_prefix else root
        return staging_folder(folder, self.allowed_roots, own_from=root)

    def publish_parts(self, day: str, parts: Sequence[StoragePath]) -> CohortFile:
        path = self._cohort_path(day)
        written = merge_parts(parts, path, compression=self.compression, metadata=self.metadata)
        return CohortFile(path, str(path), self.metadata, {"bytes_written": written})

    def held_schema(self, day: str) -> pa.Schema | None:
        path = self._cohort_path(day)
        if not self.is_prefix:  # one object, replaced by every run: its own columns
            return _held_columns(path, "the object this run replaces") if path.exists() else None
        return earlier_schema(path.parent.parent, day, path.name)

    def report_tables(self, day: str, names: Sequence[str]) -> ParquetTables:
        return ParquetTables(
            self.paths(day, names),
            compression=self.compression,
            metadata=self.metadata,
        )

    def uri(self, day: str, names: Sequence[str]) -> str:
        return str(self.paths(day, names)[names[0]])

    def lineage(self, days: Sequence[str], names: Sequence[str]) -> list[LineageTarget]:
        return [object_target(path) for day in days for path in self.paths(day, names).values()]
