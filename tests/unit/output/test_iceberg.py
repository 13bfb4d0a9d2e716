"""The Iceberg day writer's own rules, on a SQL catalog in a temporary folder: nested columns
keep their field ids, a lost commit ends in IcebergCommitError with the files deleted, a
commit of unknown outcome keeps them, and a stream's row groups become data files once."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.schema import index_by_id
from pyiceberg.table import Transaction

from airflow_provider_analytics.core.errors import AnalyticsError
from airflow_provider_analytics.core.identity import Identity
from airflow_provider_analytics.output.iceberg import (
    FIELD_ID_KEY,
    IcebergCommitError,
    IcebergDayWriter,
    IcebergLayoutError,
    IcebergSchemaError,
    catalog_properties,
    open_catalog,
)

if TYPE_CHECKING:
    from pathlib import Path

    from pyiceberg.catalog import Catalog

DAY = dt.date(2024, 3, 1)

COHORT = Identity("cohort_code", "vip")


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    extra = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    return open_catalog("lake", catalog_properties(extra=extra))


def nested() -> pa.Table:
    return pa.table(
        {
            "$city": ["Oslo", None],
            "tags": pa.array([["a", "b"], None], pa.list_(pa.string())),
            "address": pa.array(
                [{"street": "Main", "no": 1}, None],
                pa.struct([("street", pa.string()), ("no", pa.int64())]),
            ),
            "scores": pa.array([[("x", 1.5)], []], pa.map_(pa.string(), pa.float64())),
        }
    )


def test_nested_columns_are_written_with_the_tables_field_ids(catalog: Catalog) -> None:
    data = nested()
    writer = IcebergDayWriter(catalog, "lake.nested", DAY, identity=COHORT)
    writer.open(data.schema)
    writer.write(data)
    summary = writer.commit()

    table = catalog.load_table("lake.nested")
    back = table.scan().to_arrow()
    assert summary["rows"] == 2 and summary["data_files"] == 1
    assert back.drop_columns(["cohort_code", "dt"]).to_pylist() == data.to_pylist()
    (path,) = writer.paths
    written = pq.read_schema(path.removeprefix("file://"))
    iceberg = table.schema()

    def ids(field: pa.Field) -> list[int]:
        own = [int(field.metadata[FIELD_ID_KEY])]
        kind = field.type
        children = (
            [kind.value_field]
            if pa.types.is_list(kind)
            else [kind.key_field, kind.item_field]
            if pa.types.is_map(kind)
            else list(kind)
            if pa.types.is_struct(kind)
            else []
        )
        return own + [n for child in children for n in ids(child)]

    assert sorted(n for field in written for n in ids(field)) == sorted(index_by_id(iceberg).keys())
    assert (
        int(written.field("$city").metadata[FIELD_ID_KEY]) == iceberg.find_field("$city").field_id
    )


def test_a_commit_that_keeps_losing_fails_by_name_and_deletes_its_files(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = pa.table({"n": pa.array([1, 2], pa.int64())})
    waits: list[float] = []
    writer = IcebergDayWriter(
        catalog, "lake.lost", DAY, identity=COHORT, attempts=3, sleep=waits.append
    )
    writer.open(data.schema)
    writer.write(data)
    paths = list(writer.paths)

    def lose(self: Transaction) -> None:
        raise CommitFailedException("another writer committed first")

    monkeypatch.setattr(Transaction, "commit_transaction", lose)
    with pytest.raises(IcebergCommitError, match="lost to other writers 3 times") as caught:
        writer.commit()
    assert isinstance(caught.value, AnalyticsError)
    assert len(waits) == 2
    writer.abort()
    table = catalog.load_table("lake.lost")
    assert not any(table.io.new_input(path).exists() for path in paths)


def test_a_commit_of_unknown_outcome_keeps_its_files(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = pa.table({"n": pa.array([1, 2], pa.int64())})
    writer = IcebergDayWriter(catalog, "lake.unknown", DAY, identity=COHORT)
    writer.open(data.schema)
    writer.write(data)

    def lost_answer(self: Transaction) -> None:
        raise OSError("connection reset while the catalog committed")

    monkeypatch.setattr(Transaction, "commit_transaction", lost_answer)
    with pytest.raises(OSError, match="connection reset"):
        writer.commit()
    writer.abort()  # the commit may have landed: its files must stay
    table = catalog.load_table("lake.unknown")
    assert all(table.io.new_input(path).exists() for path in writer.paths)


def test_a_new_file_starts_at_the_target_size(catalog: Catalog) -> None:
    data = pa.table({"n": pa.array(range(1000), pa.int64())})
    writer = IcebergDayWriter(catalog, "lake.files", DAY, identity=COHORT, target_file_bytes=3000)
    writer.open(data.schema)
    for batch in data.to_batches(max_chunksize=100):  # 800 bytes, ~1900 with identity and day
        writer.write(batch)
    summary = writer.commit()
    assert summary["data_files"] == 5  # 2 batches fill a file
    table = catalog.load_table("lake.files")
    assert sorted(table.scan().to_arrow()["n"].to_pylist()) == list(range(1000))
    assert len(table.snapshots()) == 1


def _scores(first: int, values: list[int] | list[float]) -> pa.Table:
    kind = pa.float64() if any(isinstance(v, float) for v in values) else pa.int64()
    return pa.table(
        {
            "user_id": pa.array(range(first, first + len(values)), pa.int64()),
            "name": [f"user {n}" for n in range(first, first + len(values))],
            "score": pa.array(values, kind),
        }
    )


def _data_files(tmp_path: Path) -> set[str]:
    return {path.name for path in (tmp_path / "wh").rglob("*.parquet")}


def test_a_stream_writes_its_data_files_once_and_commits_when_it_ends(
    catalog: Catalog, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    writer = IcebergDayWriter(catalog, "lake.streamed", DAY, identity=COHORT)
    first = _scores(0, [1, 2, 3])
    with writer.stream(first.schema, row_group_rows=2, row_group_bytes=1 << 30) as stream:
        stream.add(first)
        stream.add(_scores(3, [4, 5, 6]))
    assert writer.summary is not None and writer.summary["rows"] == 6
    table = catalog.load_table("lake.streamed")
    back = table.scan().to_arrow().sort_by("user_id")
    assert back["score"].to_pylist() == [1, 2, 3, 4, 5, 6]
    assert str(table.schema().find_field("score").field_type) == "long"
    (path,) = writer.paths
    written = pq.ParquetFile(path.removeprefix("file://")).metadata
    assert written.num_row_groups == 3  # the stream's row groups, written as they came
    columns = written.schema.to_arrow_schema().names

    def has_statistics(name: str) -> bool:
        column = written.row_group(0).column(columns.index(name))
        return column.is_stats_set and column.statistics.has_min_max

    # every column carries statistics: the table keeps each one's null count and bounds
    assert {name: has_statistics(name) for name in columns} == dict.fromkeys(columns, True)
    (data_file,) = [task.file for task in table.scan().plan_files()]
    name_id = table.schema().find_field("name").field_id
    assert data_file.null_value_counts[name_id] == 0
    assert (data_file.lower_bounds[name_id], data_file.upper_bounds[name_id]) == (
        b"user 0",
        b"user 5",
    )
    assert not [r for r in caplog.records if "statistics missing" in r.getMessage()]
    assert writer.bytes_written == sum(
        p.stat().st_size for p in (tmp_path / "wh").rglob("*.parquet")
    )


def test_a_number_column_that_turns_double_after_a_file_was_written_becomes_double(
    catalog: Catalog, tmp_path: Path
) -> None:
    """As a Parquet object's earlier segments are: the files written before are rewritten in
    the wider schema, and the table's column (added by this writer) becomes double."""
    writer = IcebergDayWriter(catalog, "lake.widened", DAY, identity=COHORT)
    first = _scores(0, [1, 2])
    with writer.stream(first.schema, row_group_rows=2, row_group_bytes=1 << 30) as stream:
        stream.add(first)
        stream.flush()  # the first row group is in a data file
        stream.add(_scores(2, [3.5, 4.0]))
    table = catalog.load_table("lake.widened")
    assert str(table.schema().find_field("score").field_type) == "double"
    back = table.scan().to_arrow().sort_by("user_id")
    assert back["score"].to_pylist() == [1.0, 2.0, 3.5, 4.0]
    assert _data_files(tmp_path) == {p.rsplit("/", 1)[-1] for p in writer.paths}  # none left


def test_batches_written_without_a_stream_widen_the_same_way(
    catalog: Catalog, tmp_path: Path
) -> None:
    """write() and commit() alone (no stream): an int64 column that turns double in a later
    batch is rewritten and committed as double, with no data file left behind."""
    writer = IcebergDayWriter(catalog, "lake.written", DAY, identity=COHORT, target_file_bytes=1)
    writer.open(_scores(0, [1, 2]).schema)
    writer.write(_scores(0, [1, 2]))
    writer.write(_scores(2, [3.5]))  # a new file: the first holds the narrower schema
    writer.commit()
    table = catalog.load_table("lake.written")
    assert table.scan().to_arrow().sort_by("user_id")["score"].to_pylist() == [1.0, 2.0, 3.5]
    assert _data_files(tmp_path) == {p.rsplit("/", 1)[-1] for p in writer.paths}


def test_a_column_the_table_held_as_long_does_not_turn_double(catalog: Catalog) -> None:
    IcebergDayWriter(catalog, "lake.kept", DAY, identity=COHORT).replace(
        _scores(0, [1]).schema, [_scores(0, [1])]
    )
    writer = IcebergDayWriter(catalog, "lake.kept", DAY + dt.timedelta(1), identity=COHORT)
    first = _scores(10, [1, 2])
    with (
        pytest.raises(IcebergSchemaError, match="'score' is held as int64"),
        writer.stream(first.schema, row_group_rows=2, row_group_bytes=1 << 30) as stream,
    ):
        stream.add(first)
        stream.flush()
        stream.add(_scores(12, [3.5, 4.0]))
        stream.flush()
    table = catalog.load_table("lake.kept")
    assert table.scan().to_arrow()["user_id"].to_pylist() == [0]


def test_a_stream_that_fails_leaves_no_data_file_and_no_commit(
    catalog: Catalog, tmp_path: Path
) -> None:
    writer = IcebergDayWriter(catalog, "lake.failed", DAY, identity=COHORT)
    first = _scores(0, [1, 2, 3])
    with (
        pytest.raises(RuntimeError, match="stream cut"),
        writer.stream(first.schema, row_group_rows=2, row_group_bytes=1 << 30) as stream,
    ):
        stream.add(first)
        stream.flush()
        raise RuntimeError("stream cut")
    assert _data_files(tmp_path) == set()
    assert catalog.load_table("lake.failed").current_snapshot() is None
    assert writer.summary is None


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("write.target-file-size-bytes", "²"),
        ("write.target-file-size-bytes", "1" * 5000),
        ("write.parquet.compression-level", "-²"),
        ("write.parquet.compression-level", "9" * 20),
        ("write.parquet.compression-codec", "nonesuch"),
    ],
)
def test_an_unusable_table_property_is_refused_by_name_and_leaves_nothing(
    catalog: Catalog, tmp_path: Path, key: str, value: str
) -> None:
    """A ``²``, 5,000 digits or a level past a C long let a bare ValueError or OverflowError
    out (an unknown codec, pyarrow's error) after the table was opened."""
    data = pa.table({"n": pa.array([1, 2], pa.int64())})
    IcebergDayWriter(catalog, "lake.props", DAY, identity=COHORT).replace(data.schema, [data])
    table = catalog.load_table("lake.props")
    with table.transaction() as transaction:
        transaction.set_properties({key: value})
    before = _data_files(tmp_path)
    writer = IcebergDayWriter(catalog, "lake.props", DAY, identity=COHORT)
    with pytest.raises(AnalyticsError, match=f"table property {key}"):
        writer.replace(data.schema, [data])
    assert _data_files(tmp_path) == before
    assert len(catalog.load_table("lake.props").snapshots()) == 1


@pytest.mark.parametrize("when", ["before the open", "before the commit"])
def test_a_partition_columns_metrics_turned_off_by_another_writer_are_refused(
    catalog: Catalog, tmp_path: Path, when: str
) -> None:
    """Without ``dt``'s bounds the files were committed in partition (null, null), or a bare
    TypeError escaped: refused by name, whenever the property was set, with nothing kept."""
    data = pa.table({"n": pa.array([1, 2], pa.int64())})
    IcebergDayWriter(catalog, "lake.metrics", DAY, identity=COHORT).replace(data.schema, [data])
    before = _data_files(tmp_path)

    def metrics_off() -> None:
        with catalog.load_table("lake.metrics").transaction() as transaction:
            transaction.set_properties({"write.metadata.metrics.column.dt": "none"})

    writer = IcebergDayWriter(catalog, "lake.metrics", DAY, identity=COHORT)
    if when == "before the commit":
        writer.open(data.schema)
        writer.write(data)
    metrics_off()
    with pytest.raises(IcebergLayoutError, match=r"write\.metadata\.metrics\.column\.dt='none'"):
        if when == "before the open":
            writer.replace(data.schema, [data])
        else:
            writer.close(data.schema)
    assert _data_files(tmp_path) == before
    assert len(catalog.load_table("lake.metrics").snapshots()) == 1


def test_a_writer_of_a_nested_namespace_the_catalog_lacks_makes_nothing(
    catalog: Catalog,
) -> None:
    data = pa.table({"n": pa.array([1], pa.int64())})
    writer = IcebergDayWriter(catalog, "a.b.c", DAY, identity=COHORT)
    with pytest.raises(AnalyticsError, match="SqlCatalog has no nested namespaces"):
        writer.replace(data.schema, [data])
    assert catalog.list_namespaces() == []


def _others(filters: list[Any]) -> list[Any]:
    """The warning filters but the writer's own."""
    return [f for f in filters if f[1] is None or "did not match" not in f[1].pattern]


def test_concurrent_first_commits_of_days_warn_nothing_and_keep_the_warning_filters(
    catalog: Catalog,
) -> None:
    """A day's first commit deletes nothing, which pyiceberg warns of; the writer leaves that
    warning out for its own calls, also when threads commit at once (``catch_warnings`` around
    each call leaked it, and threads restored each other's filters), and leaves the other
    filters as they were."""
    import threading
    import warnings

    data = pa.table({"n": pa.array([1, 2], pa.int64())})
    IcebergDayWriter(catalog, "lake.days", DAY, identity=COHORT).replace(data.schema, [data])
    days = [DAY + dt.timedelta(days=n) for n in range(1, 9)]
    start = threading.Barrier(len(days))
    errors: list[BaseException] = []

    def first_run(day: dt.date) -> None:
        try:
            writer = IcebergDayWriter(catalog, "lake.days", day, identity=COHORT, attempts=20)
            writer.open(data.schema)
            writer.write(data)
            start.wait()
            writer.commit()
        except BaseException as error:  # shown by the assertion below
            errors.append(error)

    filters = _others(warnings.filters)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kept = _others(warnings.filters)
        threads = [threading.Thread(target=first_run, args=(day,)) for day in days]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert _others(warnings.filters) == kept
    assert not errors, errors
    assert [str(w.message) for w in caught if "did not match" in str(w.message)] == []
    assert _others(warnings.filters) == filters
    rows = catalog.load_table("lake.days").scan().to_arrow()
    assert sorted(set(rows["dt"].to_pylist())) == [DAY, *days]


def test_a_first_commit_succeeds_where_warnings_are_errors(catalog: Catalog) -> None:
    """Under ``simplefilter("error")`` added after the writer's filter, pyiceberg's warning of
    a delete that matched nothing must not fail the commit."""
    import warnings

    data = pa.table({"n": pa.array([1, 2], pa.int64())})
    IcebergDayWriter(catalog, "lake.strict", DAY, identity=COHORT).replace(data.schema, [data])
    later = DAY + dt.timedelta(days=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = IcebergDayWriter(catalog, "lake.strict", later, identity=COHORT).replace(
            data.schema, [data]
        )
    assert summary["rows"] == 2
