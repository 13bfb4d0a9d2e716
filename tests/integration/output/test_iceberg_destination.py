"""Iceberg tables as the destination of the report and cohort export operators.

A three-day backfill and a rerun, a property added to the plan between two days, a column
whose type cannot evolve, and two days committing at once; against a SQL catalog on SQLite
and a REST catalog server on loopback (tests/iceberg_rest_server.py), read back with pyiceberg.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from analytics_emulator import catalog as emulator_catalog
from pyiceberg.table.snapshots import Operation

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.operators.reports import EventReportOperator
from airflow_provider_analytics.output.iceberg import (
    COMMIT_PROPERTY,
    DAY_PROPERTY,
    IcebergSchemaError,
    catalog_properties,
    open_catalog,
)
from airflow_provider_analytics.reports.schemas import REPORT_TIME_COLUMNS
from tests import iceberg_cases, iceberg_rest_server
from tests.reliability.connections import use_connection
from tests.run_context import run_context

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from analytics_emulator.server import EmulatorServer
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

pytestmark = pytest.mark.integration


DAYS = ["2024-01-10", "2024-01-11", "2024-01-12"]
RERUN_DAY = "2024-01-11"
REST_TOKEN = "rest-token-5f2c9e"
EVENT_REQUEST = {
    "measures": [
        {"expression": "event.$Anything", "aggregator": "TOTAL_COUNT"},
        {"expression": "event.purchase.amount", "aggregator": "SUM"},
    ],
    "crowds": ["$ALL"],
    "unit": "DAY",
    "byFields": [{"expression": "event.$Anything.$platform"}],
}
EVENT_KEYS = {
    "analytics.events": ["by_event_anything_platform", "measure_index", "period"],
    "analytics.events_totals": ["by_event_anything_platform", "measure_index", "dt"],
}


def use_platform(monkeypatch: pytest.MonkeyPatch, server: EmulatorServer) -> None:
    use_connection(monkeypatch, server, timezone=emulator_catalog.PROJECT_TIMEZONE)


@pytest.fixture(params=["sql", "rest", "postgresql"])
def lake(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch) -> Iterator[Catalog]:
    """The ``iceberg_default`` connection (SQL catalog on SQLite or PostgreSQL, or a REST
    catalog) and the same catalog opened for reading back."""
    if request.param in ("sql", "postgresql"):
        extra = {
            "type": "sql",
            "uri": f"sqlite:///{tmp_path}/catalog.db",
            "warehouse": f"file://{tmp_path}/warehouse",
        }
        if request.param == "postgresql":
            # one database for the module: each test gets a catalog name of its own
            extra["uri"] = request.getfixturevalue("postgres_uri")
            extra["catalog_name"] = f"lake_{tmp_path.name.replace('-', '_')}"
        monkeypatch.setenv(
            "AIRFLOW_CONN_ICEBERG_DEFAULT", json.dumps({"conn_type": "iceberg", "extra": extra})
        )
        name = extra.get("catalog_name", "iceberg_default")
        yield open_catalog(name, catalog_properties(extra=extra))
        return
    for server in iceberg_rest_server.serve(str(tmp_path), token=REST_TOKEN):
        host, port = server.server_address[:2]
        connection = {"conn_type": "iceberg", "host": host, "port": port, "password": REST_TOKEN}
        monkeypatch.setenv("AIRFLOW_CONN_ICEBERG_DEFAULT", json.dumps(connection))
        yield open_catalog(
            "iceberg_default",
            catalog_properties(host=str(host), port=port, password=REST_TOKEN),
        )


def day_rows(table: Table, day: str) -> pa.Table:
    rows = table.scan(row_filter=f"dt = '{day}'").to_arrow()
    flat = [field.name for field in rows.schema if not pa.types.is_nested(field.type)]
    return rows.sort_by([(name, "ascending") for name in sorted(flat)])


def day_files(table: Table, day: str) -> set[str]:
    return {task.file.file_path for task in table.scan(row_filter=f"dt = '{day}'").plan_files()}


def test_backfill_then_rerun_replaces_exactly_one_day(
    emulator: EmulatorServer, lake: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_platform(monkeypatch, emulator)
    operator = EventReportOperator(
        task_id="events", request=EVENT_REQUEST, iceberg_table="analytics.events"
    )
    assert [outlet.uri for outlet in operator.outlets] == [
        "iceberg://iceberg_default/analytics/events"
    ]
    summaries = {day: operator.execute(run_context(day)) for day in DAYS}  # type: ignore[arg-type]
    before = {
        name: {
            day: (day_rows(lake.load_table(name), day), day_files(lake.load_table(name), day))
            for day in DAYS
        }
        for name in EVENT_KEYS
    }
    logs_before = {name: len(lake.load_table(name).metadata.metadata_log) for name in EVENT_KEYS}
    context = run_context(RERUN_DAY)
    rerun = operator.execute(context)  # type: ignore[arg-type]

    for name, keys in EVENT_KEYS.items():
        table = lake.load_table(name)
        snapshots = table.snapshots()
        # each snapshot names the day it replaced: a first run appends, the rerun deletes the
        # day's file and appends the new one, in one catalog commit (one new metadata file)
        assert [s.summary[DAY_PROPERTY] for s in snapshots] == [*DAYS, RERUN_DAY, RERUN_DAY]
        assert [s.summary.operation for s in snapshots[-2:]] == [Operation.DELETE, Operation.APPEND]
        assert snapshots[-2].summary["deleted-data-files"] == "1", name
        assert snapshots[-2].summary[COMMIT_PROPERTY] == snapshots[-1].summary[COMMIT_PROPERTY]
        assert len(table.metadata.metadata_log) == logs_before[name] + 1, name
        everything = table.scan().to_arrow()
        assert sorted(set(everything.column("dt").to_pylist())) == [
            dt.date.fromisoformat(day) for day in DAYS
        ]
        distinct = everything.group_by(keys).aggregate([]).num_rows
        assert distinct == everything.num_rows > 0, name
        for day in DAYS:
            rows, files = before[name][day]
            if day == RERUN_DAY:
                assert day_files(table, day).isdisjoint(files), name
                again = day_rows(table, day).drop_columns(list(REPORT_TIME_COLUMNS))
                assert again.equals(rows.drop_columns(list(REPORT_TIME_COLUMNS))), name
            else:
                assert day_files(table, day) == files, (name, day)
                assert day_rows(table, day).equals(rows), (name, day)

    daily = lake.load_table("analytics.events").scan().to_arrow()
    assert pc.all(pc.equal(daily.column("date"), daily.column("dt"))).as_py()
    assert daily.schema.field("count").type == pa.int64()
    assert daily.schema.field("report_updated_at").type == pa.timestamp("us", tz="UTC")
    assert rerun["tables"]["events_totals"]["replaced_files"] == 1
    assert summaries[DAYS[0]]["tables"]["events"]["replaced_files"] == 0
    extra = next(iter(context["outlet_events"].values())).extra
    assert extra["uri"] == "iceberg://iceberg_default/analytics/events"
    assert extra["tables"] == {
        "events": "iceberg://iceberg_default/analytics/events",
        "events_totals": "iceberg://iceberg_default/analytics/events_totals",
    }


def test_lineage_names_every_table(emulator: EmulatorServer, lake: Catalog, monkeypatch) -> None:
    use_platform(monkeypatch, emulator)
    operator = EventReportOperator(
        task_id="events", request=EVENT_REQUEST, iceberg_table="analytics.events"
    )
    operator.execute(run_context(DAYS[0]))  # type: ignore[arg-type]
    lineage = operator.get_openlineage_facets_on_complete(None)
    assert [(d.namespace, d.name) for d in lineage.outputs] == [
        ("iceberg://iceberg_default", "analytics.events"),
        ("iceberg://iceberg_default", "analytics.events_totals"),
    ]


def test_a_property_added_to_the_plan_becomes_a_column_without_rewriting(
    fresh_emulator: EmulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_platform(monkeypatch, fresh_emulator)
    extra = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    monkeypatch.setenv("AIRFLOW_CONN_LAKE", json.dumps({"conn_type": "iceberg", "extra": extra}))
    lake = open_catalog("lake", catalog_properties(extra=extra))

    def export(day: str, **kwargs: Any) -> dict[str, Any]:
        operator = CohortExportToParquetOperator(
            task_id="users",
            cohort_code="cohort_small",
            iceberg_table="analytics.cohort_users",
            iceberg_conn_id="lake",
            **kwargs,
        )
        return operator.execute(run_context(day))  # type: ignore[arg-type]

    first = export(DAYS[0])
    columns_before = set(lake.load_table("analytics.cohort_users").schema().column_names)
    files_before = day_files(lake.load_table("analytics.cohort_users"), DAYS[0])
    config = fresh_emulator.config
    with AnalyticsClient(
        ClientConfig(fresh_emulator.base_url, token=config.token, app_key=config.app_key)
    ) as client:
        client.add_user_property("loyalty_tier", "string", name="Loyalty tier")
    second = export(DAYS[1])

    table = lake.load_table("analytics.cohort_users")
    assert "loyalty_tier" not in columns_before
    assert set(table.schema().column_names) == columns_before | {"loyalty_tier"}
    assert day_files(table, DAYS[0]) == files_before  # the first day was not rewritten
    old = day_rows(table, DAYS[0])
    assert old.num_rows == first["rows"] == 1000
    assert old.column("loyalty_tier").null_count == old.num_rows
    assert day_rows(table, DAYS[1]).num_rows == second["rows"] == 1000
    assert second["uri"] == "iceberg://lake/analytics/cohort_users"
    assert len(table.snapshots()) == 2

    # a column whose type cannot evolve fails naming it, before anything reaches the table
    with pytest.raises(IcebergSchemaError, match="is_vip"):
        export(DAYS[2], schema_overrides={"is_vip": "string"})
    after = lake.load_table("analytics.cohort_users")
    assert len(after.snapshots()) == 2
    assert after.schema() == table.schema()
    assert day_rows(after, DAYS[2]).num_rows == 0


def test_cohort_columns_keep_their_names_in_the_table(
    emulator: EmulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_platform(monkeypatch, emulator)
    extra = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    monkeypatch.setenv("AIRFLOW_CONN_LAKE", json.dumps({"conn_type": "iceberg", "extra": extra}))
    lake = open_catalog("lake", catalog_properties(extra=extra))

    def export(day: str, column_names: str) -> dict[str, Any]:
        operator = CohortExportToParquetOperator(
            task_id="users",
            cohort_code="cohort_small",
            properties=["distinct_id", "$city", "tag.tag_rfm"],
            iceberg_table="analytics.cohort_users",
            iceberg_conn_id="lake",
            column_names=column_names,
        )
        return operator.execute(run_context(day))  # type: ignore[arg-type]

    first = export(DAYS[0], "warehouse")
    table = lake.load_table("analytics.cohort_users")
    assert table.schema().column_names == [
        "distinct_id",
        "city",
        "tag_tag_rfm",
        "cohort_code",
        "dt",
    ]
    assert first["column_ids"] == {
        "distinct_id": "distinct_id",
        "city": "$city",
        "tag_tag_rfm": "tag.tag_rfm",
    }
    # the same ids under the other naming would become second columns: refused, nothing written
    with pytest.raises(IcebergSchemaError, match=r"'\$city' as column 'city'.*names it '\$city'"):
        export(DAYS[1], "ids")
    after = lake.load_table("analytics.cohort_users")
    assert after.schema() == table.schema()
    assert len(after.snapshots()) == 1
    assert day_rows(after, DAYS[1]).num_rows == 0


def test_the_catalog_cases(lake: Catalog, caplog: pytest.LogCaptureFixture) -> None:
    """Rerun, schema evolution and two days at once (tests/iceberg_cases.py), through the
    catalog the hook opens; the S3 catalogs run them in test_iceberg_catalogs.py."""
    from airflow_provider_analytics.hooks.iceberg import IcebergCatalogHook

    catalog = IcebergCatalogHook().get_conn()
    iceberg_cases.case_rerun_replaces_its_day(catalog, "analytics.rerun")
    iceberg_cases.case_schema_evolution(catalog, "analytics.evolution")
    with caplog.at_level(logging.WARNING, logger="pyiceberg.table"):
        iceberg_cases.case_two_days_commit_at_once(
            catalog, "analytics.race", pyiceberg_retries=True
        )
    assert "Commit failed due to a concurrent update" in caplog.text
    iceberg_cases.case_two_days_commit_at_once(catalog, "analytics.race2", pyiceberg_retries=False)
    iceberg_cases.case_two_identities_commit_at_once(catalog, "analytics.shared")
    iceberg_cases.case_old_layout_is_refused_then_migrated(catalog, "analytics.old")


@pytest.mark.parametrize("round_", range(3))
def test_cohorts_create_one_new_table_at_once(lake: Catalog, round_: int) -> None:
    """Two cohorts creating one new table: the writer whose creation loses takes the table as
    created (and adds its column) instead of failing on "Table already exists"; then cohorts
    started together, as the mapped tasks of one ``.expand`` are."""
    from airflow_provider_analytics.hooks.iceberg import IcebergCatalogHook

    catalog = IcebergCatalogHook().get_conn()
    iceberg_cases.case_two_writers_create_one_table(catalog, f"analytics.created_{round_}")
    iceberg_cases.case_two_cohorts_create_one_table_at_once(catalog, f"analytics.at_once_{round_}")


def test_maintenance_after_a_killed_commit(lake: Catalog) -> None:
    from airflow_provider_analytics.hooks.iceberg import IcebergCatalogHook

    catalog = IcebergCatalogHook().get_conn()
    iceberg_cases.case_killed_commit_is_cleaned_up(catalog, "analytics.maintained")
