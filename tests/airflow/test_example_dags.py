"""The example pipelines: they import cleanly, are wired as documented, and each one runs to
success in a real `airflow dags test` against an emulator, with its effects checked."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest
from analytics_emulator.server import EmulatorConfig, EmulatorServer

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
from airflow_provider_analytics.core.errors import AnalyticsDisabledError
from airflow_provider_analytics.operators.output import destination_asset
from devtools.airflow_runner import DagRunResult, connection_env

if TYPE_CHECKING:
    from collections.abc import Iterator

    from devtools.airflow_runner import DagRunner

EXAMPLES = Path(__file__).resolve().parents[2] / "example_dags"
OUTPUTS_MODULE = EXAMPLES / "analytics_outputs.py"
RUN_DATE = "2024-01-15"
EXAMPLE_DAG_IDS = {
    "analytics_daily",
    "analytics_funnel_digest",
    "analytics_campaign_links",
    "analytics_account_activation",
    "analytics_tracking_plan",
    "analytics_cohort_exports",
    "analytics_cohort_shards",
    "analytics_iceberg",
    "analytics_event_driven",
    "analytics_busy_day",
    "analytics_partitioned_consumer",
}
CHECKOUT_STEPS = ["$startup", "search", "add_to_cart", "purchase"]
FUNNEL_TABLES = ("funnel", "funnel_by_value", "funnel_by_value_totals", "funnel_totals")

# Parsing needs no Airflow home and runs on any worker; real runs share the "airflow" group's.
pytestmark = [pytest.mark.slow]
RUNS_A_DAG = pytest.mark.xdist_group("airflow")


def dag_files(dag_id: str) -> list[Path]:
    """The DAG file and what it reads from its folder."""
    return [EXAMPLES / f"{dag_id}.py", OUTPUTS_MODULE, EXAMPLES / "tracking_plan.yaml"]


def client_for(server: EmulatorServer) -> AnalyticsClient:
    config = server.config
    return AnalyticsClient(
        ClientConfig(
            server.base_url, token=config.token, app_key=config.app_key, xtoken=config.xtoken
        )
    )


def succeeded(result: DagRunResult) -> DagRunResult:
    assert result.returncode == 0, result.output[-6000:]
    assert result.state == "success"
    assert result.task_states and set(result.task_states.values()) == {"success"}
    return result


# --- parsing ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dagbag() -> Any:
    """The example folder parsed as the DAG processor parses it (folder on sys.path)."""
    from airflow.dag_processing.dagbag import DagBag

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ANALYTICS_OUTPUT_ROOT", "s3://aws_lake@lake/analytics/")
        patch.syspath_prepend(str(EXAMPLES))
        patch.delitem(sys.modules, "analytics_outputs", raising=False)
        bag = DagBag(dag_folder=str(EXAMPLES))
        patch.delitem(sys.modules, "analytics_outputs", raising=False)
    return bag


def test_every_example_imports_without_errors(dagbag: Any) -> None:
    assert dagbag.import_errors == {}
    assert set(dagbag.dags) == EXAMPLE_DAG_IDS
    for dag in dagbag.dags.values():
        assert "example" in dag.tags


def test_daily_pipeline_waits_then_writes_in_parallel(dagbag: Any) -> None:
    dag = dagbag.dags["analytics_daily"]
    writers = {"export_cohort_users", "checkout_funnel", "daily_events"}
    downstream = {task.task_id: task.downstream_task_ids for task in dag.tasks}
    assert downstream == {
        "day_is_over": {"events_landed"},
        "events_landed": writers,
        **{task_id: set() for task_id in writers},
    }
    outlets = {task_id: dag.get_task(task_id).outlets for task_id in writers}
    assert {task_id: [a.uri for a in assets] for task_id, assets in outlets.items()} == {
        "export_cohort_users": ["s3://lake/analytics/cohort_users"],
        "checkout_funnel": ["s3://lake/analytics/checkout_funnel"],
        "daily_events": ["s3://lake/analytics/daily_events"],
    }


def test_platform_changes_wait_for_a_persons_approval(dagbag: Any) -> None:
    """The tracking plan sync and the account activation apply only a reviewed preview, after
    an ApprovalOperator that shows it (and skips the apply on rejection)."""
    from airflow.providers.standard.operators.hitl import ApprovalOperator

    for dag_id, apply_id in (
        ("analytics_tracking_plan", "sync"),
        ("analytics_account_activation", "set_activation"),
    ):
        dag = dagbag.dags[dag_id]
        approve = dag.get_task("approve")
        assert isinstance(approve, ApprovalOperator)
        assert approve.downstream_task_ids == {apply_id}
        assert "xcom_pull(task_ids='preview')['review']" in approve.body
        assert dag.get_task(apply_id).reviewed_preview == "preview"
        assert dag.get_task("preview").is_dry_run is True
        assert "preview" in {t.task_id for t in approve.get_flat_relatives(upstream=True)}


def test_daily_pipeline_declares_its_deadline_as_documented(dagbag: Any) -> None:
    """The deadline alert fires 6 hours after the covered day ends (the run's logical date is
    that day's start), through a notifier that can send from the triggerer: as the daily
    pipeline's guide says."""
    import datetime as dt

    from airflow.sdk import AsyncCallback
    from airflow.sdk.definitions.deadline import DagRunLogicalDateDeadline

    dag = dagbag.dags["analytics_daily"]
    (alert,) = dag.deadline if isinstance(dag.deadline, list) else [dag.deadline]
    assert isinstance(alert.reference, DagRunLogicalDateDeadline)
    assert alert.interval == dt.timedelta(days=1, hours=6)
    assert isinstance(alert.callback, AsyncCallback)
    assert alert.callback.path == "airflow.providers.smtp.notifications.smtp.SmtpNotifier"
    assert alert.callback.kwargs["to"]
    guide = (EXAMPLES.parent / "docs" / "howto" / "daily_pipeline.md").read_text(encoding="utf-8")
    assert "**6 hours after the day it covers ends**" in guide
    assert "DeadlineReference.DAGRUN_LOGICAL_DATE" in guide
    # the serialized DAG keeps it, so the scheduler creates the deadline with each run
    from airflow.serialization.serialized_objects import DagSerialization

    assert DagSerialization.serialize_dag(dag).get("deadline")


def test_digest_is_scheduled_on_the_funnel_table(dagbag: Any) -> None:
    funnel_asset = dagbag.dags["analytics_daily"].get_task("checkout_funnel").outlets[0]
    assert funnel_asset == destination_asset("s3://aws_lake@lake/analytics/checkout_funnel/")
    digest = dagbag.dags["analytics_funnel_digest"]
    assert list(digest.schedule) == [funnel_asset]
    assert digest.get_task("funnel_digest").inlets == [funnel_asset]


def test_mapped_and_triggered_examples_are_declared_as_documented(dagbag: Any) -> None:
    exports = dagbag.dags["analytics_cohort_exports"].get_task("export_cohort")
    assert [a.uri for a in exports.outlets] == ["s3://lake/analytics/cohort_users"]
    account = dagbag.dags["analytics_account_activation"]
    assert account.render_template_as_native_obj is True
    assert account.schedule is None
    assert account.get_task("set_activation").reviewed_preview == "preview"
    assert dagbag.dags["analytics_campaign_links"].params["campaigns"]


# --- real runs -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def platform() -> Iterator[EmulatorServer]:
    with EmulatorServer(EmulatorConfig()) as server:
        yield server


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("example-out")


def airflow_process_env(server: EmulatorServer, airflow_home: Path) -> dict[str, str]:
    """The connection to ``server``."""
    config = server.config
    return connection_env(
        server.base_url, token=config.token, app_key=config.app_key, xtoken=config.xtoken
    )


@pytest.fixture(scope="module")
def run_env(platform: EmulatorServer, out: Path, airflow_home: Path) -> dict[str, str]:
    return airflow_process_env(platform, airflow_home) | {"ANALYTICS_OUTPUT_ROOT": f"file://{out}/"}


@pytest.fixture(scope="module")
def daily_run(dag_runner: DagRunner, run_env: dict[str, str]) -> DagRunResult:
    return dag_runner.run(
        "analytics_daily", RUN_DATE, dag_files=dag_files("analytics_daily"), env=run_env
    )


def written_files(root: Path) -> list[str]:
    """Every file under ``root`` (hidden ones included), relative, sorted."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


LOOKED_BACK = ["2024-01-13", "2024-01-14"]
"""The days before RUN_DATE that analytics_daily's reports re-pull (lookback_days=2)."""


@RUNS_A_DAG
def test_daily_pipeline_writes_its_day_and_re_pulls_two_report_days(
    daily_run: DagRunResult, out: Path
) -> None:
    succeeded(daily_run)
    assert set(daily_run.task_states) == {
        "day_is_over",
        "events_landed",
        "export_cohort_users",
        "checkout_funnel",
        "daily_events",
    }
    report_days = [*LOOKED_BACK, RUN_DATE]
    assert written_files(out) == sorted(
        [
            *(
                f"{report}/{table}/report_key={key}/dt={day}/{table}.parquet"
                for report, key, tables in (
                    ("checkout_funnel", "checkout", FUNNEL_TABLES),
                    ("daily_events", "daily_events", ("events", "events_totals")),
                )
                for table in tables
                for day in report_days
            ),
            "cohort_users/cohort_code=cohort_small/dt=2024-01-15/users.parquet",
        ]
    )
    for task_id in ("checkout_funnel", "daily_events"):
        summary = daily_run.task_xcom(task_id)
        assert summary["lookback_days"] == 2
        assert summary["days_written"] == report_days
        assert list(summary["repulled"]) == LOOKED_BACK
        assert "/dt=2024-01-15/" in summary["uri"]
    export = daily_run.task_xcom("export_cohort_users")
    assert (
        export["uri"]
        == f"file://{out}/cohort_users/cohort_code=cohort_small/dt=2024-01-15/users.parquet"
    )
    assert export["rows"] == export["expected_rows"] == 1000
    users = pq.read_table(out / "cohort_users/cohort_code=cohort_small/dt=2024-01-15/users.parquet")
    assert users.column_names == [
        "distinct_id",
        "city",
        "os",
        "register_time",
        "balance",
        "is_vip",
    ]
    assert str(users.schema.field("distinct_id").type) == "int64"
    assert daily_run.task_xcom("events_landed")["missing"] == []


@RUNS_A_DAG
def test_daily_reports_cover_the_run_day_and_match_the_platform(
    daily_run: DagRunResult, out: Path, platform: EmulatorServer
) -> None:
    succeeded(daily_run)
    day = {"fromDate": RUN_DATE, "toDate": RUN_DATE}
    with client_for(platform) as client:
        funnel_answer = client.analyze_funnel(
            {
                "steps": [{"expression": f"event.{s}", "filter": None} for s in CHECKOUT_STEPS],
                "crowds": ["$ALL"],
                "convertTime": 1,
                "convertTimeUnit": "DAY",
                **day,
            }
        )
        events_answer = client.analyze_events(
            {
                "measures": [
                    {"expression": "event.$Anything", "aggregator": "TRIGGER_USER_COUNT"},
                    {"expression": "event.purchase", "aggregator": "TOTAL_COUNT"},
                    {"expression": "event.purchase.amount", "aggregator": "SUM"},
                ],
                "crowds": ["$ALL"],
                "unit": "DAY",
                "byFields": [{"expression": "event.$Anything.$platform"}],
                **day,
            }
        )
    funnel = pq.read_table(
        out / "checkout_funnel/funnel/report_key=checkout/dt=2024-01-15/funnel.parquet"
    ).to_pylist()
    assert {(r["query_from_date"].isoformat(), r["query_to_date"].isoformat()) for r in funnel} == {
        (RUN_DATE, RUN_DATE)
    }
    assert {r["date"].isoformat() for r in funnel} == {RUN_DATE}
    whole_day = pq.read_table(
        out
        / "checkout_funnel/funnel_totals/report_key=checkout/dt=2024-01-15/funnel_totals.parquet"
    ).to_pylist()
    assert [r["step_event"] for r in whole_day] == CHECKOUT_STEPS
    expected_users = [step["convertedUser"][0] for step in funnel_answer["rows"][0]["stepsDetail"]]
    assert [r["converted_users"] for r in whole_day] == expected_users
    assert expected_users[0] > expected_users[-1] > 0
    headline = daily_run.task_xcom("checkout_funnel")["headline"]
    assert headline["overall_conversion"] == pytest.approx(
        expected_users[-1] / expected_users[0], abs=1e-6
    )

    events = pq.read_table(
        out / "daily_events/events/report_key=daily_events/dt=2024-01-15/events.parquet"
    ).to_pylist()
    events_totals = pq.read_table(
        out
        / "daily_events/events_totals/report_key=daily_events/dt=2024-01-15/events_totals.parquet"
    ).to_pylist()
    totals = {
        (r["by_event_anything_platform"], r["measure_index"]): (
            r["value"] if r["count"] is None else r["count"]
        )
        for r in events_totals
    }
    expected_totals = {
        (row["byValue"][0], index): value
        for row in events_answer["rows"]
        for index, value in enumerate(row["sum"])
    }
    assert totals == pytest.approx(expected_totals)
    assert {r["date"].isoformat() for r in events} == {RUN_DATE}
    # each re-pulled day holds its own day alone: one query over it, as its own run writes it
    for day in LOOKED_BACK:
        for path in (
            f"checkout_funnel/funnel_totals/report_key=checkout/dt={day}/funnel_totals.parquet",
            f"daily_events/events/report_key=daily_events/dt={day}/events.parquet",
        ):
            rows = pq.read_table(out / path).to_pylist()
            windows = {
                (r["query_from_date"].isoformat(), r["query_to_date"].isoformat()) for r in rows
            }
            assert rows and windows == {(day, day)}, path


@RUNS_A_DAG
def test_daily_outputs_are_announced_on_their_assets(
    daily_run: DagRunResult, out: Path, airflow_home: Path
) -> None:
    succeeded(daily_run)
    with sqlite3.connect(airflow_home / "airflow.db") as db:
        events = db.execute(
            "SELECT a.uri, e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id "
            "WHERE e.source_dag_id = 'analytics_daily' AND e.source_run_id = ?",
            (daily_run.run_id,),
        ).fetchall()
    announced = {uri: json.loads(extra)["uri"] for uri, extra in events}
    assert announced == {
        f"file://{out}/cohort_users": (
            f"file://{out}/cohort_users/cohort_code=cohort_small/dt=2024-01-15/users.parquet"
        ),
        f"file://{out}/checkout_funnel": f"file://{out}/checkout_funnel/funnel/report_key=checkout/dt=2024-01-15/funnel.parquet",
        f"file://{out}/daily_events": f"file://{out}/daily_events/events/report_key=daily_events/dt=2024-01-15/events.parquet",
    }


@RUNS_A_DAG
def test_funnel_digest_reads_the_partition_the_pipeline_announced(
    daily_run: DagRunResult, dag_runner: DagRunner, run_env: dict[str, str], out: Path
) -> None:
    succeeded(daily_run)
    digest = succeeded(
        dag_runner.run(
            "analytics_funnel_digest",
            RUN_DATE,
            dag_files=dag_files("analytics_funnel_digest"),
            env=run_env,
        )
    ).task_xcom("funnel_digest")
    funnel_file = (
        out
        / "checkout_funnel/funnel_totals/report_key=checkout/dt=2024-01-15/funnel_totals.parquet"
    )
    assert digest["uri"] == f"file://{funnel_file}"
    whole_day = pq.read_table(funnel_file).to_pylist()
    assert digest["steps"] == [
        {
            "step_event": r["step_event"],
            "converted_users": r["converted_users"],
            "completion_rate": r["completion_rate"],
        }
        for r in whole_day
    ]
    assert digest["steps"][0]["completion_rate"] == 1.0


@RUNS_A_DAG
def test_campaign_links_map_over_the_list_given_at_trigger_time(
    dag_runner: DagRunner, run_env: dict[str, str], platform: EmulatorServer
) -> None:
    campaigns = [
        {
            "utm_campaign": "autumn_preview",
            "utm_source": "newsletter",
            "utm_medium": "email",
            "page_url": "https://shop.example.com/autumn",
        },
        {
            "utm_campaign": "autumn_preview",
            "utm_source": "search",
            "utm_medium": "cpc",
            "page_url": "https://shop.example.com/autumn?from=ad",
        },
    ]
    result = succeeded(
        dag_runner.run(
            "analytics_campaign_links",
            RUN_DATE,
            dag_files=dag_files("analytics_campaign_links"),
            env=run_env,
            conf={"campaigns": campaigns},
        )
    )
    assert sorted(k for k in result.task_states if k.startswith("create_link")) == [
        "create_link[0]",
        "create_link[1]",
    ]
    links = [result.task_xcom("create_link", index) for index in range(2)]
    assert result.task_xcom("link_table") == {
        link["campaign_id"]: link["short_url"] for link in links
    }
    with client_for(platform) as client:
        records = [client.get_utm(link["campaign_id"]) for link in links]
    assert [(r["utmCampaign"], r["utmSource"], r["utmMedium"], r["pageUrl"]) for r in records] == [
        (c["utm_campaign"], c["utm_source"], c["utm_medium"], c["page_url"]) for c in campaigns
    ]
    assert [r["shortUrl"] for r in records] == [link["short_url"] for link in links]


@RUNS_A_DAG
def test_account_activation_renders_the_param_as_a_bool(
    dag_runner: DagRunner, run_env: dict[str, str], platform: EmulatorServer
) -> None:
    email = "leaver.example@example.com"
    with client_for(platform) as client:
        client.register_account(email, name="Leaver")
    result = succeeded(
        dag_runner.run(
            "analytics_account_activation",
            RUN_DATE,
            dag_files=dag_files("analytics_account_activation"),
            env=run_env,
            conf={"account_email": email, "activation": False},
            respond={"approve": "Approve"},
        )
    )
    assert (
        result.task_xcom("preview")["review"] == f"**Account**: disable `{email}` on the platform."
    )
    assert result.task_xcom("set_activation") == {"email": email, "activation": False}
    with client_for(platform) as client, pytest.raises(AnalyticsDisabledError):
        client.register_account(email, name="Leaver")


@RUNS_A_DAG
def test_tracking_plan_example_previews_then_syncs_the_file_beside_it(
    dag_runner: DagRunner, fresh_emulator: EmulatorServer, airflow_home: Path
) -> None:
    result = succeeded(
        dag_runner.run(
            "analytics_tracking_plan",
            RUN_DATE,
            dag_files=dag_files("analytics_tracking_plan"),
            env=airflow_process_env(fresh_emulator, airflow_home),
            respond={"approve": "Approve"},
        )
    )
    preview, sync = result.task_xcom("preview"), result.task_xcom("sync")
    assert preview["dry_run"] is True and sync["dry_run"] is False
    added = [(change["target"], change["id"]) for change in sync["added"]]
    assert added == [(change["target"], change["id"]) for change in preview["added"]]
    assert ("user_property", "vip_level") in added
    assert ("event", "checkout_started") in added
    assert sync["conflicts"] == []
    with client_for(fresh_emulator) as client:
        assert "vip_level" in {item["id"] for item in client.list_user_properties()}
        events = {item["id"]: item for item in client.list_events()}
    assert events["checkout_started"]["name"] == "Checkout started"


@RUNS_A_DAG
def test_a_cohort_read_in_shards_by_mapped_tasks_equals_the_stream(
    dag_runner: DagRunner, run_env: dict[str, str], out: Path, platform: EmulatorServer
) -> None:
    """plan -> 13 mapped shard reads -> publish, under `airflow dags test`; the published day
    holds the rows and values the stream gives for the same cohort and columns."""
    from airflow.sdk import ObjectStoragePath

    from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
    from airflow_provider_analytics.export.stream import export_cohort_to_parquet

    result = succeeded(
        dag_runner.run(
            "analytics_cohort_shards",
            RUN_DATE,
            dag_files=dag_files("analytics_cohort_shards"),
            env=run_env,
        )
    )
    assert result.task_xcom("plan_shards") == list(range(13))
    reads = [result.task_xcom("read_shard", index) for index in range(13)]
    assert sum(read["rows"] for read in reads) == 25_000
    summary = result.task_xcom("publish_cohort")
    assert (summary["mode"], summary["rows"], summary["shards"]) == ("pages", 25_000, 13)
    sharded = out / "large_cohort_users/cohort_code=cohort_medium/dt=2024-01-15/users.parquet"
    assert summary["uri"] == f"file://{sharded}"
    config = platform.config
    stream = ObjectStoragePath((out / "stream.parquet").as_uri())
    with AnalyticsClient(
        ClientConfig(platform.base_url, token=config.token, app_key=config.app_key)
    ) as client:
        export_cohort_to_parquet(
            client,
            "cohort_medium",
            stream,
            properties=["distinct_id", "$city", "register_time", "total_orders", "is_vip"],
            timezone="Asia/Shanghai",
        )
    streamed = pq.read_table(out / "stream.parquet").sort_by("distinct_id")
    assert pq.read_table(sharded).sort_by("distinct_id").equals(streamed)
    assert not list((out / "large_cohort_users.staging").rglob("*.parquet"))


@RUNS_A_DAG
def test_cohort_exports_map_over_cohorts_and_announce_each_file(
    dag_runner: DagRunner, run_env: dict[str, str], out: Path, airflow_home: Path
) -> None:
    result = succeeded(
        dag_runner.run(
            "analytics_cohort_exports",
            RUN_DATE,
            dag_files=dag_files("analytics_cohort_exports"),
            env=run_env,
        )
    )
    sizes = {"cohort_tiny": 7, "cohort_small": 1000, "cohort_medium": 25000}
    exports = [result.task_xcom("export_cohort", index) for index in range(3)]
    assert {x["cohort_code"]: x["rows"] for x in exports} == sizes
    for code, rows in sizes.items():
        path = out / f"cohort_users/cohort_code={code}/dt=2024-01-15/users.parquet"
        table = pq.read_table(path)
        assert table.num_rows == rows
        assert len(table.column("distinct_id").unique()) == rows
    with sqlite3.connect(airflow_home / "airflow.db") as db:
        announced = db.execute(
            "SELECT e.source_map_index, e.extra FROM asset_event e "
            "WHERE e.source_dag_id = 'analytics_cohort_exports' AND e.source_run_id = ?",
            (result.run_id,),
        ).fetchall()
    assert sorted((index, json.loads(extra)["rows"]) for index, extra in announced) == [
        (index, export["rows"]) for index, export in enumerate(exports)
    ]


@RUNS_A_DAG
def test_iceberg_example_writes_its_day_to_every_table(
    dag_runner: DagRunner, run_env: dict[str, str], tmp_path: Path
) -> None:
    from airflow_provider_analytics.output.iceberg import catalog_properties, open_catalog

    extra = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    connection = json.dumps({"conn_type": "iceberg", "extra": extra})
    env = run_env | {"AIRFLOW_CONN_ANALYTICS_ICEBERG": connection}
    run = succeeded(
        dag_runner.run(
            "analytics_iceberg", RUN_DATE, dag_files=dag_files("analytics_iceberg"), env=env
        )
    )
    lake = open_catalog("analytics_iceberg", catalog_properties(extra=extra))
    names = sorted(".".join(identifier) for identifier in lake.list_tables("analytics"))
    assert names == [
        "analytics.checkout_funnel",
        "analytics.checkout_funnel_by_value",
        "analytics.checkout_funnel_by_value_totals",
        "analytics.checkout_funnel_totals",
        "analytics.cohort_users",
        "analytics.daily_events",
        "analytics.daily_events_totals",
    ]
    for name in names:
        table = lake.load_table(name)
        assert [s.summary["analytics.dt"] for s in table.snapshots()] == [RUN_DATE], name
        rows = table.scan().to_arrow()
        assert {day.isoformat() for day in rows.column("dt").to_pylist()} == {RUN_DATE}, name
    users = lake.load_table("analytics.cohort_users").scan().to_arrow()
    assert users.num_rows == run.task_xcom("cohort_users")["rows"] == 1000
    assert "city" in users.column_names  # the default names: no $ or . in a name
    assert all(re.fullmatch(r"[a-z_][a-z0-9_]*", name) for name in users.column_names)
    assert run.task_xcom("checkout_funnel")["uri"] == (
        "iceberg://analytics_iceberg/analytics/checkout_funnel"
    )
    # the maintenance task ran over every table: everything is younger than its retention
    maintained = run.task_xcom("maintain_tables")["tables"]
    assert sorted(maintained) == names
    for name, result in maintained.items():
        assert result["expired_snapshots"] == result["orphan_files_removed"] == 0, name
        assert result["snapshots_kept"] == 1 and result["files_scanned"] >= 4, name
