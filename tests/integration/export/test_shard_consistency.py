"""What a sharded export's publication proves about the members, against the emulator's
membership changes and proxy cuts: the one exchange the default check misses, which
``consistency="strict"`` finds; a stream cut on every attempt read in pages by ``auto`` mode;
the id property as a setting, checked before any request."""

from __future__ import annotations

import datetime as dt
import functools
import json
import logging
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

from airflow_provider_analytics.client.validation import cohort_query
from airflow_provider_analytics.core.errors import (
    AnalyticsValidationError,
    CohortChangedError,
    ExportIncompleteError,
)
from airflow_provider_analytics.core.identity import cohort_identity
from airflow_provider_analytics.export.cohort_day import export_cohort_day
from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.operators.cohort_shards import (
    CohortShardPlanOperator,
    CohortShardPublishOperator,
    CohortShardReadOperator,
)
from airflow_provider_analytics.output.parquet_destination import ParquetDestination
from tests.reliability.connections import CONNECTION_ENV
from tests.reliability.local_servers import LocalServer

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from airflow_provider_analytics.client import AnalyticsClient
    from tests.emulator_helpers import EmulatorAdmin

pytestmark = pytest.mark.integration

DAY = "2024-01-15"
START = dt.datetime(2024, 1, 15, tzinfo=dt.UTC)
FAST = ExportSettings(attempts=2, retry_delay=0.01)


def export(
    client: AnalyticsClient, root: Path, code: str, properties: list[str], **settings: Any
) -> dict[str, Any]:
    return export_cohort_day(
        client,
        cohort_query(code, properties=properties),
        ParquetDestination(f"{root.as_uri()}/users/", cohort_identity(code)),
        DAY,
        timezone="UTC",
        settings=FAST,
        **settings,
    )


def published(root: Path, code: str) -> Any:
    return pq.read_table(root / f"users/cohort_code={code}/dt={DAY}/users.parquet")


def user_numbers(table: Any) -> set[int]:
    return {int(email[4:].partition("@")[0]) for email in table.column("email").to_pylist()}


def page_calls(admin: EmulatorAdmin) -> int:
    return int(admin.stats()["requests"].get("get_cohort_users", 0))


EXCHANGED = {"mode": "pages", "page_size": 5, "shard_rows": 15}
"""30 users: pages of 5, 3 pages a shard, 2 shards."""


def exchange_after_the_first_shard(admin: EmulatorAdmin) -> None:
    """User 6 (page 2, inside shard 0) leaves and user 30 joins once the count and shard 0's
    three pages were read (4 calls): shard 1 then reads users 16..30."""
    change = {"after_calls": 4, "kind": "exchange", "users": 1, "at": 6}
    admin.define_cohort("exchanged", 30, membership_change=change)


def test_the_default_check_misses_an_exchange_inside_a_read_shard(
    client: AnalyticsClient, emulator_admin: EmulatorAdmin, tmp_path: Path
) -> None:
    """What the cohort shards page states the default does not detect: the count stays 30,
    the first page of each shard holds what it held, and the day goes out with user 6, who
    left, and without user 15, who never did."""
    exchange_after_the_first_shard(emulator_admin)
    result = export(client, tmp_path, "exchanged", ["distinct_id", "email"], **EXCHANGED)
    assert result["rows"] == 30
    numbers = user_numbers(published(tmp_path, "exchanged"))
    assert 6 in numbers and 15 not in numbers and 30 in numbers


def test_strict_consistency_finds_the_exchange_and_publishes_nothing(
    client: AnalyticsClient, emulator_admin: EmulatorAdmin, tmp_path: Path
) -> None:
    exchange_after_the_first_shard(emulator_admin)
    before = page_calls(emulator_admin)
    with pytest.raises(CohortChangedError, match=r"page 2 \(shard 0\) now holds other users"):
        export(
            client,
            tmp_path,
            "exchanged",
            ["distinct_id", "email"],
            **EXCHANGED,
            consistency="strict",
        )
    assert not (tmp_path / "users/cohort_code=exchanged").exists()
    # count, 6 pages, the count again, then pages 1 and 2 read again before the refusal
    assert page_calls(emulator_admin) - before == 1 + 6 + 1 + 2


def test_strict_consistency_publishes_an_unchanged_cohort_reading_every_page_again(
    client: AnalyticsClient, emulator_admin: EmulatorAdmin, tmp_path: Path
) -> None:
    before = page_calls(emulator_admin)
    settings = {"mode": "pages", "page_size": 100, "shard_rows": 250, "consistency": "strict"}
    result = export(client, tmp_path, "cohort_small", ["distinct_id", "email"], **settings)
    assert result["rows"] == 1000
    assert page_calls(emulator_admin) - before == 1 + 10 + 1 + 10


def test_consistency_is_refused_by_name_before_any_request(
    client: AnalyticsClient, emulator_admin: EmulatorAdmin, tmp_path: Path
) -> None:
    before = sum(emulator_admin.stats()["requests"].values())
    with pytest.raises(AnalyticsValidationError) as caught:
        export(client, tmp_path, "cohort_small", ["distinct_id"], consistency="paranoid")
    assert caught.value.field == "consistency"
    assert sum(emulator_admin.stats()["requests"].values()) == before


@pytest.mark.parametrize("ending", ["mid_line", "504"])
def test_auto_reads_pages_when_the_proxy_cuts_the_stream_every_time(
    client: AnalyticsClient,
    emulator_admin: EmulatorAdmin,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    ending: str,
) -> None:
    """A cohort under the threshold whose stream is cut at 1,000 rows of 3,000 on every
    attempt is read in pages, saying so, with the one count call it made first."""
    emulator_admin.define_cohort("cut", 3_000, proxy_cut={"rows": 1_000, "ending": ending})
    before = page_calls(emulator_admin)
    settings = {"page_size": 500, "shard_rows": 1_000}
    with caplog.at_level(logging.WARNING):
        result = export(client, tmp_path, "cut", ["distinct_id", "email"], **settings)
    assert (result["mode"], result["rows"], result["count"]) == ("pages", 3_000, 3_000)
    assert "stream failed" in result["fallback"]
    assert any("reading it in pages instead" in r.getMessage() for r in caplog.records)
    assert len(set(published(tmp_path, "cut").column("distinct_id").to_pylist())) == 3_000
    # one count call before the stream; then 6 pages, the count again, 3 first pages
    assert page_calls(emulator_admin) - before == 1 + 6 + 1 + 3


def test_a_cut_stream_without_the_id_property_fails_as_before(
    client: AnalyticsClient, emulator_admin: EmulatorAdmin, tmp_path: Path
) -> None:
    """Pages need the id property; without it the stream's own failure is raised."""
    emulator_admin.define_cohort("cut", 3_000, proxy_cut={"rows": 1_000, "ending": "mid_line"})
    with pytest.raises(ExportIncompleteError, match="after 2 attempts"):
        export(client, tmp_path, "cut", ["email"])


def test_the_id_property_is_a_setting(
    client: AnalyticsClient, emulator_admin: EmulatorAdmin, tmp_path: Path
) -> None:
    """A cohort read in pages without ``distinct_id``, told apart by its e-mail instead: the
    emulator's first users up to the first without an e-mail (33 of them)."""
    first = client.get_cohort_users(
        cohort_query("cohort_small", properties=["email"]), page=1, page_size=100
    )
    size = [user["email"] for user in first["users"]].index(None)
    emulator_admin.define_cohort("keyed", size)
    settings = {"mode": "pages", "page_size": 5, "shard_rows": 10, "id_property": "email"}
    result = export(client, tmp_path, "keyed", ["email", "$city"], **settings)
    assert result["rows"] == size > 10
    assert user_numbers(published(tmp_path, "keyed")) == set(range(size))


def test_an_id_property_some_users_lack_is_refused_by_name(
    client: AnalyticsClient, tmp_path: Path
) -> None:
    settings = {"mode": "pages", "page_size": 100, "shard_rows": 250, "id_property": "email"}
    with pytest.raises(AnalyticsValidationError, match="cannot tell them apart") as caught:
        export(client, tmp_path, "cohort_small", ["email", "$city"], **settings)
    assert caught.value.field == "id_property"
    assert not (tmp_path / "users/cohort_code=cohort_small").exists()


def test_an_id_property_not_asked_for_is_refused_before_any_request(
    client: AnalyticsClient, emulator_admin: EmulatorAdmin, tmp_path: Path
) -> None:
    before = sum(emulator_admin.stats()["requests"].values())
    with pytest.raises(AnalyticsValidationError, match="not among the properties") as caught:
        export(client, tmp_path, "cohort_small", ["email", "$city"], mode="pages")
    assert caught.value.field == "id_property"
    assert sum(emulator_admin.stats()["requests"].values()) == before


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalServer]:
    """A platform on loopback that answers anything and records every request."""
    with LocalServer(body=[]) as server:
        connection = {"conn_type": "analytics", "host": server.base_url, "password": "t"}
        monkeypatch.setenv(
            CONNECTION_ENV, json.dumps({**connection, "extra": {"app_api_key": "k"}})
        )
        yield server


@pytest.mark.parametrize(
    "operator",
    [
        CohortShardPlanOperator,
        CohortShardReadOperator,
        CohortShardPublishOperator,
        CohortExportToParquetOperator,
    ],
)
@pytest.mark.parametrize(
    ("setting", "field"),
    [({"properties": ["$city"]}, "id_property"), ({"consistency": "paranoid"}, "consistency")],
)
def test_every_operator_checks_the_id_property_and_consistency_before_any_request(
    recorder: LocalServer, tmp_path: Path, operator: type, setting: dict[str, Any], field: str
) -> None:
    extra = {"shard_index": 0} if operator is CohortShardReadOperator else {}
    if operator is CohortExportToParquetOperator:
        extra = {"mode": "pages"}
    task = operator(
        task_id="t",
        cohort_code="cohort_small",
        destination=f"{tmp_path.as_uri()}/users/",
        **setting,
        **extra,
    )
    run = {"ds": DAY, "logical_date": START, "data_interval_start": START}
    with pytest.raises(AnalyticsValidationError) as caught:
        task.execute({**run, "data_interval_end": START + dt.timedelta(days=1)})
    assert caught.value.field == field
    assert recorder.received == []


def five_users_in_three_shards(tmp_path: Path, plan: list[dict[str, str]], pages: Any) -> Any:
    """Cohort ``c1``'s five users, read two to a page and a shard with ``strict`` consistency
    from a server answering ``pages``; the table published."""
    from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
    from tests.integration.export_servers import ExportServer

    with ExportServer(plan=plan, count=5, pages=pages) as server:
        config = ClientConfig(server.base_url, token="t0k", app_key="app")
        with AnalyticsClient(config) as api:
            summary = export(
                api,
                tmp_path,
                "c1",
                ["distinct_id", "vip"],
                mode="pages",
                page_size=2,
                shard_rows=2,
                consistency="strict",
            )
    assert (summary["rows"], summary["shards"]) == (5, 3)
    return pq.read_table(tmp_path / "users/cohort_code=c1/dt=2024-01-15/users.parquet")


def test_number_ids_of_a_text_id_property_pass_the_check_as_the_parts_hold_them(
    tmp_path: Path,
) -> None:
    """A platform that sends a string property's ids as JSON numbers: the parts hold their JSON
    text (the value rule), and the pages read again are compared as such (the check compared
    1000 with "1000" and refused every publication as a cohort that changed)."""

    plan = [{"id": "distinct_id", "dataType": "string"}, {"id": "vip", "dataType": "boolean"}]

    def pages(body: dict[str, Any]) -> dict[str, Any]:
        page, size = body.get("page", 1), body.get("pageSize", 1000)
        users = [{"distinct_id": 1000 + i, "vip": True} for i in range((page - 1) * size, 5)]
        users = users[:size]
        return {"count": 5, "page": page, "size": len(users), "users": users}

    table = five_users_in_three_shards(tmp_path, plan, pages)
    assert table.column("distinct_id").to_pylist() == ["1000", "1001", "1002", "1003", "1004"]


@pytest.mark.parametrize("data_type", ["datetime", "array<string>"])
def test_an_id_property_whose_ids_cannot_be_compared_is_refused_before_any_page(
    tmp_path: Path, data_type: str
) -> None:
    """Publication compares ids (no user twice, the pages read again): a datetime id (parts
    hold times, pages read again hold text) or a list id (no kernel counts lists) is refused
    by name when the plan is made, from the property's type, before any page is read."""
    from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
    from tests.integration.export_servers import ExportServer

    plan = [{"id": "distinct_id", "dataType": data_type}, {"id": "vip", "dataType": "boolean"}]
    asked: list[dict[str, Any]] = []

    def pages(body: dict[str, Any]) -> dict[str, Any]:
        asked.append(body)
        return {"count": 2, "page": 1, "size": 0, "users": []}

    with ExportServer(plan=plan, count=2, pages=pages) as server:
        config = ClientConfig(server.base_url, token="t0k", app_key="app")
        with AnalyticsClient(config) as api, pytest.raises(AnalyticsValidationError) as refused:
            export(api, tmp_path, "c1", ["distinct_id", "vip"], mode="pages")
    assert refused.value.field == "id_property"
    assert "must be a string or number property: 'distinct_id' is written as" in str(refused.value)
    assert asked == []
    assert not (tmp_path / "users").exists()


def text_ids_sent_as(written: list[str]) -> Any:
    """A server of five users whose ``distinct_id`` (a string property) is sent as the JSON
    texts ``written``, byte for byte, on the pages and on the pages read again."""

    def pages(body: dict[str, Any]) -> bytes:
        page, size = body.get("page", 1), body.get("pageSize", 1000)
        vip = "" if body.get("properties") == ["distinct_id"] else ', "vip": true'
        users = [f'{{"distinct_id": {text}{vip}}}' for text in written]
        users = users[(page - 1) * size : page * size]
        return b'{"count": 5, "page": %d, "size": %d, "users": [%s]}' % (
            page,
            len(users),
            ",".join(users).encode(),
        )

    return pages


TEXT_ID_PLAN = [{"id": "distinct_id", "dataType": "string"}, {"id": "vip", "dataType": "boolean"}]


def test_text_ids_sent_as_number_tokens_are_compared_as_the_parts_hold_them(
    tmp_path: Path,
) -> None:
    """A string id sent as numbers not written as ``json.dumps`` writes them (``1E3``,
    ``1.50``, ``-0``) keeps each token's text in the parts (the value rule), and the pages
    read again are compared by that same rule: publication goes through, not refused as a
    cohort that changed (``"1E3"`` against ``"1000.0"``)."""
    tokens = ["1E3", "1.50", "-0", "7", "2e-1"]
    table = five_users_in_three_shards(tmp_path, TEXT_ID_PLAN, text_ids_sent_as(tokens))
    assert table.column("distinct_id").to_pylist() == tokens


def test_ids_holding_line_separators_unescaped_are_compared_whole(tmp_path: Path) -> None:
    """JSON strings may hold U+2028, U+2029 and U+0085 as they are; the pages read again were
    cut at them (``str.splitlines``), and publication raised a bare ``JSONDecodeError``."""
    ids = ["a\u2028b", "c\u2029d", "e\x85f", "g", "h"]
    pages = text_ids_sent_as([f'"{one}"' for one in ids])
    table = five_users_in_three_shards(tmp_path, TEXT_ID_PLAN, pages)
    assert table.column("distinct_id").to_pylist() == ids


@pytest.mark.parametrize(
    ("big", "refused"), [(2**53 + 1, True), (2**54, False)], ids=["inexact", "exact"]
)
def test_a_number_column_int64_in_one_shard_and_double_in_another_follows_the_number_rule(
    tmp_path: Path, big: int, refused: bool
) -> None:
    """Shard 0 holds only integers of a ``number`` column, shard 1 a decimal: the day's column
    is double, and the merge keeps the stream's number rule. An integer no double holds
    exactly is refused by name before anything is published (not Arrow's bare
    ``ArrowInvalid`` in the merge); one a double holds exactly, even beyond 2**53, is
    published as the stream publishes it."""
    from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
    from airflow_provider_analytics.core.errors import ExportDataError
    from tests.integration.export_servers import ExportServer

    plan = [{"id": "distinct_id", "dataType": "string"}, {"id": "n", "dataType": "number"}]
    users = [{"distinct_id": "a", "n": big}, {"distinct_id": "b", "n": 1.5}]

    def pages(body: dict[str, Any]) -> dict[str, Any]:
        page, size = body.get("page", 1), body.get("pageSize", 1000)
        shown = [{key: user[key] for key in body["properties"]} for user in users]
        sent = shown[(page - 1) * size : page * size]
        return {"count": 2, "page": page, "size": len(sent), "users": sent}

    with ExportServer(plan=plan, count=2, pages=pages) as server:
        config = ClientConfig(server.base_url, token="t0k", app_key="app")
        with AnalyticsClient(config) as api:
            run = functools.partial(
                export, api, tmp_path, "c1", ["distinct_id", "n"], mode="pages", page_size=1
            )
            if refused:
                with pytest.raises(ExportDataError, match=r"a double cannot hold exactly") as no:
                    run(shard_rows=1)
                assert "schema_overrides={'n': 'decimal'}" in str(no.value)
                assert "(row 1 of the export)" in str(no.value)
                assert not (tmp_path / "users").exists()
                return
            run(shard_rows=1)
    table = pq.read_table(tmp_path / "users/cohort_code=c1/dt=2024-01-15/users.parquet")
    assert table.column("n").to_pylist() == [float(big), 1.5]
