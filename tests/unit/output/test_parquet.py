"""The streamed Parquet writer: bounded row groups, committed whole or not at all."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_analytics.client import AnalyticsValidationError
from airflow_provider_analytics.output import parquet
from airflow_provider_analytics.output.parquet import parquet_stream, write_table_atomically

SCHEMA = pa.schema([("user", pa.int64()), ("name", pa.string())])


def piece(start: int, rows: int) -> pa.Table:
    return pa.table(
        {"user": list(range(start, start + rows)), "name": [f"u{i}" for i in range(rows)]},
        schema=SCHEMA,
    )


def row_group_sizes(path: Path) -> list[int]:
    metadata = pq.ParquetFile(path).metadata
    return [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]


def test_pieces_become_row_groups_of_bounded_rows(tmp_path: Path) -> None:
    target = tmp_path / "cohort=vip" / "users.parquet"
    with parquet_stream(target, SCHEMA, row_group_rows=250, row_group_bytes=1 << 30) as stream:
        for start in range(0, 1000, 100):
            stream.add(piece(start, 100))
    assert row_group_sizes(target) == [250, 250, 250, 250]  # a piece crossing 250 is cut
    assert pq.read_table(target).column("user").to_pylist() == list(range(1000))
    assert stream.bytes_written == target.stat().st_size
    assert [p.name for p in target.parent.iterdir()] == ["users.parquet"]


@settings(max_examples=40, deadline=None)
@given(
    pieces=st.lists(st.integers(0, 700), max_size=8),
    bound=st.integers(1, 300),
)
def test_no_row_group_exceeds_the_row_bound_and_only_the_last_is_short(
    pieces: list[int], bound: int
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        target = Path(directory) / "users.parquet"
        with parquet_stream(
            target, SCHEMA, row_group_rows=bound, row_group_bytes=1 << 30
        ) as stream:
            start = 0
            for rows in pieces:
                stream.add(piece(start, rows))
                start += rows
        sizes = row_group_sizes(target)
        full, rest = divmod(start, bound)
        assert sizes == [bound] * full + ([rest] if rest else [])
        assert pq.read_table(target).column("user").to_pylist() == list(range(start))


def test_row_groups_are_also_bounded_by_bytes(tmp_path: Path) -> None:
    target = tmp_path / "users.parquet"
    one_piece = piece(0, 100)
    with parquet_stream(
        target, SCHEMA, row_group_rows=1 << 20, row_group_bytes=one_piece.nbytes
    ) as stream:
        for start in range(0, 500, 100):
            stream.add(piece(start, 100))
    assert pq.ParquetFile(target).metadata.num_row_groups == 5


def test_the_heap_is_trimmed_every_few_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trims: list[int] = []
    monkeypatch.setattr(parquet, "trim_heap", lambda: trims.append(1))
    target = tmp_path / "users.parquet"
    groups = 2 * parquet.TRIM_EVERY + 1
    with parquet_stream(target, SCHEMA, row_group_rows=10, row_group_bytes=1 << 30) as stream:
        for start in range(0, 10 * groups, 10):
            stream.add(piece(start, 10))
    assert len(trims) == 2  # before the row groups after the first TRIM_EVERY, twice
    assert row_group_sizes(target) == [10] * groups
    assert pq.read_table(target).column("user").to_pylist() == list(range(10 * groups))


def test_slices_of_one_table_count_their_own_bytes_not_the_table_s(tmp_path: Path) -> None:
    rows = 1_000
    whole = pa.table(
        {"user": list(range(rows)), "name": [f"u{i:04d}" for i in range(rows)]}, schema=SCHEMA
    )
    slices = [whole.slice(start, 100) for start in range(0, rows, 100)]
    target = tmp_path / "users.parquet"
    bound = slices[0].nbytes * 2  # two slices' worth; the whole table is five times that
    with parquet_stream(target, SCHEMA, row_group_rows=1 << 20, row_group_bytes=bound) as stream:
        for part in slices:
            stream.add(part)
    assert row_group_sizes(target) == [200] * 5
    assert pq.read_table(target).equals(whole)


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


KINDS = pa.schema(
    [
        ("name", pa.string()),
        ("tag.t_vip", pa.string()),
        ("$city", pa.large_string()),
        ("interests", pa.list_(pa.string())),
        ("tag.labels", pa.large_list(pa.large_string())),
        ("distinct_id", pa.float64()),
        ("visits", pa.int64()),
        ("seen", pa.timestamp("ms", tz="UTC")),
        ("scores", pa.list_(pa.int64())),
        ("tag.score", pa.float64()),
    ]
)


def dictionary_encoded(path: Path) -> dict[str, bool]:
    """Per column of ``KINDS`` (one leaf each, in field order): whether its first row group
    has a dictionary page and dictionary-encoded data."""
    metadata = pq.ParquetFile(path).metadata
    group = metadata.row_group(0)
    assert metadata.num_columns == len(KINDS)
    leaves = [group.column(index) for index in range(metadata.num_columns)]
    return {
        name: leaf.has_dictionary_page and "RLE_DICTIONARY" in leaf.encodings
        for name, leaf in zip(KINDS.names, leaves, strict=True)
    }


def kinds_table(rows: int) -> pa.Table:
    return pa.table(
        {
            "name": ["ann", "bob"] * (rows // 2),
            "tag.t_vip": ["yes", "no"] * (rows // 2),
            "$city": ["Hangzhou", "Beijing"] * (rows // 2),
            "interests": [["golf", "chess"], ["chess"]] * (rows // 2),
            "tag.labels": [["a"], None] * (rows // 2),
            "distinct_id": [float(i) for i in range(rows)],
            "visits": [i % 3 for i in range(rows)],
            "seen": [1_700_000_000_000 + i % 2 for i in range(rows)],
            "scores": [[1, 2], [2]] * (rows // 2),
            "tag.score": [i / 4 for i in range(rows)],
        },
        schema=KINDS,
    )


def test_texts_and_lists_of_texts_are_dictionary_encoded_numbers_and_times_are_not(
    tmp_path: Path,
) -> None:
    rows = 200
    table = kinds_table(rows)
    target = tmp_path / "users.parquet"
    with parquet_stream(target, KINDS, row_group_rows=rows) as stream:
        stream.add(table)
    assert dictionary_encoded(target) == {
        "name": True,
        "tag.t_vip": True,
        "$city": True,
        "interests": True,
        "tag.labels": True,
        "distinct_id": False,
        "visits": False,  # repeats, yet numbers stay plain: they rarely repeat in user records
        "seen": False,
        "scores": False,
        "tag.score": False,
    }
    assert pq.read_table(target).equals(table)


def statistics_written(path: Path) -> dict[str, bool]:
    """Per column of ``KINDS``: whether its first row group carries min/max statistics."""
    group = pq.ParquetFile(path).metadata.row_group(0)
    leaves = [group.column(index) for index in range(group.num_columns)]
    return {
        name: leaf.is_stats_set and leaf.statistics.has_min_max
        for name, leaf in zip(KINDS.names, leaves, strict=True)
    }


def test_numbers_and_times_carry_statistics_texts_and_lists_of_texts_do_not(
    tmp_path: Path,
) -> None:
    table = kinds_table(200)
    target = tmp_path / "users.parquet"
    with parquet_stream(target, KINDS, row_group_rows=100) as stream:
        stream.add(table)
    assert statistics_written(target) == {
        "name": False,
        "tag.t_vip": False,
        "$city": False,
        "interests": False,
        "tag.labels": False,
        "distinct_id": True,
        "visits": True,
        "seen": True,
        "scores": True,
        "tag.score": True,  # a dotted name is its own path
    }
    second = pq.ParquetFile(target).metadata.row_group(1).column(KINDS.names.index("visits"))
    assert (second.statistics.min, second.statistics.max) == (0, 2)
    assert pq.read_table(target).equals(table)


def test_the_merged_shards_file_is_written_with_the_stream_s_options(tmp_path: Path) -> None:
    from airflow_provider_analytics.output.parquet import merge_parts

    parts = []
    for index in range(2):
        part = tmp_path / f"part-{index}.parquet"
        with parquet_stream(part, KINDS, row_group_rows=100) as stream:
            stream.add(kinds_table(100))
        parts.append(part)
    merged = tmp_path / "day.parquet"
    merge_parts(parts, merged, compression="zstd", metadata={"k": "v"})
    assert statistics_written(merged) == statistics_written(parts[0])
    assert dictionary_encoded(merged) == dictionary_encoded(parts[0])
    assert pq.read_table(merged).num_rows == 200


@pytest.mark.parametrize("rows", [0, -1, True])
def test_a_row_bound_below_one_is_refused_by_name(tmp_path: Path, rows: int) -> None:
    with (
        pytest.raises(AnalyticsValidationError) as caught,
        parquet_stream(tmp_path / "users.parquet", SCHEMA, row_group_rows=rows),
    ):
        pass
    assert caught.value.field == "row_group_rows"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("held", [b"\xff\xfe", b"not parquet at all", b"PAR1\x00\x00"])
def test_an_object_of_a_foreign_or_broken_identity_is_refused_by_name(
    tmp_path: Path, held: bytes
) -> None:
    from airflow_provider_analytics.core.identity import cohort_identity
    from airflow_provider_analytics.output.parquet_destination import ParquetDestination

    target = tmp_path / "users.parquet"
    if held.startswith(b"\xff"):  # readable Parquet whose identity is not UTF-8
        table = pa.table({"a": [1]}).replace_schema_metadata({b"analytics.identity": held})
        pq.write_table(table, target)
    else:
        target.write_bytes(held)
    before = target.read_bytes()
    destination = ParquetDestination(target.as_uri(), cohort_identity("vip"))
    with pytest.raises(AnalyticsValidationError, match="not readable Parquet") as caught:
        destination.check(["2024-01-15"], ["users"])
    assert caught.value.field == "destination"
    assert target.read_bytes() == before


def test_a_file_where_the_destination_keeps_its_folders_is_refused_by_name(
    tmp_path: Path,
) -> None:
    """A file at ``cohort_code=vip`` (or at a report table's folder) let a bare
    NotADirectoryError out of the destination's reading."""
    from airflow_provider_analytics.core.identity import Identity, cohort_identity
    from airflow_provider_analytics.output.parquet_destination import ParquetDestination

    (tmp_path / "cohort_code=vip").write_text("x")
    cohorts = ParquetDestination(f"{tmp_path.as_uri()}/", cohort_identity("vip"))
    with pytest.raises(AnalyticsValidationError, match=r"holds a file at .*cohort_code=vip"):
        cohorts.held_schema("2024-01-15")
    (tmp_path / "funnel").write_text("x")
    reports = ParquetDestination(f"{tmp_path.as_uri()}/", Identity("report_key", "k"))
    with pytest.raises(AnalyticsValidationError, match=r"holds a file at .*funnel"):
        reports.check(["2024-01-15"], ["funnel"])
