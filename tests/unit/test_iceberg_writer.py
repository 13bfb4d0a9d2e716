"""The Iceberg day writer's own rules, on a SQL catalog in a temporary folder: nested columns
keep their field ids, a lost commit ends in IcebergCommitError with the files deleted, and a
commit of unknown outcome keeps them."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.schema import index_by_id
from pyiceberg.table import Transaction

from airflow_provider_analytics.core.errors import AnalyticsError
from airflow_provider_analytics.core.identity import Identity
from airflow_provider_analytics.sinks.iceberg import (
    FIELD_ID_KEY,
    IcebergCommitError,
    IcebergDayWriter,
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
