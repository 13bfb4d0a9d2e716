"""The default column names load unquoted into DuckDB and into a real PostgreSQL, from the
Parquet output of a multi-cohort prefix and from an Iceberg table holding two cohorts.

The SQL below is written by hand, with every column name unquoted, the way an analyst or a
warehouse load job writes it; the PostgreSQL table's DDL is derived here from the Arrow types
(an independent mapping, not the package's).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from analytics_emulator import catalog as emulator_catalog

from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.output.iceberg import catalog_properties, open_catalog
from tests.reliability.connections import use_connection
from tests.run_context import run_context

if TYPE_CHECKING:
    from pathlib import Path

    from analytics_emulator.server import EmulatorServer

pytestmark = pytest.mark.integration

DAY = "2024-01-15"
COHORTS = ("cohort_small", "cohort_tiny")
TAGS = ["tag.tag_rfm"]


def _pg_type(arrow_type: pa.DataType) -> str:
    """PostgreSQL's type for an Arrow type (the test's own mapping)."""
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return _pg_type(arrow_type.value_type) + "[]"
    if pa.types.is_timestamp(arrow_type):
        return "timestamptz" if arrow_type.tz else "timestamp"
    simple = {
        pa.int64(): "bigint",
        pa.int32(): "integer",
        pa.float64(): "double precision",
        pa.bool_(): "boolean",
        pa.string(): "text",
        pa.large_string(): "text",
        pa.date32(): "date",
    }
    for known, name in simple.items():
        if arrow_type.equals(known):
            return name
    if pa.types.is_decimal(arrow_type):
        return f"numeric({arrow_type.precision},{arrow_type.scale})"
    raise AssertionError(f"no PostgreSQL type for {arrow_type}")


def _export_both(**destination: Any) -> list[dict[str, Any]]:
    results = []
    for code in COHORTS:
        properties = [*emulator_catalog.default_user_property_ids(), *TAGS]
        operator = CohortExportToParquetOperator(
            task_id=f"users_{code}", cohort_code=code, properties=properties, **destination
        )
        results.append(operator.execute(run_context(DAY)))  # type: ignore[arg-type]
    return results


def _check_unquoted_duckdb(rows: pa.Table, expected: dict[str, int]) -> None:
    """Every column selected by its bare name in DuckDB; the rows per cohort as exported."""
    names = [name for name in rows.column_names if name != "dt"]
    connection = duckdb.connect()
    connection.register("loaded", rows)
    connection.execute("CREATE TABLE users AS SELECT * FROM loaded")
    selected = connection.execute(f"SELECT {', '.join(names)} FROM users").to_arrow_table()
    assert selected.column_names == names
    counts = connection.execute(
        "SELECT cohort_code, count(*) FROM users GROUP BY cohort_code ORDER BY cohort_code"
    ).fetchall()
    assert dict(counts) == expected


def _check_unquoted_postgres(rows: pa.Table, uri: str, table: str, expected: dict[str, int]):
    """CREATE TABLE and INSERT with bare names; the values read back equal the Parquet's."""
    import psycopg2
    from psycopg2.extras import execute_values
    from sqlalchemy.engine import make_url

    url = make_url(uri)
    names = rows.column_names
    columns = ", ".join(f"{field.name} {_pg_type(field.type)}" for field in rows.schema)
    connection = psycopg2.connect(
        host=url.host, port=url.port, user=url.username, dbname=url.database
    )
    try:
        with connection, connection.cursor() as cursor:
            cursor.execute(f"CREATE TABLE {table} ({columns})")
            values = [tuple(row[name] for name in names) for row in rows.to_pylist()]
            execute_values(cursor, f"INSERT INTO {table} ({', '.join(names)}) VALUES %s", values)
            cursor.execute(
                f"SELECT cohort_code, count(*) FROM {table} GROUP BY cohort_code "
                "ORDER BY cohort_code"
            )
            assert dict(cursor.fetchall()) == expected
            cursor.execute(f"SELECT {', '.join(names)} FROM {table}")
            assert [column.name for column in cursor.description] == names
            back = cursor.fetchall()
    finally:
        connection.close()
    key = names.index("distinct_id")
    assert sorted(back, key=lambda row: (row[names.index("cohort_code")], row[key])) == sorted(
        values, key=lambda row: (row[names.index("cohort_code")], row[key])
    )


def test_a_multi_cohort_prefix_loads_unquoted(
    emulator: EmulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_uri: str
) -> None:
    use_connection(monkeypatch, emulator, timezone=emulator_catalog.PROJECT_TIMEZONE)
    results = _export_both(destination=f"{tmp_path.as_uri()}/users/")
    expected = {result["cohort_code"]: result["rows"] for result in results}
    assert all(rows > 0 for rows in expected.values())
    # the path carries the identity: a Hive-partitioned read gets cohort_code and dt
    dataset = ds.dataset(tmp_path / "users", format="parquet", partitioning="hive")
    rows = dataset.to_table()
    assert {f"cohort_code={code}" for code in COHORTS} == {
        path.name for path in (tmp_path / "users").iterdir()
    }
    for name in rows.column_names:
        assert name == name.lower() and name.replace("_", "").isalnum(), name
    rows = rows.drop_columns(["dt"])
    _check_unquoted_duckdb(rows, expected)
    _check_unquoted_postgres(rows, postgres_uri, "cohort_users_parquet", expected)


def test_an_iceberg_table_of_two_cohorts_loads_unquoted(
    emulator: EmulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_uri: str
) -> None:
    use_connection(monkeypatch, emulator, timezone=emulator_catalog.PROJECT_TIMEZONE)
    extra = {
        "type": "sql",
        "uri": f"sqlite:///{tmp_path}/catalog.db",
        "warehouse": f"file://{tmp_path}/warehouse",
    }
    monkeypatch.setenv(
        "AIRFLOW_CONN_ICEBERG_DEFAULT", json.dumps({"conn_type": "iceberg", "extra": extra})
    )
    results = _export_both(iceberg_table="analytics.cohort_users")
    expected = {result["cohort_code"]: result["rows"] for result in results}
    table = open_catalog("iceberg_default", catalog_properties(extra=extra)).load_table(
        "analytics.cohort_users"
    )
    rows = table.scan().to_arrow()
    assert rows.column("dt").unique().to_pylist() == [dt.date.fromisoformat(DAY)]
    rows = rows.drop_columns(["dt"])
    _check_unquoted_duckdb(rows, expected)
    _check_unquoted_postgres(rows, postgres_uri, "cohort_users_iceberg", expected)
