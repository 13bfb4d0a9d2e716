"""Merged shards: the parts' row groups copied as they were encoded, under one footer, and
decoded and encoded again only when a part's types or codec differ from the object's."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_analytics.output import parquet_footer
from airflow_provider_analytics.output.parquet import merge_parts, parquet_stream

SCHEMA = pa.schema(
    [
        pa.field("distinct_id", pa.int64(), metadata={"analytics.id": "distinct_id"}),
        ("score", pa.int64()),
        ("city", pa.string()),
        ("tags", pa.list_(pa.string())),
        ("seen", pa.timestamp("ms", tz="UTC")),
    ]
)


def rows(first: int, count: int, score: pa.DataType | None = None) -> pa.Table:
    score = score or pa.int64()
    ids = list(range(first, first + count))
    return pa.table(
        [
            pa.array(ids, pa.int64()),
            pa.array([i % 7 for i in ids], score),
            pa.array([("上海", "Wien", None)[i % 3] for i in ids]),
            pa.array([["a", None] if i % 2 else [] for i in ids], pa.list_(pa.string())),
            pa.array([1_700_000_000_000 + i for i in ids], pa.timestamp("ms", tz="UTC")),
        ],
        schema=SCHEMA if score == pa.int64() else SCHEMA.set(1, pa.field("score", score)),
    )


def write_parts(tmp_path: Path, sizes: list[int], *, compression: str = "zstd") -> list[Path]:
    """Parts as the shard reader writes them: row groups of at most 40 rows."""
    parts, first = [], 0
    for index, size in enumerate(sizes):
        part = tmp_path / f"part-{index:05d}.parquet"
        table = rows(first, size)
        with parquet_stream(
            part, table.schema, compression=compression, row_group_rows=40
        ) as stream:
            stream.add(table)
        parts.append(part)
        first += size
    return parts


def decoded_merge(parts: list[Path], target: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patched:
        patched.setattr(parquet_footer, "join_parts", lambda *args: False)
        merge_parts(parts, target, compression="zstd", metadata={"analytics.identity": "x"})


def test_joined_parts_are_the_decoding_merge_row_group_for_row_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = write_parts(tmp_path, [100, 35, 81])
    joined, decoded = tmp_path / "joined.parquet", tmp_path / "decoded.parquet"
    size = merge_parts(parts, joined, compression="zstd", metadata={"analytics.identity": "x"})
    decoded_merge(parts, decoded, monkeypatch)
    assert size == joined.stat().st_size
    one, other = pq.ParquetFile(joined), pq.ParquetFile(decoded)
    assert one.schema_arrow.equals(other.schema_arrow, check_metadata=True)
    assert one.schema_arrow.metadata[b"analytics.identity"] == b"x"
    assert one.schema_arrow.field("distinct_id").metadata == {b"analytics.id": b"distinct_id"}
    assert one.read().equals(rows(0, 216))
    assert [one.metadata.row_group(i).num_rows for i in range(one.num_row_groups)] == [
        other.metadata.row_group(i).num_rows for i in range(other.num_row_groups)
    ]
    for group in range(one.num_row_groups):  # each row group reads alone, statistics kept
        for column in range(len(SCHEMA)):
            kept = one.metadata.row_group(group).column(column)
            made = other.metadata.row_group(group).column(column)
            assert kept.statistics == made.statistics
            assert kept.encodings == made.encodings
        assert one.read_row_group(group).equals(other.read_row_group(group))
    # the encoded pages were copied, not made again: part 0's bytes open the object
    data, first = joined.read_bytes(), parts[0].read_bytes()
    assert (
        data[: pq.ParquetFile(parts[0]).metadata.row_group(0).total_byte_size // 2]
        == (first[: pq.ParquetFile(parts[0]).metadata.row_group(0).total_byte_size // 2])
    )


def test_other_readers_read_the_joined_object(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    parts = write_parts(tmp_path, [100, 60])
    joined = tmp_path / "joined.parquet"
    merge_parts(parts, joined, compression="zstd", metadata={})
    found = duckdb.sql(
        f"SELECT count(*), count(DISTINCT distinct_id), sum(score), max(seen) FROM '{joined}'"
    ).fetchall()[0]
    table = rows(0, 160)
    expected = sum(table.column("score").to_pylist())
    assert found[:3] == (160, 160, expected)


def test_a_part_of_wider_types_is_decoded_and_widened(tmp_path: Path) -> None:
    parts = write_parts(tmp_path, [50])
    double = tmp_path / "part-00001.parquet"
    with parquet_stream(double, rows(50, 30, pa.float64()).schema, row_group_rows=40) as stream:
        stream.add(rows(50, 30, pa.float64()))
    merged = tmp_path / "merged.parquet"
    merge_parts([*parts, double], merged, compression="zstd", metadata={})
    table = pq.read_table(merged)
    assert table.schema.field("score").type == pa.float64()
    assert table.column("score").to_pylist() == [float(i % 7) for i in range(80)]


def test_parts_of_another_codec_are_encoded_in_the_object_s(tmp_path: Path) -> None:
    parts = write_parts(tmp_path, [60, 60], compression="snappy")
    merged = tmp_path / "merged.parquet"
    merge_parts(parts, merged, compression="zstd", metadata={})
    metadata = pq.ParquetFile(merged).metadata
    assert {metadata.row_group(0).column(i).compression for i in range(len(SCHEMA))} == {"ZSTD"}
    assert pq.read_table(merged).equals(rows(0, 120))


def test_a_part_that_is_not_parquet_is_left_to_the_decoding_merge(tmp_path: Path) -> None:
    parts = write_parts(tmp_path, [60, 60])
    parts[1].write_bytes(parts[1].read_bytes()[:-3])  # its footer cut
    with pytest.raises(pa.ArrowInvalid):
        merge_parts(parts, tmp_path / "merged.parquet", compression="zstd", metadata={})
    assert not (tmp_path / "merged.parquet").exists()
