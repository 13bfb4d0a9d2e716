"""Writers of several tables opening one new SQL catalog at the same moment, as the first run of
a DAG whose Iceberg writers run in parallel does (``example_dags/analytics_iceberg.py`` under
the Celery stack): each creates the catalog's own tables, the namespace and its table at once.
PostgreSQL fails the losers' DDL and the namespace's second insert on their keys; every writer
must still commit its table."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy

from airflow_provider_analytics.output.iceberg import open_catalog
from tests.iceberg_cases import DAYS, day_rows, users, write_day

pytestmark = pytest.mark.integration

WRITERS = 6


def _new_database(postgres_uri: str) -> str:
    """A database of its own on the tests' cluster: no catalog tables in it yet."""
    name = f"fresh_{uuid.uuid4().hex[:10]}"
    engine = sqlalchemy.create_engine(postgres_uri, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(sqlalchemy.text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return f"{postgres_uri.rsplit('/', 1)[0]}/{name}"


@pytest.mark.parametrize("round_", range(3))
def test_writers_of_several_tables_open_a_new_catalog_at_once(
    postgres_uri: str, tmp_path, round_: int
) -> None:
    uri = _new_database(postgres_uri)
    properties = {"type": "sql", "uri": uri, "warehouse": tmp_path.as_uri()}
    start = threading.Barrier(WRITERS)

    def write(index: int) -> None:
        start.wait()  # every writer opens the new catalog at the same moment
        catalog = open_catalog("analytics_iceberg", properties)
        write_day(catalog, f"analytics.table_{index}", DAYS[0], users(index * 10, 3))

    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(write, range(WRITERS)))
    catalog = open_catalog("analytics_iceberg", properties)
    for index in range(WRITERS):
        rows = day_rows(catalog.load_table(f"analytics.table_{index}"), DAYS[0])
        assert rows.column("user_id").to_pylist() == [index * 10, index * 10 + 1, index * 10 + 2]
