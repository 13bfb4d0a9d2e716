"""All operators in one real `airflow dags test` against the emulator; outputs checked against the
brute-force oracle; no secret in any log, XCom or rendered field."""

from __future__ import annotations

import datetime as dt
import json
import random
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest
from analytics_emulator.server import EmulatorConfig, EmulatorServer

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
from devtools.airflow_runner import DagRunResult, connection_env
from tests.emulator_helpers import EmulatorAdmin
from tests.oracle import oracle_events, oracle_funnel

if TYPE_CHECKING:
    from collections.abc import Iterator

    from devtools.airflow_runner import DagRunner

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("airflow")]

DAGS = Path(__file__).parent / "dags"
RUN_DATE = "2024-01-15"
WEEK = ("2024-01-09", "2024-01-15")
SECRETS = {
    "token": "tok-Vq7Hc2Lx9Rk4",
    "app_key": "ak-Mw3Zp8Tn1Ys6",
    "xtoken": "xt-Gd5Bf0Je2Ua7",
}
PASSWORD = "pw-Kr6Qs9Wm4Ev1"
CITIES = ["上海", "北京", "杭州"]


def hand_built_log(seed: int = 11) -> list[dict[str, Any]]:
    """40 users over 2024-01-08..15: startups, carts and purchases with prices and cities."""
    rng = random.Random(seed)
    events = []
    start = dt.datetime(2024, 1, 8, 8, 0, 0)
    for user in range(40):
        for day in range(8):
            if rng.random() < 0.45:
                continue
            moment = start + dt.timedelta(days=day, minutes=rng.randrange(0, 600))
            city = rng.choice(CITIES)
            visit = [("$startup", moment, {})]
            if rng.random() < 0.6:
                moment += dt.timedelta(minutes=rng.randrange(1, 300))
                cart = {"product_id": f"p{rng.randrange(5)}", "price": 9.9, "quantity": 1}
                visit.append(("add_to_cart", moment, cart))
                if rng.random() < 0.55:
                    moment += dt.timedelta(minutes=rng.randrange(1, 2000))
                    price = rng.choice([9.9, 25.0, 120.5])
                    paid = {"product_id": "p1", "price": price, "quantity": 1, "amount": price}
                    visit.append(("purchase", moment, paid))
            events += [
                {
                    "user": user,
                    "event": name,
                    "time": at.strftime("%Y-%m-%d %H:%M:%S"),
                    "properties": {"$city": city, **props},
                }
                for name, at, props in visit
            ]
    return events


@pytest.fixture(scope="module")
def platform() -> Iterator[tuple[EmulatorServer, list[dict[str, Any]]]]:
    config = EmulatorConfig(admin_token="admin-for-dag-test", **SECRETS)
    with EmulatorServer(config) as server:
        events = hand_built_log()
        admin = EmulatorAdmin(server)
        assert admin.replace_event_log(events) == len(events)
        admin.close()
        yield server, events


@pytest.fixture(scope="module")
def run(
    platform: tuple[EmulatorServer, list[dict[str, Any]]],
    dag_runner: DagRunner,
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[DagRunResult, Path]:
    server, _ = platform
    out = tmp_path_factory.mktemp("out")
    env = connection_env(server.base_url, **SECRETS)
    env |= {"ANALYTICS_TEST_OUTPUT": f"file://{out}/", "ANALYTICS_TEST_PASSWORD": PASSWORD}
    result = dag_runner.run(
        "provider_operators", RUN_DATE, dag_files=[DAGS / "provider_operators.py"], env=env
    )
    assert result.returncode == 0, result.output[-8000:]
    assert result.state == "success"
    return result, out


def test_cohort_export_wrote_typed_parquet(run: tuple[DagRunResult, Path]) -> None:
    result, out = run
    summary = result.task_xcom("export_cohort")
    path = out / "cohort_users/cohort_code=cohort_small/dt=2024-01-15/users.parquet"
    table = pq.read_table(str(path))
    assert summary["uri"] == f"file://{path}"
    assert summary["rows"] == summary["expected_rows"] == table.num_rows == 1000
    assert table.column_names == [
        "distinct_id",
        "city",
        "balance",
        "register_time",
        "interests",
        "tag_tag_rfm",
    ]
    assert str(table.schema.field("register_time").type) == "timestamp[ms, tz=UTC]"


def test_funnel_table_matches_the_oracle(
    run: tuple[DagRunResult, Path], platform: tuple[EmulatorServer, list[dict[str, Any]]]
) -> None:
    result, out = run
    _, events = platform
    request = {
        "steps": [
            {"expression": "event.$startup", "filter": None},
            {"expression": "event.add_to_cart", "filter": None},
            {"expression": "event.purchase", "filter": None},
        ],
        "crowds": ["$ALL"],
        "convertTime": 1,
        "convertTimeUnit": "DAY",
        "fromDate": WEEK[0],
        "toDate": WEEK[1],
    }
    expected = oracle_funnel(events, {}, request)
    daily = pq.read_table(
        str(out / "funnel/funnel/report_key=funnel/dt=2024-01-15/funnel.parquet")
    ).to_pylist()
    totals = pq.read_table(
        str(out / "funnel/funnel_totals/report_key=funnel/dt=2024-01-15/funnel_totals.parquet")
    ).to_pylist()
    overall = {(row["date"], row["step_number"]): row["converted_users"] for row in daily}
    assert len(overall) == len(daily)
    overall.update({(None, row["step_number"]): row["converted_users"] for row in totals})
    dates = [None] + [
        dt.datetime.strptime(d, "%Y/%m/%d %H:%M:%S").date() for d in expected["dateList"][1:]
    ]
    steps = expected["rows"][0]["stepsDetail"]
    want = {
        (day, number + 1): step["convertedUser"][position]
        for number, step in enumerate(steps)
        for position, day in enumerate(dates)
    }
    assert overall == want
    assert want[(None, 1)] > want[(None, 2)] > want[(None, 3)] > 0
    summary = result.task_xcom("funnel_report")
    assert summary["headline"]["first_step_users"] == want[(None, 1)]
    assert summary["headline"]["overall_conversion"] == pytest.approx(
        want[(None, 3)] / want[(None, 1)]
    )
    rates = {r["step_number"]: r["conversion_rate"] for r in totals}
    assert rates[2] == pytest.approx(want[(None, 2)] / want[(None, 1)])


def test_event_table_matches_the_oracle_per_day(
    run: tuple[DagRunResult, Path], platform: tuple[EmulatorServer, list[dict[str, Any]]]
) -> None:
    result, out = run
    _, events = platform
    request = {
        "measures": [
            {"expression": "event.purchase", "aggregator": "TOTAL_COUNT"},
            {"expression": "event.purchase.price", "aggregator": "SUM"},
            {"expression": "event.$Anything", "aggregator": "TRIGGER_USER_COUNT"},
        ],
        "crowds": ["$ALL"],
        "unit": "DAY",
        "byFields": [{"expression": "event.purchase.$city", "buckets": None}],
        "fromDate": WEEK[0],
        "toDate": WEEK[1],
    }
    expected = oracle_events(events, {}, request)
    want = {}
    for row in expected["rows"]:
        for measure, values in enumerate(row["values"]):
            for period, value in zip(expected["series"], values, strict=True):
                want[(row["byValue"][0], measure, period[:10])] = value
    table = pq.read_table(
        str(out / "events/events/report_key=events/dt=2024-01-15/events.parquet")
    ).to_pylist()
    got = {
        (row["by_event_purchase_city"], row["measure_index"], row["date"].isoformat()): (
            row["value"] if row["count"] is None else row["count"]
        )
        for row in table
    }
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value), key
    windows = {(r["query_from_date"].isoformat(), r["query_to_date"].isoformat()) for r in table}
    assert windows == {
        ("2024-01-09", "2024-01-11"),
        ("2024-01-12", "2024-01-14"),
        ("2024-01-15", "2024-01-15"),
    }
    assert result.task_xcom("event_report")["windows"] == 3


def test_write_operators_changed_the_platform(
    run: tuple[DagRunResult, Path], platform: tuple[EmulatorServer, list[dict[str, Any]]]
) -> None:
    result, _ = run
    server, _ = platform
    link = result.task_xcom("create_utm")
    assert set(link) == {"campaign_id", "url", "short_url"}
    assert link["url"].startswith("https://shop.example.com/spring?ref=ad&")
    assert "utm_campaign=spring_20240115" in link["url"]
    client = AnalyticsClient(
        ClientConfig(server.base_url, token=SECRETS["token"], app_key=SECRETS["app_key"])
    )
    assert client.get_utm(link["campaign_id"])["shortUrl"] == link["short_url"]
    account = result.task_xcom("register_account")
    assert account["email"] == "ana.20240115@example.com" and account["created"] is True
    assert result.task_xcom("disable_account") == {"email": account["email"], "activation": False}
    assert result.task_xcom("wait_for_data")["missing"] == []


def test_no_secret_in_logs_xcoms_or_rendered_fields(
    run: tuple[DagRunResult, Path], airflow_home: Path
) -> None:
    result, _ = run
    texts = {"process output": result.output, "xcoms": json.dumps(result.xcoms, ensure_ascii=False)}
    # `dags test` streams the task logs into its output; make sure they are there to search
    assert "cohort cohort_small: wrote 1000 rows" in result.output
    assert "created ad tracking" in result.output
    for path in (airflow_home / "logs").rglob("*"):
        if path.is_file():
            texts[str(path)] = path.read_text(errors="replace")
    with sqlite3.connect(airflow_home / "airflow.db") as db:
        rendered = db.execute(
            "SELECT task_id, rendered_fields FROM rendered_task_instance_fields WHERE dag_id = ?",
            ("provider_operators",),
        ).fetchall()
    assert rendered
    texts["rendered fields"] = json.dumps(rendered, ensure_ascii=False)
    for where, text in texts.items():
        for secret in (*SECRETS.values(), PASSWORD):
            assert secret not in text, f"{secret[:3]}... found in {where}"
    assert "export_cohort" in texts["rendered fields"]


def test_outputs_are_announced_as_asset_events(
    run: tuple[DagRunResult, Path], airflow_home: Path
) -> None:
    _, out = run
    with sqlite3.connect(airflow_home / "airflow.db") as db:
        events = db.execute(
            "SELECT a.uri, e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id "
            "WHERE e.source_dag_id = ?",
            ("provider_operators",),
        ).fetchall()
    extras = {uri: json.loads(extra) for uri, extra in events}
    export = extras[f"file://{out}/cohort_users"]
    assert (
        export["uri"]
        == f"file://{out}/cohort_users/cohort_code=cohort_small/dt=2024-01-15/users.parquet"
    )
    assert export["rows"] == 1000
    assert extras[f"file://{out}/funnel"]["report"] == "funnel"
    assert extras[f"file://{out}/events"]["rows"] > 0
