"""Atomic output to object storage: readers see a complete object or none at all.

Works with any pathlib-like object-storage path (Airflow's ``ObjectStoragePath``, a
``universal_pathlib`` path): the data is written to a hidden sibling (``.name.<id>.inprogress``,
which Hive-style readers, DuckDB globs on ``*.parquet`` and pyarrow datasets all skip), then
renamed over the destination. On local disk the rename is atomic and replaces the old file; on
S3 the final key appears whole when the copy completes. On any failure the temporary object is
deleted and the destination is left as it was.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from typing import IO, TYPE_CHECKING, Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_analytics.client.rules import fail

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

log = logging.getLogger(__name__)

PARQUET_CODECS = ("none", "snappy", "gzip", "brotli", "lz4", "zstd")
"""Compression codecs a Parquet object can be written with (subject to this pyarrow build)."""


def parquet_compression(value: Any, field: str = "compression") -> str:
    """Check a Parquet codec name before any work is done, so a typo fails at once.

    :param value: the codec, e.g. ``zstd``; ``none`` writes uncompressed.
    :param field: the argument's name, for the error.
    :raises AnalyticsValidationError: naming ``field`` for a codec that cannot be written.
    """
    available = [c for c in PARQUET_CODECS if c == "none" or pa.Codec.is_available(c)]
    if not isinstance(value, str) or value.lower() not in available:
        fail(field, f"must be one of {', '.join(available)}", value)
    return value


class StoragePath(Protocol):
    """The subset of the pathlib/UPath interface the writers use."""

    @property
    def name(self) -> str: ...

    @property
    def parent(self) -> Any: ...

    def __truediv__(self, other: str) -> Any: ...

    def open(self, mode: str = ...) -> IO[Any]: ...

    def exists(self) -> bool: ...

    def unlink(self, missing_ok: bool = ...) -> None: ...

    def rename(self, target: Any) -> Any: ...


def _remove_quietly(path: StoragePath) -> None:
    try:
        path.unlink(missing_ok=True)
    except Exception:  # cleanup must not hide the original error
        log.warning("could not remove temporary object %s", path, exc_info=True)


@contextlib.contextmanager
def atomic_destination(destination: StoragePath) -> Iterator[StoragePath]:
    """Yield a temporary sibling of ``destination``; move it into place when the block succeeds.

    :param destination: where the finished object must appear.
    """
    with contextlib.suppress(FileExistsError):
        destination.parent.mkdir(parents=True, exist_ok=True)
    temporary: StoragePath = (
        destination.parent / f".{destination.name}.{uuid.uuid4().hex}.inprogress"
    )
    try:
        yield temporary
        temporary.rename(destination)
    except BaseException:
        _remove_quietly(temporary)
        raise


def write_table_atomically(
    table: pa.Table, destination: StoragePath, *, compression: str = "zstd"
) -> int:
    """Write ``table`` as one Parquet object at ``destination`` atomically; return bytes written.

    :param table: the data.
    :param destination: the object's path.
    :param compression: Parquet compression codec.
    """
    with atomic_destination(destination) as temporary, temporary.open("wb") as sink:
        pq.write_table(table, sink, compression=compression)
        return int(sink.tell())


class ParquetTables:
    """Named tables, each written as one Parquet object and replaced atomically.

    :param paths: the object each table name is written to.
    :param compression: Parquet codec, checked here, before any work is done.
    """

    def __init__(self, paths: Mapping[str, StoragePath], *, compression: str = "zstd") -> None:
        self.paths = dict(paths)
        self.compression = parquet_compression(compression)

    def write_table(self, name: str, table: pa.Table) -> dict[str, Any]:
        """Write (replace) one table; return its URI, row count and size."""
        path = self.paths[name]
        written = write_table_atomically(table, path, compression=self.compression)
        return {"uri": str(path), "rows": table.num_rows, "bytes_written": written}
