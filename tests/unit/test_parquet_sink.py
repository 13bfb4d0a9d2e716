"""The streamed Parquet writer: bounded row groups, committed whole or not at all."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_analytics.sinks.parquet import parquet_stream, write_table_atomically

if TYPE_CHECKING:
    from pathlib import Path

SCHEMA = pa.schema([("user", pa.int64()), ("name", pa.string())])


def piece(start: int, rows: int) -> pa.Table:
    return pa.table(
        {"user": list(range(start, start + rows)), "name": [f"u{i}" for i in range(rows)]},
        schema=SCHEMA,
    )


def test_pieces_become_row_groups_of_bounded_rows(tmp_path: Path) -> None:
    target = tmp_path / "cohort=vip" / "users.parquet"
    with parquet_stream(target, SCHEMA, row_group_rows=250, row_group_bytes=1 << 30) as stream:
        for start in range(0, 1000, 100):
            stream.add(piece(start, 100))
    metadata = pq.ParquetFile(target).metadata
    sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    assert sizes == [300, 300, 300, 100]  # a group is flushed at the first piece past 250
    assert pq.read_table(target).column("user").to_pylist() == list(range(1000))
    assert stream.bytes_written == target.stat().st_size
    assert [p.name for p in target.parent.iterdir()] == ["users.parquet"]


def test_row_groups_are_also_bounded_by_bytes(tmp_path: Path) -> None:
    target = tmp_path / "users.parquet"
    one_piece = piece(0, 100)
    with parquet_stream(
        target, SCHEMA, row_group_rows=1 << 20, row_group_bytes=one_piece.nbytes
    ) as stream:
        for start in range(0, 500, 100):
            stream.add(piece(start, 100))
    assert pq.ParquetFile(target).metadata.num_row_groups == 5


def test_a_failure_inside_the_block_keeps_the_previous_object(tmp_path: Path) -> None:
    target = tmp_path / "users.parquet"
    write_table_atomically(piece(0, 3), target)
    with (
        pytest.raises(RuntimeError, match="stream cut"),
        parquet_stream(target, SCHEMA, row_group_rows=10) as stream,
    ):
        for start in range(0, 100, 5):
            stream.add(piece(start, 5))
        raise RuntimeError("stream cut")
    assert pq.read_table(target).column("user").to_pylist() == [0, 1, 2]
    assert [p.name for p in tmp_path.iterdir()] == ["users.parquet"]
