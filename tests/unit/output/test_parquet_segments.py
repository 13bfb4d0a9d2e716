"""A streamed Parquet object whose schema widens on the way (output/parquet.py's
SegmentedWriter through parquet_stream): buffered pieces widened in place, written row groups
rewritten once at the end, nothing left beside the object, nothing published on failure."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_provider_analytics.core.errors import AnalyticsError
from airflow_provider_analytics.output import parquet
from airflow_provider_analytics.output.parquet import parquet_stream

if TYPE_CHECKING:
    from pathlib import Path

INTS = pa.schema([pa.field("n", pa.int64(), metadata={b"analytics.id": b"n"}), ("s", pa.string())])
DOUBLES = pa.schema(
    [pa.field("n", pa.float64(), metadata={b"analytics.id": b"n"}), ("s", pa.string())]
)


class Refused(AnalyticsError):
    pass


def piece(start: int, rows: int, schema: pa.Schema = INTS) -> pa.Table:
    numbers = list(range(start, start + rows))
    values = numbers if schema is INTS else [n + 0.5 for n in numbers]
    return pa.table({"n": values, "s": [f"u{n}" for n in numbers]}, schema=schema)


class Widen:
    """Casts int64 columns to double, refusing ``refuse_value``; records the rows it saw."""

    def __init__(self, refuse_value: int | None = None) -> None:
        self.calls: list[tuple[int, int]] = []
        self.refuse_value = refuse_value

    def __call__(self, table: pa.Table, schema: pa.Schema, first_row: int) -> pa.Table:
        self.calls.append((first_row, table.num_rows))
        values = table.column("n").to_pylist()
        if self.refuse_value in values:
            raise Refused(f"row {first_row + values.index(self.refuse_value) + 1}")
        return table.set_column(0, schema.field("n"), pc.cast(table.column("n"), pa.float64()))


def test_pieces_buffered_when_the_schema_widens_are_widened_in_place(tmp_path: Path) -> None:
    widen = Widen()
    target = tmp_path / "users.parquet"
    with parquet_stream(target, INTS, row_group_rows=100, widen=widen) as stream:
        stream.add(piece(0, 30))
        stream.add(piece(30, 30))
        stream.add(piece(60, 10, DOUBLES))
    assert widen.calls == [(0, 30), (30, 30)]  # nothing was written yet: no rewrite
    table = pq.read_table(target)
    assert table.schema.field("n").type == pa.float64()
    assert table.column("n").to_pylist() == [
        *map(float, range(60)),
        *(n + 0.5 for n in range(60, 70)),
    ]
    assert pq.ParquetFile(target).num_row_groups == 1


def test_row_groups_written_before_the_schema_widened_are_rewritten_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    widen = Widen()
    rewrites: list[int] = []
    original = parquet.SegmentedWriter._rewrite

    def counted(self: parquet.SegmentedWriter) -> None:
        rewrites.append(len(self._paths))
        original(self)

    monkeypatch.setattr(parquet.SegmentedWriter, "_rewrite", counted)
    target = tmp_path / "users.parquet"
    with parquet_stream(target, INTS, row_group_rows=10, widen=widen) as stream:
        for start in range(0, 35, 5):
            stream.add(piece(start, 5))
        stream.add(piece(35, 5, DOUBLES))
        stream.add(piece(40, 25, DOUBLES))
    assert rewrites == [2]  # int64 groups in the first segment, doubles in the second
    assert widen.calls == [(30, 5), (0, 10), (10, 10), (20, 10)]  # the buffer, then the groups
    table = pq.read_table(target)
    assert table.schema.field("n").type == pa.float64()
    assert table.schema.field("n").metadata == {b"analytics.id": b"n"}
    expected = [*map(float, range(35)), *(n + 0.5 for n in range(35, 65))]
    assert table.column("n").to_pylist() == expected
    assert table.column("s").to_pylist() == [f"u{n}" for n in range(65)]
    metadata = pq.ParquetFile(target).metadata
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [
        10,
        10,
        10,
        10,
        10,
        10,
        5,
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["users.parquet"]
    assert stream.bytes_written == target.stat().st_size


def test_a_refusal_while_rewriting_publishes_nothing_and_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "users.parquet"
    target.write_bytes(b"yesterday's file")
    with (
        pytest.raises(Refused, match="row 13"),
        parquet_stream(target, INTS, row_group_rows=10, widen=Widen(refuse_value=12)) as stream,
    ):
        stream.add(piece(0, 30))
        stream.flush()
        stream.add(piece(30, 10, DOUBLES))
    assert target.read_bytes() == b"yesterday's file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["users.parquet"]


def test_a_failure_after_a_second_segment_removes_every_segment(tmp_path: Path) -> None:
    target = tmp_path / "users.parquet"
    with (
        pytest.raises(RuntimeError, match="stream cut"),
        parquet_stream(target, INTS, row_group_rows=10, widen=Widen()) as stream,
    ):
        stream.add(piece(0, 20))
        stream.flush()
        stream.add(piece(20, 20, DOUBLES))
        stream.flush()
        raise RuntimeError("stream cut")
    assert list(tmp_path.iterdir()) == []


def test_nothing_written_gives_the_schema_it_was_opened_with(tmp_path: Path) -> None:
    target = tmp_path / "users.parquet"
    with parquet_stream(target, INTS, widen=Widen()):
        pass
    assert pq.read_schema(target).field("n").type == pa.int64()
    assert pq.read_table(target).num_rows == 0


def test_a_segment_file_is_closed_when_writing_what_is_buffered_fails() -> None:
    """A segment's storage file sits behind Arrow's buffer; when the write of what is buffered
    fails at close, the error is raised and the file is closed all the same."""

    class Full(io.RawIOBase):
        def writable(self) -> bool:
            return True

        def write(self, data: object) -> int:
            raise OSError("no space left")

    handle = Full()

    class Storage:
        def open(self, mode: str) -> Full:
            assert mode == "wb"
            return handle

    sink = parquet._sink(Storage())  # type: ignore[arg-type]
    sink.write(b"buffered")
    with pytest.raises(OSError, match="no space left"):
        sink.close()
    assert handle.closed
