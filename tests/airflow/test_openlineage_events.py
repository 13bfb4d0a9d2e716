"""Column lineage as OpenLineage users receive it: the provider's own listener, switched on by
configuration alone and writing through its file transport, emits the events of a real
`airflow dags test` run against the emulator; the test reads the emitted file and checks every
written column's origin against the maps spelled out here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

from devtools.airflow_runner import connection_env

if TYPE_CHECKING:
    from analytics_emulator.server import EmulatorServer

    from devtools.airflow_runner import DagRunner

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("airflow")]

DAGS = Path(__file__).parent / "dags"
EXPORTED = {
    "distinct_id": "distinct_id",
    "city": "$city",
    "phone": "phone",
    "income": "income",
    "tag_tag_rfm": "tag.tag_rfm",
}
"""Each column the cohort export writes and the platform property it holds."""
MASKED = {"phone", "income"}
"""The properties the emulator's tracking plan masks."""
STEPS = ["event.$startup", "event.search", "event.purchase"]
FIGURES = {
    "step_number",
    "step_expression",
    "step_event",
    "converted_users",
    "conversion_rate",
    "completion_rate",
    "median_seconds_to_next",
}
"""A funnel table's columns computed from all of the request's steps."""
SPLIT = {"by_field", "by_value"}
"""A split funnel table's columns that hold the split field (``user.$city``)."""
PLACING = {
    "date",
    "period",
    "period_start",
    "report_updated_at",
    "report_updated_at_text",
    "query_from_date",
    "query_to_date",
}
"""A report's columns that only place a row in time, and come from no field of the platform."""
FUNNEL_TABLES = ("funnel", "funnel_totals", "funnel_by_value", "funnel_by_value_totals")
MEASURES = ["TOTAL_COUNT(event.purchase)", "SUM(event.purchase.price)"]
MEASURED = {"measure_index", "measure_label", "measure_expression", "measure_aggregator"}
MEASURED |= {"count", "value"}
"""An event table's columns computed from all of the request's measures."""


@pytest.fixture(scope="module")
def emitted(
    dag_runner: DagRunner, emulator: EmulatorServer, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, dict[str, Any]], Path, str]:
    """The run's COMPLETE events by job name, the output root, and the platform's namespace."""
    tmp = tmp_path_factory.mktemp("lineage")
    log = tmp / "events.jsonl"
    config = emulator.config
    env = connection_env(
        emulator.base_url, token=config.token, app_key=config.app_key, xtoken=config.xtoken
    )
    env |= {
        "ANALYTICS_TEST_OUTPUT": f"file://{tmp}/out/",
        "AIRFLOW__OPENLINEAGE__DISABLED": "False",
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "analytics_lineage_test",
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
            {"type": "file", "log_file_path": str(log), "append": True}
        ),
    }
    result = dag_runner.run(
        "column_lineage", "2024-01-15", dag_files=[DAGS / "column_lineage.py"], env=env
    )
    assert result.returncode == 0, result.output[-8000:]
    assert result.state == "success"
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert all("/providers-openlineage/" in e["producer"] for e in events)  # the provider's
    assert {e["job"]["namespace"] for e in events} == {"analytics_lineage_test"}
    complete = [e for e in events if e["eventType"] == "COMPLETE"]
    by_job = {e["job"]["name"]: e for e in complete}
    tasks = {
        f"column_lineage.{task}" for task in ("export_cohort", "funnel_report", "event_report")
    }
    assert sorted(by_job) == sorted(e["job"]["name"] for e in complete)  # one COMPLETE each
    # every task's (the DAG run's own events go through a process pool, not always waited for)
    assert set(by_job) - {"column_lineage"} == tasks
    return by_job, tmp / "out", emulator.base_url.rstrip("/")


def origins(dataset: dict[str, Any]) -> dict[str, list[tuple[str, str, str, bool]]]:
    """Each column of an emitted dataset's column lineage facet: its input fields as
    (namespace, name, field, masked)."""
    return {
        column: [
            (f["namespace"], f["name"], f["field"], f["transformations"][0]["masking"])
            for f in lineage["inputFields"]
        ]
        for column, lineage in dataset["facets"]["columnLineage"]["fields"].items()
    }


def test_an_exports_events_name_every_columns_property_and_mark_the_masked(
    emitted: tuple[dict[str, dict[str, Any]], Path, str],
) -> None:
    by_job, out, platform = emitted
    event = by_job["column_lineage.export_cohort"]
    written = out / "users/cohort_code=cohort_small/dt=2024-01-15/users.parquet"
    assert pq.read_schema(written).names == list(EXPORTED)

    # the platform's cohort read, its masked properties tagged as personal data
    (source,) = event["inputs"]
    assert (source["namespace"], source["name"]) == (platform, "cohort/cohort_small")
    tagged = {(t["key"], t["value"], t["field"]) for t in source["facets"]["tags"]["tags"]}
    assert tagged == {("personal_data", "masked", field) for field in MASKED}

    # the one object written (not its staging parts), named as Airflow's file transfer does
    (target,) = event["outputs"]
    assert (target["namespace"], "/" + target["name"]) == ("file", str(written))
    assert origins(target) == {
        column: [(platform, "cohort/cohort_small", field, field in MASKED)]
        for column, field in EXPORTED.items()
    }
    fields = target["facets"]["columnLineage"]["fields"]
    kinds = {column: lineage["transformationType"] for column, lineage in fields.items()}
    assert kinds == {c: "MASKED" if EXPORTED[c] in MASKED else "IDENTITY" for c in EXPORTED}
    tagged = {(t["key"], t["value"], t["field"]) for t in target["facets"]["tags"]["tags"]}
    assert tagged == {("personal_data", "masked", column) for column in MASKED}


def test_a_reports_events_name_its_steps_and_split_field_for_every_column(
    emitted: tuple[dict[str, dict[str, Any]], Path, str],
) -> None:
    by_job, out, platform = emitted
    event = by_job["column_lineage.funnel_report"]
    (source,) = event["inputs"]
    assert (source["namespace"], source["name"]) == (platform, "funnel_analysis")

    written = {
        str(out / f"funnel/{table}/report_key=checkout/dt=2024-01-15/{table}.parquet"): table
        for table in FUNNEL_TABLES
    }
    targets = {"/" + target["name"]: target for target in event["outputs"]}
    assert {t["namespace"] for t in event["outputs"]} == {"file"}
    assert set(targets) == set(written)
    for path, table in written.items():
        columns = set(pq.read_schema(path).names)
        split = SPLIT if "by_value" in table else set()
        assert columns == FIGURES | split | (PLACING & columns), table  # nothing unclassified
        expected = {
            column: [(platform, "funnel_analysis", s, False) for s in STEPS] for column in FIGURES
        }
        expected |= {
            column: [(platform, "funnel_analysis", "user.$city", False)] for column in split
        }
        assert origins(targets[path]) == expected, table
        kinds = {
            t["subtype"]
            for lineage in targets[path]["facets"]["columnLineage"]["fields"].values()
            for f in lineage["inputFields"]
            for t in f["transformations"]
        }
        assert kinds == {"AGGREGATION"}, table


def test_an_event_reports_events_name_its_measures_and_split_field(
    emitted: tuple[dict[str, dict[str, Any]], Path, str],
) -> None:
    by_job, out, platform = emitted
    event = by_job["column_lineage.event_report"]
    (source,) = event["inputs"]
    assert (source["namespace"], source["name"]) == (platform, "events_analysis")
    written = {
        str(out / f"events/{table}/report_key=purchases/dt=2024-01-15/{table}.parquet"): table
        for table in ("events", "events_totals")
    }
    targets = {"/" + target["name"]: target for target in event["outputs"]}
    assert {t["namespace"] for t in event["outputs"]} == {"file"}
    assert set(targets) == set(written)
    expected = {c: [(platform, "events_analysis", m, False) for m in MEASURES] for c in MEASURED}
    expected["by_event_purchase_city"] = [
        (platform, "events_analysis", "event.purchase.$city", False)
    ]
    for path, table in written.items():
        columns = set(pq.read_schema(path).names)
        assert columns == set(expected) | (PLACING & columns), table  # nothing unclassified
        assert origins(targets[path]) == expected, table
