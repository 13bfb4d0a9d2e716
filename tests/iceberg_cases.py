"""The cases every Iceberg catalog is tested with, written once (tests/integration uses them
against SQL on SQLite and PostgreSQL, REST and Glue, on local files and on S3).

- a rerun of a day replaces exactly that day, in one catalog commit;
- schema evolution adds a column without rewriting old files, and a column whose type cannot
  evolve is refused by name before anything is written;
- two days committed at once both land (pyiceberg's own retry, or the writer's);
- two cohorts creating one new table at once both land (the loser of the creation takes the
  table as created).
"""

from __future__ import annotations

import datetime as dt
import threading
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from pyiceberg.table.snapshots import Operation

from airflow_provider_analytics.core.identity import Identity
from airflow_provider_analytics.output.iceberg import (
    COMMIT_PROPERTY,
    DAY_PROPERTY,
    IcebergDayWriter,
    IcebergSchemaError,
)

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

DAYS = [dt.date(2024, 1, 10), dt.date(2024, 1, 11), dt.date(2024, 1, 12)]


def day_rows(table: Table, day: dt.date) -> pa.Table:
    rows = table.scan(row_filter=f"dt = '{day.isoformat()}'").to_arrow()
    flat = [field.name for field in rows.schema if not pa.types.is_nested(field.type)]
    return rows.sort_by([(name, "ascending") for name in sorted(flat)])


def day_files(table: Table, day: dt.date) -> set[str]:
    scan = table.scan(row_filter=f"dt = '{day.isoformat()}'")
    return {task.file.file_path for task in scan.plan_files()}


COHORT = Identity("cohort_code", "vip")
"""The identity the cases write under, unless they name another."""


def write_day(
    catalog: Catalog,
    identifier: str,
    day: dt.date,
    data: pa.Table,
    identity: Identity = COHORT,
) -> dict[str, Any]:
    writer = IcebergDayWriter(catalog, identifier, day, identity=identity)
    writer.open(data.schema)
    try:
        for batch in data.to_batches(max_chunksize=2):
            writer.write(batch)
        return writer.commit()
    except BaseException:
        writer.abort()
        raise


def users(first: int, count: int, **columns: pa.Array) -> pa.Table:
    ids = pa.array(range(first, first + count), pa.int64())
    return pa.table({"user_id": ids, "name": [f"user {n}" for n in ids.to_pylist()], **columns})


def case_rerun_replaces_its_day(catalog: Catalog, identifier: str) -> None:
    """Three days, then a rerun of the middle one with other rows."""
    for n, day in enumerate(DAYS):
        write_day(catalog, identifier, day, users(n * 100, 5))
    table = catalog.load_table(identifier)
    before = {day: (day_rows(table, day), day_files(table, day)) for day in DAYS}
    log_before = len(table.metadata.metadata_log)

    summary = write_day(catalog, identifier, DAYS[1], users(1000, 3))

    table = catalog.load_table(identifier)
    assert summary["rows"] == 3
    assert summary["replaced_files"] == 1
    assert day_rows(table, DAYS[1])["user_id"].to_pylist() == [1000, 1001, 1002]
    assert day_files(table, DAYS[1]).isdisjoint(before[DAYS[1]][1])
    for day in (DAYS[0], DAYS[2]):
        assert day_files(table, day) == before[day][1]
        assert day_rows(table, day).equals(before[day][0])
    # one catalog commit (one new metadata file) holds the DELETE and the APPEND, which share
    # the writer's commit id
    delete, append = table.snapshots()[-2:]
    assert (delete.summary.operation, append.summary.operation) == (
        Operation.DELETE,
        Operation.APPEND,
    )
    assert delete.summary[COMMIT_PROPERTY] == append.summary[COMMIT_PROPERTY]
    assert delete.summary[DAY_PROPERTY] == append.summary[DAY_PROPERTY] == DAYS[1].isoformat()
    assert len(table.metadata.metadata_log) == log_before + 1
    assert table.scan().to_arrow().num_rows == 13


def case_schema_evolution(catalog: Catalog, identifier: str) -> None:
    """A column added on the second day; a type that cannot evolve refused on the third."""
    write_day(catalog, identifier, DAYS[0], users(0, 4))
    first_files = day_files(catalog.load_table(identifier), DAYS[0])
    score = pa.array([0.5, 1.5, None, 2.5], pa.float64())
    write_day(catalog, identifier, DAYS[1], users(10, 4, score=score))

    table = catalog.load_table(identifier)
    assert table.schema().column_names == ["user_id", "name", "cohort_code", "dt", "score"]
    assert day_files(table, DAYS[0]) == first_files  # not rewritten
    assert day_rows(table, DAYS[0])["score"].null_count == 4
    assert day_rows(table, DAYS[1])["score"].to_pylist() == [0.5, 1.5, None, 2.5]

    snapshots = len(table.snapshots())
    wrong = users(20, 2).set_column(1, "name", pa.array([1, 2], pa.int64()))
    with pytest.raises(IcebergSchemaError, match="name"):
        write_day(catalog, identifier, DAYS[2], wrong)
    after = catalog.load_table(identifier)
    assert len(after.snapshots()) == snapshots
    assert after.schema() == table.schema()
    assert day_rows(after, DAYS[2]).num_rows == 0


class RacingCatalog:
    """A catalog whose first ``load_table`` in each committing thread waits for the other
    thread's, so both commit against the same table state and one of them must retry."""

    def __init__(self, catalog: Catalog, parties: int) -> None:
        self._catalog = catalog
        self._barrier = threading.Barrier(parties)
        self._waited = threading.local()
        self.armed = False

    def load_table(self, identifier: str) -> Any:
        table = self._catalog.load_table(identifier)
        if self.armed and not getattr(self._waited, "done", False):
            self._waited.done = True
            self._barrier.wait(timeout=30)
        return table

    def __getattr__(self, name: str) -> Any:
        return getattr(self._catalog, name)


def commit_at_once(writers: dict[Any, IcebergDayWriter]) -> dict[Any, dict[str, Any]]:
    """Commit every writer in a thread of its own, all at once; their summaries by key.
    Any writer's failure fails the case."""
    results: dict[Any, dict[str, Any]] = {}
    errors: list[BaseException] = []

    def commit(key: Any) -> None:
        try:
            results[key] = writers[key].commit()
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=commit, args=(key,)) for key in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    return results


def case_two_days_commit_at_once(
    catalog: Catalog, identifier: str, *, pyiceberg_retries: bool
) -> list[dict[str, Any]]:
    """Two days' writers commit against the same table state; both days land.

    With ``pyiceberg_retries`` the table keeps pyiceberg's default commit retries (the loser's
    transaction is replayed inside ``commit_transaction``); without, the table property
    ``commit.retry.num-retries`` is 0 and the writer's own second attempt does it.
    """
    seed = users(0, 1)
    write_day(catalog, identifier, DAYS[2], seed)  # the table exists, with one day
    if not pyiceberg_retries:
        with catalog.load_table(identifier).transaction() as transaction:
            transaction.set_properties({"commit.retry.num-retries": "0"})
    racing = RacingCatalog(catalog, parties=2)
    data = {day: users(n * 10, 5) for n, day in enumerate(DAYS[:2])}
    writers = {
        day: IcebergDayWriter(racing, identifier, day, identity=COHORT)  # type: ignore[arg-type]
        for day in data
    }
    for day, writer in writers.items():
        writer.open(data[day].schema)
        writer.write(data[day])
    racing.armed = True
    results = commit_at_once(writers)
    table = catalog.load_table(identifier)
    for day in DAYS[:2]:
        assert day_rows(table, day)["user_id"].to_pylist() == data[day]["user_id"].to_pylist()
    assert day_rows(table, DAYS[2])["user_id"].to_pylist() == [0]
    attempts = sorted(result["commit_attempts"] for result in results.values())
    assert attempts == ([1, 1] if pyiceberg_retries else [1, 2])
    return list(results.values())


def table_files(table: Table) -> set[str]:
    """Every file under the table's location, as the maintenance module spells them."""
    from airflow_provider_analytics.output.iceberg_maintenance import file_key, list_files

    return {file_key(location) for location, _ in list_files(table.io, table.location())}


def case_killed_commit_is_cleaned_up(catalog: Catalog, identifier: str) -> None:
    """A writer SIGKILLed inside its commit leaves data files, manifests and a manifest list
    that no snapshot reaches; the maintenance operator keeps them while they are younger than
    its safety age, then removes them and every file only expired snapshots reached, and
    nothing the table reaches.

    Needs the ``iceberg_default`` connection to name ``catalog``.
    """
    import subprocess
    import sys

    from airflow_provider_analytics.operators.iceberg_maintenance import (
        IcebergMaintenanceOperator,
    )
    from airflow_provider_analytics.output.iceberg_maintenance import reachable_files

    for n, day in enumerate(DAYS[:2]):
        write_day(catalog, identifier, day, users(n * 100, 5))
    write_day(catalog, identifier, DAYS[0], users(500, 2))  # a rerun: DAYS[0]'s first file is
    # now reached only by older snapshots
    table = catalog.load_table(identifier)
    before = table_files(table)
    rows_before = table.scan().to_arrow().sort_by("user_id")

    child = subprocess.run(
        [sys.executable, "-m", "tests.iceberg_killed_commit", identifier, DAYS[2].isoformat(), "9"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == -9, child.stderr  # SIGKILL, inside the commit
    table = catalog.load_table(identifier)
    assert len(table.snapshots()) == 4  # nothing landed
    left = table_files(table) - before
    assert sum(path.endswith(".parquet") for path in left) == 3  # the killed run's data files
    assert any(path.endswith(".avro") for path in left)  # and its manifests
    assert left.isdisjoint(reachable_files(table))

    def maintain(**kwargs: Any) -> dict[str, Any]:
        operator = IcebergMaintenanceOperator(
            task_id="maintain", iceberg_tables=[identifier], **kwargs
        )
        return operator.execute({})["tables"][identifier]  # type: ignore[arg-type]

    # defaults: a 5-day retention and a 3-day safety age keep everything (all of it is new)
    kept = maintain()
    assert (kept["expired_snapshots"], kept["orphan_files_removed"]) == (0, 0)
    assert table_files(catalog.load_table(identifier)) == before | left
    report = maintain(
        snapshot_retention=dt.timedelta(0), orphan_file_age=dt.timedelta(0), report_only=True
    )
    assert report["expired_snapshots"] == 3 and report["orphan_files_removed"] >= len(left)
    assert table_files(catalog.load_table(identifier)) == before | left  # nothing changed

    done = maintain(snapshot_retention=dt.timedelta(0), orphan_file_age=dt.timedelta(0))

    table = catalog.load_table(identifier)
    assert done["expired_snapshots"] == 3 and done["snapshots_kept"] == 1
    assert len(table.snapshots()) == 1
    remaining = table_files(table)
    reachable = reachable_files(table)
    assert remaining.isdisjoint(left)  # the killed run's files are gone
    assert remaining <= reachable  # no orphan is left
    assert reachable <= remaining  # nothing the table reaches was removed
    assert sum(path.endswith(".parquet") for path in remaining) == 2  # one file per day
    assert table.scan().to_arrow().sort_by("user_id").equals(rows_before)
    again = maintain(snapshot_retention=dt.timedelta(0), orphan_file_age=dt.timedelta(0))
    assert (again["expired_snapshots"], again["orphan_files_removed"]) == (0, 0)


def identity_rows(table: Table, identity: Identity, day: dt.date) -> list[int]:
    rows = table.scan(
        row_filter=f"{identity.column} = '{identity.value}' and dt = '{day.isoformat()}'"
    ).to_arrow()
    return sorted(rows["user_id"].to_pylist())


def case_two_identities_commit_at_once(catalog: Catalog, identifier: str) -> None:
    """Two cohorts' writers of one day commit against the same table state: both land, and a
    rerun of one replaces only its own rows."""
    other = Identity("cohort_code", "churned")
    write_day(catalog, identifier, DAYS[0], users(0, 1))  # the table exists
    racing = RacingCatalog(catalog, parties=2)
    data = {COHORT: users(100, 4), other: users(200, 3)}
    writers = {
        identity: IcebergDayWriter(racing, identifier, DAYS[1], identity=identity)  # type: ignore[arg-type]
        for identity in data
    }
    for identity, writer in writers.items():
        writer.open(data[identity].schema)
        writer.write(data[identity])
    racing.armed = True
    commit_at_once(writers)
    table = catalog.load_table(identifier)
    assert identity_rows(table, COHORT, DAYS[1]) == [100, 101, 102, 103]
    assert identity_rows(table, other, DAYS[1]) == [200, 201, 202]

    write_day(catalog, identifier, DAYS[1], users(300, 2), identity=other)  # a rerun of one
    table = catalog.load_table(identifier)
    assert identity_rows(table, COHORT, DAYS[1]) == [100, 101, 102, 103]
    assert identity_rows(table, other, DAYS[1]) == [300, 301]
    assert identity_rows(table, COHORT, DAYS[0]) == [0]
    assert table.scan().to_arrow().num_rows == 7


def case_old_layout_is_refused_then_migrated(catalog: Catalog, identifier: str) -> None:
    """A table partitioned by ``dt`` alone (an earlier version's) is refused by name with
    nothing written; after the migration it holds its rows under the identity, and another
    cohort's day can join it."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import DateType, LongType, NestedField

    from airflow_provider_analytics.output.iceberg import IcebergLayoutError
    from airflow_provider_analytics.output.iceberg_migration import migrate_to_identity

    schema = Schema(
        NestedField(1, "user_id", LongType(), required=False),
        NestedField(2, "dt", DateType(), required=True),
    )
    catalog.create_namespace_if_not_exists(identifier.rpartition(".")[0])
    with (
        catalog.create_table_transaction(identifier, schema=schema) as create,
        create.update_spec() as spec,
    ):
        spec.add_identity("dt")
    old = catalog.load_table(identifier)
    arrow_schema = pa.schema([("user_id", pa.int64()), pa.field("dt", pa.date32(), False)])
    for n, day in enumerate(DAYS[:2]):
        rows = {"user_id": [n * 10, n * 10 + 1], "dt": [day, day]}
        old.append(pa.table(rows, schema=arrow_schema))
    snapshots = len(catalog.load_table(identifier).snapshots())

    with pytest.raises(IcebergLayoutError, match="iceberg_migration") as refused:
        write_day(catalog, identifier, DAYS[0], users(500, 1))
    assert "cohort_code" in str(refused.value)
    assert len(catalog.load_table(identifier).snapshots()) == snapshots  # nothing written

    summary = migrate_to_identity(catalog, identifier, COHORT)
    assert (summary["rows"], summary["days"]) == (4, [DAYS[0].isoformat(), DAYS[1].isoformat()])
    table = catalog.load_table(identifier)
    assert identity_rows(table, COHORT, DAYS[0]) == [0, 1]
    assert identity_rows(table, COHORT, DAYS[1]) == [10, 11]
    assert table.scan().to_arrow().num_rows == 4

    other = Identity("cohort_code", "churned")
    write_day(catalog, identifier, DAYS[0], users(700, 2), identity=other)
    write_day(catalog, identifier, DAYS[0], users(900, 1))  # a rerun of the migrated cohort
    table = catalog.load_table(identifier)
    assert identity_rows(table, COHORT, DAYS[0]) == [900]
    assert identity_rows(table, other, DAYS[0]) == [700, 701]
    assert identity_rows(table, COHORT, DAYS[1]) == [10, 11]
    assert migrate_to_identity(catalog, identifier, COHORT)["migrated"] is False


class CreatedMeanwhile:
    """A catalog through which a writer finds its table missing, and another writer
    (``other``) creates it between that look and this writer's own creation."""

    def __init__(self, catalog: Catalog, other: Any) -> None:
        self._catalog = catalog
        self._other = other

    def create_table_transaction(self, *args: Any, **kwargs: Any) -> Any:
        self._other()
        return self._catalog.create_table_transaction(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._catalog, name)


def case_two_writers_create_one_table(catalog: Catalog, identifier: str) -> None:
    """Two cohorts' writers find a new table missing and both create it: the one that
    creates second takes the table as the first created it, adds the column it brings, and
    commits; both cohorts' rows land."""
    other = Identity("cohort_code", "churned")
    first = CreatedMeanwhile(
        catalog, lambda: write_day(catalog, identifier, DAYS[0], users(0, 3), identity=other)
    )
    score = pa.array([0.5, None], pa.float64())
    summary = write_day(first, identifier, DAYS[0], users(10, 2, score=score))  # type: ignore[arg-type]

    table = catalog.load_table(identifier)
    assert summary["rows"] == 2
    assert table.schema().column_names == ["user_id", "name", "cohort_code", "dt", "score"]
    assert identity_rows(table, other, DAYS[0]) == [0, 1, 2]
    assert identity_rows(table, COHORT, DAYS[0]) == [10, 11]
    assert len(table.snapshots()) == 2  # one commit each (a DELETE of nothing is no snapshot)


def case_two_cohorts_create_one_table_at_once(catalog: Catalog, identifier: str) -> None:
    """Cohorts exported at the same moment into one new table (``.expand(cohort_code=...)``):
    every writer starts together, each finds the table missing; every cohort lands."""
    cohorts = [Identity("cohort_code", f"c{n}") for n in range(4)]
    start = threading.Barrier(len(cohorts))
    errors: list[BaseException] = []

    def export(n: int, identity: Identity) -> None:
        try:
            start.wait(timeout=30)
            write_day(catalog, identifier, DAYS[0], users(n * 10, 2), identity=identity)
        except BaseException as error:
            errors.append(error)

    threads = [
        threading.Thread(target=export, args=(n, identity)) for n, identity in enumerate(cohorts)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    table = catalog.load_table(identifier)
    for n, identity in enumerate(cohorts):
        assert identity_rows(table, identity, DAYS[0]) == [n * 10, n * 10 + 1]
