"""Parquet as the package writes it: one writer factory, objects written atomically, and files
read back row group by row group.

Every Parquet file the package writes (report tables, a streamed cohort, the parts of a sharded
cohort, Iceberg data files) is written by :func:`parquet_writer`, with the same encoding and
statistics rules (:func:`writer_options`); the parts are merged by copying their encoded row
groups under one footer (:mod:`~airflow_provider_analytics.output.parquet_footer`). Two ways
into object storage, both on top of
:func:`~airflow_provider_analytics.output.storage.atomic_destination` (a reader sees the whole
object or the previous one, never a partial file):

- :class:`ParquetTables` and :func:`write_table_atomically`: a whole table at once (reports);
- :func:`parquet_stream`: a table arriving in pieces (a cohort export), written as row groups
  of bounded rows and bytes, each encoded in a background thread while the next one fills.
  The pieces go to any :class:`RowGroupSink`: an object's segments (:class:`SegmentedWriter`),
  or an Iceberg table's data files (:mod:`~airflow_provider_analytics.output.iceberg`).

A Parquet file has one schema, fixed when its writer opens, while a cohort export learns the
type of a ``number`` column as it reads (int64 until its first decimal, then double). Files
written before a column turned are read back by :func:`read_row_groups`, each row group
converted by the export's ``widen`` (which checks every value), and written again: an object's
earlier segments, an Iceberg writer's earlier data files, the parts of a sharded cohort.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import KW_ONLY, dataclass
from dataclasses import field as attribute
from typing import TYPE_CHECKING, Any, Final, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_analytics.core.arrow_types import holds_text
from airflow_provider_analytics.core.errors import ShardStagingError
from airflow_provider_analytics.core.heap import trim_heap
from airflow_provider_analytics.core.pipeline import WriteBehind
from airflow_provider_analytics.core.rules import fail, positive_int
from airflow_provider_analytics.output.roots import open_own
from airflow_provider_analytics.output.storage import (
    StoragePath,
    atomic_destination,
    open_unheard,
    remove_quietly,
    temporary_sibling,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence

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


def write_table_atomically(
    table: pa.Table,
    destination: StoragePath,
    *,
    compression: str = "zstd",
    metadata: Mapping[str, str] | None = None,
) -> int:
    """Write ``table`` as one Parquet object at ``destination`` atomically; return bytes written.

    :param table: the data.
    :param destination: the object's path.
    :param compression: Parquet compression codec.
    :param metadata: key-value metadata added to the file's (kept beside the table's own).
    """
    if metadata:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
    with atomic_destination(destination) as temporary, open_unheard(temporary, "wb") as sink:
        with parquet_writer(sink, table.schema, compression=compression) as writer:
            writer.write_table(table)
        return int(sink.tell())


@dataclass(eq=False)
class ParquetTables:
    """Named tables, each written as one Parquet object and replaced atomically.

    :param paths: the object each table name is written to.
    :param compression: Parquet codec, checked here, before any work is done.
    :param metadata: key-value metadata every object records (its identity).
    """

    paths: Mapping[str, StoragePath]
    _: KW_ONLY
    compression: str = "zstd"
    metadata: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        parquet_compression(self.compression)

    def write_table(self, name: str, table: pa.Table) -> dict[str, Any]:
        """Write (replace) one table; return its URI, row count and size."""
        path = self.paths[name]
        written = write_table_atomically(
            table, path, compression=self.compression, metadata=self.metadata
        )
        return {"uri": str(path), "rows": table.num_rows, "bytes_written": written}


DICTIONARY_PAGE_BYTES = 64 << 10
"""A text column's dictionary in a row group grows to this size at most; past it the column
falls back to plain values (zstd-compressed) for the rest of the row group.

Texts that repeat (cities, devices, labels) have dictionaries far smaller; texts that do not
(e-mail addresses, nicknames) would each build a dictionary of Arrow's default 1 MiB before
falling back, in every row group. On the benchmark's 1M-user cohort 64 KiB took the Parquet
writing from 0.77-0.81 to 0.67 CPU seconds and the file from 44.2 to 41.3 MB (plain pages of
unique texts compress better than their dictionary indices)."""


def _leaf_path(field: pa.Field) -> str:
    """The Parquet column path of ``field``'s values, as the writer's per-column options match
    it: a list's values are ``<name>.list.element`` (the compliant nested layout the writer is
    given); a top-level name holding dots (``tag.t_vip``) is its own path."""
    path, arrow_type = field.name, field.type
    while pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        path, arrow_type = f"{path}.list.element", arrow_type.value_type
    return path


def writer_options(schema: pa.Schema, statistics_also: Collection[str] = ()) -> dict[str, Any]:
    """The ``ParquetWriter`` options every file is written with (besides its codec): which
    columns are dictionary encoded and which carry statistics, the compliant nested layout.

    Only texts and lists of texts, which repeat, are dictionary encoded. Numbers and datetimes
    of user records rarely repeat; dictionary encoding them costs time before the writer falls
    back to plain, and makes the file larger: the benchmark's 1M-user cohort took 62 MiB with
    every column dictionary encoded, 53 MiB with texts only, written ~15% faster. Encoding its
    three lists of texts too took a 200k-row sample of it from 10.49 to 10.35 MiB, as fast.

    Every column but texts and lists of texts carries min/max statistics: readers prune row
    groups by those of ids, numbers and datetimes (``WHERE register_time >= ...``). A text
    column's minimum and maximum over a row group of users in no particular order span nearly
    every value, so they prune nothing, and computing them cost about a tenth of the Parquet
    writing: ~0.075 of 0.63 CPU seconds for the benchmark's 1M-user cohort, the same file size.

    :param statistics_also: text columns given statistics all the same (every column of an
        Iceberg data file, whose table keeps each column's null count and bounds).
    """
    texts = [holds_text(field.type) for field in schema]
    return {
        "use_dictionary": [_leaf_path(f) for f, text in zip(schema, texts, strict=True) if text],
        "dictionary_pagesize_limit": DICTIONARY_PAGE_BYTES,
        "write_statistics": [
            _leaf_path(field)
            for field, text in zip(schema, texts, strict=True)
            if not text or field.name in statistics_also
        ],
        "use_compliant_nested_type": True,
    }


def parquet_writer(
    sink: Any,
    schema: pa.Schema,
    *,
    compression: str = "zstd",
    compression_level: int | None = None,
    statistics_also: Collection[str] = (),
) -> pq.ParquetWriter:
    """The one ``ParquetWriter`` factory: every Parquet file of the package is written by one
    made here, with :func:`writer_options`.

    :param sink: a path or a writable binary file object.
    :param schema: the file's schema (its metadata and field metadata are kept).
    :param compression: Parquet codec (``none`` writes uncompressed).
    :param compression_level: the codec's level; its default when ``None``.
    :param statistics_also: see :func:`writer_options`.
    """
    options = writer_options(schema, statistics_also)
    return pq.ParquetWriter(
        sink, schema, compression=compression, compression_level=compression_level, **options
    )


def same_types(first: pa.Schema, second: pa.Schema) -> bool:
    """Whether two schemas have the same column types (names and metadata aside)."""
    if first.equals(second):  # one call in Arrow: the usual case, a piece like the last
        return True
    return len(first) == len(second) and all(
        a.type == b.type for a, b in zip(first, second, strict=True)
    )


def cast_to(table: pa.Table, schema: pa.Schema, first_row: int) -> pa.Table:
    """The default ``widen``: Arrow's safe cast (``first_row`` unused)."""
    return table.cast(schema)


def read_row_groups(
    files: Iterable[Callable[[], Any]],
    schema: pa.Schema,
    widen: Callable[[pa.Table, pa.Schema, int], pa.Table] = cast_to,
    *,
    columns: Sequence[str] | None = None,
) -> Iterator[pa.Table]:
    """Every row group of Parquet files written one after the other, in order, in ``schema``.

    A row group whose column types differ is converted by ``widen``, given the 0-based row of
    all the files its first row is; one whose names or metadata differ is cast. One row group is
    held at a time, decoded on one thread: Arrow's decoding threads each held memory of their
    own (a 1M-user merge peaked ~35 MiB higher) for about 10% less CPU.

    :param files: each opens one file for binary reading (a context manager).
    :param columns: the columns read (all by default).
    """
    row = 0
    for open_file in files:
        with open_file() as source:
            parquet = pq.ParquetFile(source)
            for index in range(parquet.num_row_groups):
                table = parquet.read_row_group(index, columns=columns, use_threads=False)
                if not same_types(table.schema, schema):
                    table = widen(table, schema, row)
                yield table if table.schema.equals(schema) else table.cast(schema)
                row += table.num_rows


def unified_schema(parts: Sequence[StoragePath]) -> pa.Schema:
    """The common schema of a sharded cohort's parts (:mod:`~airflow_provider_analytics.export.
    shards`): a number column double in one part is double in all."""
    schemas = []
    for part in parts:
        with open_own(part) as handle:
            schemas.append(pq.read_schema(handle))
    first = schemas[0]
    for part, schema in zip(parts, schemas, strict=True):
        if schema.names != first.names:
            raise ShardStagingError(
                f"{part}: columns {schema.names} differ from the first part's {first.names} "
                "(the tracking plan changed between shards); export the day again"
            )
    fields = []
    for position, field in enumerate(first):
        kinds = [schema.field(position).type for schema in schemas]
        wide = next((kind for kind in kinds if kind.equals(pa.float64())), field.type)
        fields.append(field.with_type(wide))
    return pa.schema(fields, metadata=first.metadata)


def part_row_groups(parts: Sequence[StoragePath], schema: pa.Schema) -> Iterator[pa.Table]:
    """Every row group of the parts, in shard order, in ``schema``: an int64 column double in
    another part is cast as it is, publication having refused by name an integer no double
    holds exactly (the stream's number rule, :mod:`~airflow_provider_analytics.export.shards`),
    where Arrow's safe cast refused every integer beyond 2**53, exact or not."""
    files = [functools.partial(open_own, part) for part in parts]
    return read_row_groups(files, schema, lambda table, wide, _: table.cast(wide, safe=False))


def merge_parts(
    parts: Sequence[StoragePath],
    destination: StoragePath,
    *,
    compression: str,
    metadata: dict[str, str],
) -> int:
    """One Parquet object from the parts, row group by row group, replacing ``destination``
    atomically. Returns bytes written.

    The row groups are copied as the parts encoded them when every part has the object's
    column types and codec (:func:`~airflow_provider_analytics.output.parquet_footer.
    join_parts`); otherwise (a column one part holds as int64 and another as double) each is
    decoded and encoded again."""
    from airflow_provider_analytics.output.parquet_footer import join_parts

    schema = unified_schema(parts)
    schema = schema.with_metadata({**(schema.metadata or {}), **metadata})
    open_writer = functools.partial(parquet_writer, compression=compression)
    with atomic_destination(destination) as temporary, open_unheard(temporary, "wb") as sink:
        if not join_parts(parts, sink, schema, open_writer):
            with open_writer(sink, schema) as writer:
                for table in part_row_groups(parts, schema):
                    writer.write_table(table)
        return int(sink.tell())


class StreamOpener(Protocol):
    """Opens the stream a cohort export writes: :func:`parquet_stream` bound to its object, or
    an Iceberg day's :meth:`~airflow_provider_analytics.output.iceberg.IcebergDayWriter.stream`.
    """

    def __call__(
        self, schema: pa.Schema, **options: Any
    ) -> contextlib.AbstractContextManager[ParquetStream]: ...


class RowGroupSink(Protocol):
    """Where a :class:`ParquetStream` hands its row groups (in its writing thread)."""

    @property
    def bytes_written(self) -> int:
        """Bytes written so far; the final size once closed."""

    def write(self, table: pa.Table) -> None:
        """Write ``table`` as one row group (its schema may be wider than the last one's)."""

    def close(self, schema: pa.Schema) -> None:
        """Finish what was written (``schema``: the one written when no row group came)."""

    def abandon(self) -> None:
        """Stop after a failure, leaving nothing that a reader would find."""


TRIM_EVERY: Final = 8
"""Row groups an object's stream writes between two returns of the C heap's free memory
(:func:`~airflow_provider_analytics.core.heap.trim_heap`): pieces freed by other threads than
those that made them add up in each thread's heap. A 1M-user stream of 3 MiB row groups peaked
at 256-259 MiB untrimmed and 250-252 trimmed every 8th row group, at the same CPU seconds
(every 4th: 0.18 s more). A process holding pyiceberg and pandas paid 0.27 s more for 6 MiB,
so an Iceberg day's stream is not trimmed."""


@dataclass(eq=False, repr=False)
class ParquetStream:
    """Pieces of one table, buffered and written as row groups of bounded rows and bytes.

    A row group is encoded in a background thread while the next one fills, so at most two
    are held in memory. As a context manager it closes ``writer`` when the block succeeds and
    abandons it when the block raises; :func:`parquet_stream` then commits or discards the
    object.

    The pieces' schema may widen on the way (a column read as int64 turns out to hold doubles):
    a piece in a wider schema has the buffered ones converted by ``widen`` first, and row groups
    already written are converted when the stream ends (:func:`read_row_groups`).

    :param writer: where the row groups go: an object's segments when the schema widens, or
        an Iceberg table's data files.
    :param schema: the schema written when no piece arrives at all.
    :param row_group_rows: rows per row group at most.
    :param row_group_bytes: a row group is written once its Arrow data reaches this size.
    :param prepare: turns each row group into the written schema in the writing thread, given
        the 0-based row of the whole table its first row is; the pieces are then of its input.
    :param widen: converts a table (given the 0-based row of its first row) to a wider schema;
        by default Arrow's safe cast.
    :param trim_every: hand the heap's free memory back every this many row groups.
    :raises AnalyticsValidationError: naming ``row_group_rows`` when it is not at least 1.
    """

    writer: RowGroupSink
    schema: pa.Schema
    _: KW_ONLY
    row_group_rows: int
    row_group_bytes: int
    prepare: Callable[[pa.Table, int], pa.Table] | None = None
    widen: Callable[[pa.Table, pa.Schema, int], pa.Table] = cast_to
    trim_every: int | None = None
    _pending: list[pa.Table] = attribute(default_factory=list, init=False)
    _pending_rows: int = attribute(default=0, init=False)
    _pending_bytes: int = attribute(default=0, init=False)
    _rows_handed: int = attribute(default=0, init=False)  # rows handed to the writing thread
    _row_groups: int = attribute(default=0, init=False)  # row groups written

    def __post_init__(self) -> None:
        positive_int(self.row_group_rows, "row_group_rows")  # a bound of 0 would never fill
        self._behind: WriteBehind[tuple[pa.Table, int]] = WriteBehind(self._write_row_group)

    @property
    def bytes_written(self) -> int:
        """Bytes in the object so far; its final size once the stream is closed."""
        return self.writer.bytes_written

    def _write_row_group(self, group: tuple[pa.Table, int]) -> None:
        if self.trim_every and self._row_groups and self._row_groups % self.trim_every == 0:
            trim_heap()  # before this row group: the last one is freed by now
        self._row_groups += 1
        table, first_row = group
        if self.prepare is not None:
            table = self.prepare(table, first_row)
        self.writer.write(table)

    def add(self, table: pa.Table) -> None:
        """Buffer ``table``; hand a row group to the writing thread each time one is full.

        A table that would take the buffer past ``row_group_rows`` is cut there (a slice,
        no copy), so no row group holds more rows. A table in a wider schema than the buffered
        pieces has them widened to it first.
        """
        if self._pending and not same_types(self._pending[0].schema, table.schema):
            first_row = self._rows_handed
            for index, piece in enumerate(self._pending):
                self._pending[index] = self.widen(piece, table.schema, first_row)
                first_row += piece.num_rows
            self._pending_bytes = sum(piece.nbytes for piece in self._pending)
        # a piece's bytes are its share of the table's, by rows: one ``nbytes`` a table (~0.1 ms
        # for a block's) rather than one for each slice of it
        row_bytes = table.nbytes / max(table.num_rows, 1)
        while table.num_rows:
            room = self.row_group_rows - self._pending_rows
            taken, table = table.slice(0, room), table.slice(room)
            self._pending.append(taken)
            self._pending_rows += taken.num_rows
            self._pending_bytes += round(taken.num_rows * row_bytes)
            if (
                self._pending_rows >= self.row_group_rows
                or self._pending_bytes >= self.row_group_bytes
            ):
                self._submit()

    def _submit(self) -> None:
        if self._pending:
            table = pa.concat_tables(self._pending)
            self._pending, self._pending_rows, self._pending_bytes = [], 0, 0
            self._behind.submit((table, self._rows_handed))
            self._rows_handed += table.num_rows

    def flush(self) -> None:
        """Hand what is buffered to the writing thread and wait for every write; a write's
        error (or ``prepare``'s) is raised here."""
        self._submit()
        self._behind.drain()

    def __enter__(self) -> ParquetStream:
        return self

    def __exit__(self, failed: type[BaseException] | None, *_: object) -> None:
        """Write what is buffered, wait for every write and finish the object; after a failure
        (the block's, or a write's) stop and abandon it."""
        if failed is not None:
            self._pending = []
            with contextlib.suppress(Exception):
                self._behind.close()
            self.writer.abandon()
            return
        try:
            self._submit()
            self._behind.close()
        except BaseException:
            self.writer.abandon()
            raise
        self.writer.close(self.schema)


@contextlib.contextmanager
def parquet_stream(
    destination: StoragePath,
    schema: pa.Schema,
    *,
    compression: str = "zstd",
    row_group_rows: int = 262_144,
    row_group_bytes: int = 8 << 20,
    prepare: Callable[[pa.Table, int], pa.Table] | None = None,
    widen: Callable[[pa.Table, pa.Schema, int], pa.Table] = cast_to,
    subject: str | None = None,
) -> Iterator[ParquetStream]:
    """Yield a :class:`ParquetStream` writing ``destination``; commit it when the block succeeds.

    When the block raises, nothing is committed: the destination keeps what it held.

    :param destination: where the finished object must appear.
    :param schema: the table's schema (its columns may widen on the way, see
        :class:`ParquetStream`).
    :param compression: Parquet codec.
    :param row_group_rows: rows per row group at most.
    :param row_group_bytes: a row group is written once its Arrow data reaches this size.
    :param prepare: see :class:`ParquetStream`.
    :param widen: see :class:`ParquetStream`.
    :param subject: what is written, for a storage error (``cohort 'vip'``).
    :raises AnalyticsStorageError: the storage failed.
    """

    def open_writer(sink: Any, written: pa.Schema) -> pq.ParquetWriter:
        # the file keeps the declared schema's metadata (its identity), whatever the row
        # groups carry
        written = written.with_metadata({**(written.metadata or {}), **(schema.metadata or {})})
        return parquet_writer(sink, written, compression=compression)

    with atomic_destination(destination, subject=subject) as temporary:
        writer = SegmentedWriter(
            temporary,
            scratch=lambda: temporary_sibling(destination),
            open_writer=open_writer,
            widen=widen,
        )
        with ParquetStream(
            writer,
            schema,
            row_group_rows=row_group_rows,
            row_group_bytes=row_group_bytes,
            prepare=prepare,
            widen=widen,
            trim_every=TRIM_EVERY,
        ) as stream:
            yield stream


SINK_BUFFER: Final = 1 << 20
"""Bytes gathered before they reach the storage's file object. Arrow's writer hands over every
page and page header on its own, each a call into Python through fsspec's file object with
the GIL taken from the other threads of an export: ~4,000 for a 1M-user cohort, a few dozen
when gathered."""


def _sink(path: StoragePath) -> pa.NativeFile:
    """A storage file opened for writing, behind an Arrow buffer of :data:`SINK_BUFFER` bytes;
    closing it writes what is buffered and closes the file (also when that write fails)."""
    return pa.output_stream(open_unheard(path, "wb"), buffer_size=SINK_BUFFER)


@dataclass(eq=False, repr=False)
class SegmentedWriter:
    """Row groups into one Parquet object: the first into the object's temporary, and a new
    segment, in a hidden sibling, each time a row group arrives in a wider schema. When more
    than one segment was written, the object is rewritten row group by row group in the widest
    schema when it is closed, and the siblings are removed; when nothing widened after the first
    row group, the usual case, the first segment is the object.

    :param temporary: where the object is written (moved into place by the caller).
    :param scratch: makes a new hidden sibling path for a further segment.
    :param open_writer: opens a ``ParquetWriter`` on a binary sink for a schema.
    :param widen: converts an earlier row group to the final schema, given the 0-based row of
        the whole table its first row is; raises when a value cannot be converted exactly.
    """

    temporary: StoragePath
    _: KW_ONLY
    scratch: Callable[[], StoragePath]
    open_writer: Callable[[Any, pa.Schema], pq.ParquetWriter]
    widen: Callable[[pa.Table, pa.Schema, int], pa.Table] = cast_to
    bytes_written: int = attribute(default=0, init=False)
    """Bytes in the object (and its segments) so far; its final size once closed."""
    _paths: list[StoragePath] = attribute(default_factory=list, init=False)
    """The segments' files, in order."""
    _schema: pa.Schema | None = attribute(default=None, init=False)
    _writer: pq.ParquetWriter | None = attribute(default=None, init=False)
    _closed_bytes: int = attribute(default=0, init=False)

    def __post_init__(self) -> None:
        # the first segment's file is opened at once, as a writer of a fixed schema would:
        # a storage fault shows before any data is read, and the temporary exists from the start
        self._sink: pa.NativeFile | None = _sink(self.temporary)

    def write(self, table: pa.Table) -> None:
        """Write ``table`` as one row group, in a new segment if its schema is wider."""
        if self._schema is None or not same_types(table.schema, self._schema):
            self._start(table.schema)
        assert self._writer is not None and self._sink is not None
        self._writer.write_table(table, row_group_size=max(table.num_rows, 1))
        self.bytes_written = self._closed_bytes + self._sink.tell()

    def _start(self, schema: pa.Schema) -> None:
        if self._paths:
            self._close_segment()
            self._paths.append(self.scratch())
            self._sink = _sink(self._paths[-1])
        else:
            self._paths.append(self.temporary)  # opened already
        assert self._sink is not None
        self._schema = schema
        self._writer = self.open_writer(self._sink, schema)

    def _close_segment(self) -> None:
        writer, sink = self._writer, self._sink
        self._writer = self._sink = None
        if sink is not None:  # a writer is never open without its sink
            with sink:
                if writer is not None:
                    writer.close()
                self._closed_bytes += sink.tell()

    def close(self, schema: pa.Schema) -> None:
        """Finish the object: its footer, or the rewrite of its segments in the widest schema.

        :param schema: the object's schema when no row group was written.
        """
        try:
            if not self._paths:
                self._start(schema)
            self._close_segment()
            if len(self._paths) > 1:
                self._rewrite()
            else:
                self.bytes_written = self._closed_bytes
        finally:
            self._remove_scratch()

    def _rewrite(self) -> None:
        """Every segment's row groups in the last (widest) schema, into the temporary, the
        first segment having been moved aside."""
        moved = self.scratch()
        self._paths[0].rename(moved)
        self._paths[0] = moved
        assert self._schema is not None
        with _sink(self.temporary) as sink:
            with self.open_writer(sink, self._schema) as writer:
                opens = [lambda path=path: path.open("rb") for path in self._paths]
                for table in read_row_groups(opens, self._schema, self.widen):
                    writer.write_table(table, row_group_size=max(table.num_rows, 1))
            self.bytes_written = sink.tell()

    def abandon(self) -> None:
        """Stop after a failure: close quietly and remove the further segments (the caller
        discards the temporary)."""
        with contextlib.suppress(Exception):
            self._close_segment()
        self._remove_scratch()

    def _remove_scratch(self) -> None:
        for path in self._paths:
            if path is not self.temporary:
                remove_quietly(path)
