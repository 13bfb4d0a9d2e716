"""The migration command (``python -m airflow_provider_analytics.hooks.iceberg_migration``), run
in this process against a SQL catalog in a temporary folder that an Airflow connection names:
the summary is the output's last line, ``--conn-id`` picks the catalog, and a bad identity or a
table that is not the provider's ends with status 2 and the reason. (The command as a
subprocess, then an export into the migrated table: tests/integration/output/
test_shared_destinations.py.)"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import DateType, LongType, NestedField

from airflow_provider_analytics.hooks.iceberg_migration import main
from airflow_provider_analytics.output.iceberg import catalog_properties, open_catalog

if TYPE_CHECKING:
    from pathlib import Path

    from pyiceberg.catalog import Catalog


@pytest.fixture
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Catalog:
    """The catalog of the connection ``lake_conn``, holding ``analytics.users`` as 0.1.0 wrote
    it (partitioned by ``dt`` alone, one row on 1970-01-01) and ``analytics.other``
    (partitioned by ``user_id``)."""
    extra = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    monkeypatch.setenv(
        "AIRFLOW_CONN_LAKE_CONN", json.dumps({"conn_type": "iceberg", "extra": extra})
    )
    catalog = open_catalog("lake_conn", catalog_properties(extra=extra))
    catalog.create_namespace("analytics")
    schema = Schema(
        NestedField(1, "user_id", LongType(), required=False),
        NestedField(2, "dt", DateType(), required=True),
    )
    rows = pa.table(
        {"user_id": pa.array([7], pa.int64()), "dt": pa.array([pa.scalar(0, pa.date32())])},
        schema=pa.schema([("user_id", pa.int64()), pa.field("dt", pa.date32(), False)]),
    )
    for name, partition in (("users", "dt"), ("other", "user_id")):
        with (
            catalog.create_table_transaction(f"analytics.{name}", schema=schema) as create,
            create.update_spec() as spec,
        ):
            spec.add_identity(partition)
        catalog.load_table(f"analytics.{name}").append(rows)
    return catalog


def last_line(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    return json.loads(capsys.readouterr().out.splitlines()[-1])  # type: ignore[no-any-return]


def test_a_dry_run_then_the_migration_print_their_summaries(
    lake: Catalog, capsys: pytest.CaptureFixture[str]
) -> None:
    target = ["--conn-id", "lake_conn", "analytics.users", "cohort_code=cohort_old"]
    assert main([*target, "--dry-run"]) == 0
    dry = last_line(capsys)
    assert (dry["dry_run"], dry["days"], dry["migrated"]) == (True, ["1970-01-01"], False)
    assert "cohort_code" not in lake.load_table("analytics.users").schema().column_names

    assert main(target) == 0
    done = last_line(capsys)
    assert (done["identity"], done["rows"], done["migrated"]) == ("cohort_code=cohort_old", 1, True)
    rows = lake.load_table("analytics.users").scan().to_arrow().to_pylist()
    assert [(row["user_id"], row["cohort_code"]) for row in rows] == [(7, "cohort_old")]


def test_an_identity_that_is_neither_a_cohort_nor_a_report_is_refused(
    lake: Catalog, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["--conn-id", "lake_conn", "analytics.users", "team=x"])
    assert ended.value.code == 2
    assert "cohort_code=<code> or report_key=<key>" in capsys.readouterr().err
    assert "team" not in lake.load_table("analytics.users").schema().column_names


def test_a_table_not_of_the_provider_ends_with_status_2_and_the_reason(
    lake: Catalog, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["--conn-id", "lake_conn", "analytics.other", "cohort_code=vip"])
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: analytics.other is not partitioned by identity(dt)")
    assert len(lake.load_table("analytics.other").snapshots()) == 1


def test_an_unusable_connection_ends_with_status_2_and_the_reason(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A connection the hook refuses ended in a traceback, not the command's error line."""
    monkeypatch.setenv("AIRFLOW_CONN_LAKE_CONN", json.dumps({"conn_type": "iceberg", "extra": [1]}))
    with pytest.raises(SystemExit) as ended:
        main(["--conn-id", "lake_conn", "analytics.users", "cohort_code=vip"])
    assert ended.value.code == 2
    assert capsys.readouterr().err.startswith("error: connection 'lake_conn': extra: must be")
