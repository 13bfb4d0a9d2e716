"""One Parquet object written row group by row group, whose schema may widen on the way.

A Parquet file has one schema, fixed when its writer opens. A cohort export learns the type of
a ``number`` column as it reads (int64 until its first decimal, then double), so row groups are
written as they come into segments: the first into the object's temporary, and a new one, in a
hidden sibling, each time a row group arrives in a wider schema after others were written. When
the stream ends in more than one segment, the object is rewritten row group by row group in the
widest schema, each earlier row group converted by ``widen`` (which checks every value), and the
siblings are removed. Memory holds one row group at a time, and nothing is published before the
object is final (:func:`~airflow_provider_analytics.output.storage.atomic_destination` moves it into
place afterwards). When nothing widened after the first row group was written, the usual case,
the first segment is the object and nothing is rewritten.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_analytics.output.storage import remove_quietly

if TYPE_CHECKING:
    from collections.abc import Callable

    from airflow_provider_analytics.output.storage import StoragePath


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


SINK_BUFFER: Final = 1 << 20
"""Bytes gathered before they reach the storage's file object. Arrow's writer hands over every
page and page header on its own, each a call into Python through fsspec's and Airflow's file
wrappers with the GIL taken from the other threads of an export: ~4,000 for a 1M-user cohort,
a few dozen when gathered."""


class _Sink:
    """A storage file opened for writing, behind an Arrow buffer of :data:`SINK_BUFFER` bytes."""

    def __init__(self, path: StoragePath) -> None:
        self._file = path.open("wb")
        try:
            self.stream = pa.BufferedOutputStream(
                pa.PythonFile(self._file, mode="w"), buffer_size=SINK_BUFFER
            )
        except BaseException:
            self._file.close()
            raise

    def tell(self) -> int:
        """Bytes written so far (buffered ones included)."""
        return int(self.stream.tell())

    def close(self) -> None:
        """Write what is buffered and close the file (also when the write fails)."""
        try:
            self.stream.close()
        finally:
            self._file.close()


@dataclass
class _Segment:
    path: StoragePath
    schema: pa.Schema
    first_row: int


class SegmentedWriter:
    """Row groups into one Parquet object, in segments when the schema widens.

    :param temporary: where the object is written (moved into place by the caller).
    :param scratch: makes a new hidden sibling path for a further segment.
    :param open_writer: opens a ``ParquetWriter`` on a binary sink for a schema.
    :param widen: converts an earlier row group to the final schema, given the 0-based row of
        the whole table its first row is; raises when a value cannot be converted exactly.
    """

    def __init__(
        self,
        temporary: StoragePath,
        *,
        scratch: Callable[[], StoragePath],
        open_writer: Callable[[Any, pa.Schema], pq.ParquetWriter],
        widen: Callable[[pa.Table, pa.Schema, int], pa.Table] = cast_to,
    ) -> None:
        self._temporary = temporary
        self._scratch = scratch
        self._open_writer = open_writer
        self._widen = widen
        self._segments: list[_Segment] = []
        # the first segment's file is opened at once, as a writer of a fixed schema would:
        # a storage fault shows before any data is read, and the temporary exists from the start
        self._sink: _Sink | None = _Sink(temporary)
        self._writer: pq.ParquetWriter | None = None
        self._rows = 0
        self._closed_bytes = 0
        self.bytes_written = 0
        """Bytes in the object (and its segments) so far; its final size once closed."""

    @property
    def segments(self) -> int:
        """Segments written so far (more than one: the object is rewritten when closed)."""
        return len(self._segments)

    def write(self, table: pa.Table) -> None:
        """Write ``table`` as one row group, in a new segment if its schema is wider."""
        if self._writer is None or not same_types(table.schema, self._segments[-1].schema):
            self._start(table.schema)
        assert self._writer is not None
        self._writer.write_table(table, row_group_size=max(table.num_rows, 1))
        self._rows += table.num_rows
        assert self._sink is not None
        self.bytes_written = self._closed_bytes + self._sink.tell()

    def _start(self, schema: pa.Schema) -> None:
        if self._segments:
            self._close_segment()
            path = self._scratch()
            self._sink = _Sink(path)
        else:
            path = self._temporary  # opened already
        assert self._sink is not None
        self._segments.append(_Segment(path, schema, self._rows))
        self._writer = self._open_writer(self._sink.stream, schema)

    def _close_segment(self) -> None:
        writer, sink = self._writer, self._sink
        self._writer = self._sink = None
        try:
            if writer is not None:
                writer.close()
        finally:
            if sink is not None:
                try:
                    self._closed_bytes += sink.tell()
                finally:
                    sink.close()

    def close(self, schema: pa.Schema) -> None:
        """Finish the object: its footer, or the rewrite of its segments in the widest schema.

        :param schema: the object's schema when no row group was written.
        """
        try:
            if not self._segments:
                self._start(schema)
            self._close_segment()
            if len(self._segments) > 1:
                self._rewrite()
            else:
                self.bytes_written = self._closed_bytes
        finally:
            self._remove_scratch()

    def _rewrite(self) -> None:
        """Every segment's row groups, converted to the last (widest) schema, into the
        temporary, the first segment having been moved aside."""
        first = self._segments[0]
        moved = self._scratch()
        first.path.rename(moved)
        first.path = moved
        schema = self._segments[-1].schema
        sink = _Sink(self._temporary)
        try:
            writer = self._open_writer(sink.stream, schema)
            try:
                for segment in self._segments:
                    self._copy(segment, schema, writer)
            finally:
                writer.close()
            self.bytes_written = sink.tell()
        finally:
            sink.close()

    def _copy(self, segment: _Segment, schema: pa.Schema, writer: pq.ParquetWriter) -> None:
        row = segment.first_row
        with segment.path.open("rb") as source:
            groups = pq.ParquetFile(source)
            for index in range(groups.num_row_groups):
                table = groups.read_row_group(index)
                if not same_types(table.schema, schema):
                    table = self._widen(table, schema, row)
                writer.write_table(table.cast(schema), row_group_size=max(table.num_rows, 1))
                row += table.num_rows

    def abandon(self) -> None:
        """Stop after a failure: close quietly and remove the further segments (the caller
        discards the temporary)."""
        with contextlib.suppress(Exception):
            self._close_segment()
        self._remove_scratch()

    def _remove_scratch(self) -> None:
        for segment in self._segments:
            if segment.path is not self._temporary:
                remove_quietly(segment.path)
