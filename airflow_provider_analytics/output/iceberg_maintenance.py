"""Maintenance of Iceberg tables (the ``[iceberg]`` extra): expire old snapshots through
pyiceberg, and remove the files under the table's location that its metadata no longer reaches
and that are older than a safety age (pyiceberg has no orphan-file removal), listed through the
table's FileIO (``docs/operators/iceberg_maintenance.md``).
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlparse

from pyiceberg.exceptions import (
    CommitFailedException,
    NoSuchNamespaceError,
    NoSuchTableError,
    ValidationError,
)

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import (
    AnalyticsConfigurationError,
    AnalyticsError,
    IcebergCommitError,
    IcebergMaintenanceError,
)
from airflow_provider_analytics.core.retry import RetryPolicy
from airflow_provider_analytics.output.iceberg import lost_race
from airflow_provider_analytics.output.roots import checked_destination

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from pyiceberg.catalog import Catalog
    from pyiceberg.io import FileIO
    from pyiceberg.table import Table

    from airflow_provider_analytics.output.roots import RootList

log = logging.getLogger(__name__)

_S3_ALIASES: Final = {"s3a": "s3", "s3n": "s3"}


@dataclass
class MaintenanceResult:
    """What one table's maintenance did (or, with ``dry_run``, would do)."""

    table: str
    expired_snapshots: list[int] = field(default_factory=list)
    snapshots_kept: int = 0
    orphan_files: list[str] = field(default_factory=list)
    files_scanned: int = 0
    dry_run: bool = False

    def as_dict(self) -> dict[str, Any]:
        """Counts, and the first 100 orphan files."""
        return {
            **asdict(self),
            "expired_snapshots": len(self.expired_snapshots),
            "orphan_files_removed": len(self.orphan_files),
            "orphan_files": self.orphan_files[:100],
        }


def expire_snapshots(
    table: Table, *, older_than: dt.datetime, retain_last: int = 1, dry_run: bool = False
) -> tuple[list[int], int]:
    """Expire the snapshots taken before ``older_than``, keeping at least the ``retain_last``
    newest and every branch and tag head; the expired ids and the number kept."""
    rules.positive_int(retain_last, "retain_last")
    snapshots = sorted(table.snapshots(), key=lambda snapshot: snapshot.timestamp_ms)
    protected = {ref.snapshot_id for ref in table.metadata.refs.values()}
    protected |= {snapshot.snapshot_id for snapshot in snapshots[-retain_last:]}
    cutoff = int(older_than.timestamp() * 1000)
    expired = [
        snapshot.snapshot_id
        for snapshot in snapshots
        if snapshot.timestamp_ms < cutoff and snapshot.snapshot_id not in protected
    ]
    if expired and not dry_run:
        table.maintenance.expire_snapshots().by_ids(expired).commit()
    return expired, len(snapshots) - len(expired)


def reachable_files(table: Table) -> set[str]:
    """Every file the table's current metadata reaches (as :func:`file_key` keys): metadata
    files and their log, statistics, manifest lists, manifests, live data and delete files."""
    metadata = table.metadata
    io = table.io
    found = {table.metadata_location}
    found |= {entry.metadata_file for entry in metadata.metadata_log}
    found |= {statistics.statistics_path for statistics in metadata.statistics}
    found |= {statistics.statistics_path for statistics in metadata.partition_statistics}
    manifests: dict[str, Any] = {}
    for snapshot in metadata.snapshots:
        found.add(snapshot.manifest_list)
        for manifest in snapshot.manifests(io):
            manifests.setdefault(manifest.manifest_path, manifest)
    for path, manifest in manifests.items():
        found.add(path)
        for entry in manifest.fetch_manifest_entry(io, discard_deleted=True):
            found.add(entry.data_file.file_path)
    return {file_key(path) for path in found if path}


def file_key(location: str) -> str:
    """A location as one string whatever its spelling (``s3a://`` is ``s3://``; a local
    path, ``file:/x`` and ``file:///x`` are one)."""
    parsed = urlparse(location)
    scheme = _S3_ALIASES.get(parsed.scheme, parsed.scheme)
    if scheme in ("", "file"):
        return "file://" + parsed.path
    return f"{scheme}://{parsed.netloc}{parsed.path}"


def list_files(io: FileIO, location: str) -> Iterator[tuple[str, dt.datetime]]:
    """Every file under ``location`` with its modification time (UTC), through the file
    system of the table's FileIO (pyiceberg's pyarrow or fsspec one; another is refused)."""
    from pyarrow.fs import FileSelector, FileType
    from pyiceberg.io.fsspec import FsspecFileIO
    from pyiceberg.io.pyarrow import PyArrowFileIO

    root = location.rstrip("/")
    scheme = urlparse(root).scheme or "file"
    if isinstance(io, PyArrowFileIO):
        scheme, netloc, path = io.parse_location(root, io.properties)
        selector = FileSelector(path, recursive=True, allow_not_found=True)
        for info in io.fs_by_scheme(scheme, netloc).get_file_info(selector):
            if info.type == FileType.File:
                yield f"{scheme}://{info.path}", _utc(info.mtime)
    elif isinstance(io, FsspecFileIO):
        path = urlparse(root).path if scheme == "file" else root
        for name, info in io.get_fs(scheme).find(path, detail=True).items():
            if info.get("type", "file") != "file":
                continue
            modified = info.get("LastModified") or info.get("mtime") or info.get("created")
            if isinstance(modified, (int, float)):
                modified = dt.datetime.fromtimestamp(modified, dt.UTC)
            yield f"{scheme}://{name}", _utc(modified)
    else:
        raise IcebergMaintenanceError(
            f"cannot list the files of {location}: the table's FileIO is "
            f"{type(io).__name__}, not pyiceberg's PyArrowFileIO or FsspecFileIO"
        )


def _utc(moment: Any) -> dt.datetime:
    if not isinstance(moment, dt.datetime):
        # unknown age: treat as new, so that it is never removed
        return dt.datetime.max.replace(tzinfo=dt.UTC)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _before(now: dt.datetime, age: dt.timedelta) -> dt.datetime:
    """``now - age``, or the earliest moment when ``age`` reaches past it (a retention of
    thousands of years keeps everything; the subtraction raised a bare OverflowError)."""
    earliest = dt.datetime.min.replace(tzinfo=dt.UTC)
    return earliest if age >= now - earliest else now - age


def maintain_table(
    catalog: Catalog,
    identifier: str,
    *,
    snapshot_retention: dt.timedelta,
    retain_last: int = 1,
    orphan_file_age: dt.timedelta,
    dry_run: bool = False,
    now: dt.datetime | None = None,
    attempts: int = 5,
    sleep: Callable[[float], None] = time.sleep,
    allowed_roots: Sequence[RootList] = (),
) -> MaintenanceResult:
    """Expire the table's old snapshots (``attempts`` tries of the commit when other writers
    commit in between), then delete the files under the table's location that its metadata
    does not reach and that are older than ``orphan_file_age``. Refused before anything is
    committed when the location lies outside the roots or holds another table of the catalog
    (:func:`tables_inside`)."""
    if orphan_file_age < dt.timedelta(0) or snapshot_retention < dt.timedelta(0):
        raise AnalyticsConfigurationError(
            "snapshot_retention and orphan_file_age must not be negative"
        )
    rules.positive_int(attempts, "attempts")
    now = now or dt.datetime.now(dt.UTC)
    result = MaintenanceResult(table=identifier, dry_run=dry_run)
    try:  # where it may delete is checked before anything is committed
        location = f"{catalog.load_table(identifier).location().rstrip('/')}/"
        checked_destination(location, allowed_roots, "iceberg table location")
        if inside := tables_inside(catalog, identifier, location):
            raise IcebergMaintenanceError(
                f"{identifier}: refused, its location {location} holds the files of "
                f"{', '.join(inside)}, which its orphan removal would delete; give each "
                "table a location of its own"
            )

        def expire() -> tuple[list[int], int]:
            table = catalog.load_table(identifier)
            try:
                return expire_snapshots(
                    table,
                    older_than=_before(now, snapshot_retention),
                    retain_last=retain_last,
                    dry_run=dry_run,
                )
            except CommitFailedException as error:
                raise lost_race(identifier, "snapshot expiry", attempts, error) from error

        engine = RetryPolicy.doubling(attempts, 0.2, jitter=0.5).retrying(identifier, sleep=sleep)
        try:
            result.expired_snapshots, result.snapshots_kept = engine(expire)
        except IcebergCommitError as error:
            raise IcebergMaintenanceError(str(error)) from error.__cause__
        # orphans: listed before the metadata is read, so that a commit landing in between is seen
        table = catalog.load_table(identifier)
        listed = list(list_files(table.io, location))
        table = catalog.load_table(identifier)
        reachable = reachable_files(table)
    except AnalyticsError:
        raise
    except (ValidationError, ValueError, OSError, EOFError) as error:  # pyiceberg's, pydantic's
        raise IcebergMaintenanceError(
            f"{identifier}: cannot read the table's metadata or a file it names, nothing "
            f"deleted: {type(error).__name__}: {error}"
        ) from error
    result.files_scanned = len(listed)
    cutoff = _before(now, orphan_file_age)
    result.orphan_files = sorted(
        path for path, modified in listed if modified < cutoff and file_key(path) not in reachable
    )
    if not dry_run:
        for path in result.orphan_files:
            table.io.delete(path)
    if result.orphan_files:
        verb = "would remove" if dry_run else "removed"
        log.info("%s: %s %d orphan files", identifier, verb, len(result.orphan_files))
    return result


def tables_inside(catalog: Catalog, identifier: str, location: str) -> list[str]:
    """The catalog's other tables whose location is ``location`` or lies below it: their files
    are listed with the table's own, and none of them is reached by its metadata. Every
    namespace is walked and every table loaded (correct, not cheap on a large catalog); a
    catalog that cannot list, or a table whose location cannot be read, is refused."""
    own = catalog.identifier_to_tuple(identifier)
    found = []
    namespaces: list[tuple[str, ...]] = [()]
    while namespaces:
        namespace = namespaces.pop()
        try:
            children = catalog.list_namespaces(namespace)
            others = catalog.list_tables(namespace) if namespace else []
        except NoSuchNamespaceError:  # dropped since it was listed
            continue
        except Exception as error:  # a catalog's refusal to list (a REST 403, Glue's denial)
            raise IcebergMaintenanceError(
                f"{identifier}: refused, the catalog's tables cannot be listed to check that "
                f"none lies in its location {location}: {error}"
            ) from error
        namespaces += [child for child in children if len(child) > len(namespace)]
        for other in others:
            if tuple(other) == own:
                continue
            try:
                where = catalog.load_table(other).location()
            except NoSuchTableError:  # dropped since it was listed, or not an Iceberg table
                continue
            except Exception as error:  # unreadable metadata, a refused load
                raise IcebergMaintenanceError(
                    f"{identifier}: refused, the location of {'.'.join(other)} cannot be read, "
                    f"so whether its files lie in {location} is unknown: {error}"
                ) from error
            if file_key(f"{where.rstrip('/')}/").startswith(file_key(location)):
                found.append(".".join(other))
    return sorted(found)
