"""A cohort read in shards of the paged endpoint: the same rows and values as the stream, a
shard's failure retried alone, a resumed try that reuses finished shards, a cohort that changes
while it is read refused by name with nothing published, and one publication."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest
from airflow.sdk import ObjectStoragePath

from airflow_provider_analytics.client import AnalyticsClient
from airflow_provider_analytics.client.validation import cohort_query
from airflow_provider_analytics.core.errors import (
    AnalyticsError,
    AnalyticsServerError,
    AnalyticsValidationError,
)
from airflow_provider_analytics.core.identity import cohort_identity
from airflow_provider_analytics.export import shards as cohort_shards
from airflow_provider_analytics.export.cohort_day import export_cohort_day, start_shards
from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.export.stream import prepare_export
from airflow_provider_analytics.output.parquet_destination import ParquetDestination

if TYPE_CHECKING:
    from pathlib import Path

    from tests.emulator_helpers import EmulatorAdmin

pytestmark = pytest.mark.integration

DAY = "2024-01-15"
SHARDED = {"mode": "pages", "page_size": 100, "shard_rows": 250}
"""1000 users: 10 pages of 100, 2 pages a shard, 5 shards."""


def destination(root: Path, code: str = "cohort_small") -> ParquetDestination:
    return ParquetDestination(f"{root.as_uri()}/users/", cohort_identity(code))


def export(client: AnalyticsClient, root: Path, **settings: Any) -> dict[str, Any]:
    query = cohort_query("cohort_small")
    return export_cohort_day(
        client,
        query,
        destination(root),
        DAY,
        timezone="Asia/Shanghai",
        settings=ExportSettings(retry_delay=0.01),
        **settings,
    )


def published(root: Path) -> Any:
    path = root / "users/cohort_code=cohort_small/dt=2024-01-15/users.parquet"
    return pq.read_table(path).sort_by("distinct_id")


def page_calls(admin: EmulatorAdmin) -> int:
    return int(admin.stats()["requests"].get("get_cohort_users", 0))


def test_shards_give_the_streams_rows_and_values(client: AnalyticsClient, tmp_path: Path) -> None:
    streamed = export(client, tmp_path / "stream", mode="stream")
    sharded = export(client, tmp_path / "pages", **SHARDED, max_parallel_shards=3)
    assert (streamed["mode"], sharded["mode"]) == ("stream", "pages")
    assert sharded["rows"] == sharded["count"] == streamed["rows"] == 1000
    assert sharded["shards"] == 5
    one, other = published(tmp_path / "stream"), published(tmp_path / "pages")
    assert other.schema.remove_metadata() == one.schema.remove_metadata()
    assert other.equals(one)
    assert (
        pq.read_schema(
            tmp_path / "pages/users/cohort_code=cohort_small/dt=2024-01-15/users.parquet"
        ).metadata[b"analytics.identity"]
        == b"cohort_code=cohort_small"
    )
    # the staging folder is gone once published, and never was under the prefix
    assert not any((tmp_path / "pages/users.staging").rglob("*.parquet"))
    assert sorted(p.name for p in (tmp_path / "pages/users").rglob("*")) == [
        "cohort_code=cohort_small",
        "dt=2024-01-15",
        "users.parquet",
    ]


def test_auto_streams_a_cohort_under_the_threshold(
    client: AnalyticsClient,
    tmp_path: Path,
    emulator_admin: EmulatorAdmin,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counts_before = page_calls(emulator_admin)
    assert cohort_shards.STREAM_ROWS_MAX == 1_000_000
    monkeypatch.setattr(cohort_shards, "STREAM_ROWS_MAX", 1000)  # the cohort's 1000 users
    assert export(client, tmp_path)["mode"] == "stream"
    # the cohort's count is asked for once: auto mode's answer sizes the stream too
    assert page_calls(emulator_admin) - counts_before == 1
    monkeypatch.setattr(cohort_shards, "STREAM_ROWS_MAX", 999)
    assert export(client, tmp_path / "above", page_size=100)["mode"] == "pages"


def test_a_shards_failure_is_retried_alone(
    client: AnalyticsClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Page 6 (shard 2's second page) fails past the client's own retries, once: shard 2 is
    read again from its first page, and no other shard is."""
    real = AnalyticsClient.get_cohort_user_lines
    pages: list[int] = []
    failed = []

    def flaky(self: AnalyticsClient, *args: Any, **kwargs: Any) -> Any:
        page = kwargs["page"]
        if page == 6 and not failed:
            failed.append(page)
            raise AnalyticsServerError("HTTP 504 from the proxy", status=504)
        if list(args[0].properties) != ["distinct_id"]:  # not publication's ids-only check
            pages.append(page)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(AnalyticsClient, "get_cohort_user_lines", flaky)
    export(client, tmp_path, **SHARDED)
    assert sorted(pages) == [1, 2, 3, 4, 5, 5, 6, 7, 8, 9, 10]
    assert published(tmp_path).num_rows == 1000


def test_a_killed_try_resumes_from_its_finished_shards(
    client: AnalyticsClient, emulator_admin: EmulatorAdmin, tmp_path: Path
) -> None:
    query = cohort_query("cohort_small")
    target = destination(tmp_path)
    prepared = prepare_export(client, query, timezone="Asia/Shanghai")
    plan, reader = start_shards(client, prepared, target, DAY, 100, 250)
    for shard in plan.shards[:3]:  # the try is killed after three shards
        reader.read(shard)
    before = page_calls(emulator_admin)
    result = export(client, tmp_path, **SHARDED)
    # the resumed try: a one-row call to plan, 4 pages of the two shards left, the last count,
    # and the first page of each of the 5 shards read again
    assert page_calls(emulator_admin) - before == 1 + 4 + 1 + 5
    assert result["rows"] == published(tmp_path).num_rows == 1000
    assert len(set(published(tmp_path).column("distinct_id").to_pylist())) == 1000


def test_a_staging_folder_of_another_plan_is_started_over(
    client: AnalyticsClient, tmp_path: Path
) -> None:
    query = cohort_query("cohort_small")
    target = destination(tmp_path)
    prepared = prepare_export(client, query, timezone="Asia/Shanghai")
    plan, reader = start_shards(client, prepared, target, DAY, 100, 250)
    reader.read(plan.shards[0])
    other, _ = start_shards(client, prepared, target, DAY, 100, 500)
    assert other != plan
    assert sorted(p.name for p in target.staging(DAY).iterdir()) == ["plan.json"]


def test_a_cohort_that_changes_while_read_is_refused_and_nothing_published(
    client: AnalyticsClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export(client, tmp_path, mode="stream")
    before = published(tmp_path)
    real = AnalyticsClient.get_cohort_user_lines
    calls = {"n": 0}

    def recomputed(self: AnalyticsClient, *args: Any, **kwargs: Any) -> Any:
        answer = real(self, *args, **kwargs)
        calls["n"] += 1
        if calls["n"] > 4:  # the cohort grows by one user after a few pages
            envelope = {**answer.envelope, "count": answer.envelope["count"] + 1}
            answer = dataclasses.replace(answer, envelope=envelope)
        return answer

    monkeypatch.setattr(AnalyticsClient, "get_cohort_user_lines", recomputed)
    with pytest.raises(cohort_shards.CohortChangedError, match="changed while it was read"):
        export(client, tmp_path, **SHARDED)
    assert published(tmp_path).equals(before)  # the earlier output stays


def test_a_user_in_two_shards_is_refused(
    client: AnalyticsClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = AnalyticsClient.get_cohort_user_lines

    def repeated(self: AnalyticsClient, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("page") == 3:  # page 3 gives page 2's users again (a reordering)
            kwargs["page"] = 2
        return real(self, *args, **kwargs)

    monkeypatch.setattr(AnalyticsClient, "get_cohort_user_lines", repeated)
    with pytest.raises(cohort_shards.CohortChangedError, match="appears in two shards"):
        export(client, tmp_path, **SHARDED)
    assert not (tmp_path / "users/cohort_code=cohort_small").exists()


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"mode": "shards"}, "mode"),
        ({"mode": "pages", "page_size": 10_001}, "page_size"),
        ({"mode": "pages", "shard_rows": 0}, "shard_rows"),
        ({"mode": "pages", "max_parallel_shards": 0}, "max_parallel_shards"),
    ],
)
def test_settings_are_refused_by_name_before_any_request(
    client: AnalyticsClient, emulator_admin: EmulatorAdmin, tmp_path: Path, settings, field
) -> None:
    before = sum(emulator_admin.stats()["requests"].values())
    with pytest.raises(AnalyticsValidationError) as caught:
        export(client, tmp_path, **settings)
    assert caught.value.field == field
    assert sum(emulator_admin.stats()["requests"].values()) == before


def test_pages_need_the_user_id(client: AnalyticsClient, tmp_path: Path) -> None:
    query = cohort_query("cohort_small", properties=["$city"])
    with pytest.raises(AnalyticsValidationError, match="distinct_id"):
        export_cohort_day(client, query, destination(tmp_path), DAY, **SHARDED, timezone="UTC")


def test_a_plan_record_of_another_shape_is_refused_by_name(tmp_path: Path) -> None:
    staging = ObjectStoragePath((tmp_path / "staging").as_uri() + "/")
    (tmp_path / "staging").mkdir()
    (tmp_path / "staging/plan.json").write_text('{"cohort_code": "x", "count": "7"}')
    with pytest.raises(cohort_shards.ShardStagingError, match="not a shard plan"):
        cohort_shards.read_plan(staging)
    assert dt.date.fromisoformat(DAY)


def test_readers_see_the_old_day_or_the_new_never_a_mix(
    client: AnalyticsClient, tmp_path: Path
) -> None:
    """pyarrow datasets and DuckDB read the prefix over and over while a sharded run replaces
    a day of 400 users with one of 1000: every read sees 400 or 1000 rows."""
    import threading

    import duckdb
    import pyarrow.dataset as ds

    query = cohort_query("cohort_small", limit=400)
    export_cohort_day(client, query, destination(tmp_path), DAY, mode="stream", timezone="UTC")
    seen: list[int] = []
    errors: list[BaseException] = []
    done = threading.Event()
    glob = f"{tmp_path}/users/*/*/*.parquet"

    def read() -> None:
        with duckdb.connect() as db:
            while not done.is_set():
                try:
                    dataset = ds.dataset(tmp_path / "users", format="parquet", partitioning="hive")
                    seen.append(dataset.count_rows())
                    seen.append(db.execute(f"SELECT count(*) FROM '{glob}'").fetchone()[0])
                except FileNotFoundError:
                    continue  # the listing named the file a rename was replacing: read again
                except BaseException as error:
                    errors.append(error)
                    return

    reader = threading.Thread(target=read)
    reader.start()
    try:
        export(client, tmp_path, **SHARDED)
    finally:
        done.set()
        reader.join(timeout=60)
    assert not errors, errors
    assert seen and set(seen) <= {400, 1000}
    assert published(tmp_path).num_rows == 1000


def test_shards_publish_into_iceberg_as_one_commit(client: AnalyticsClient, tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    from airflow_provider_analytics.output.iceberg_destination import IcebergDestination

    catalog = SqlCatalog(
        "lake", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/wh"
    )
    query = cohort_query("cohort_small")
    tables = {}
    for mode in ("stream", "pages"):
        target = IcebergDestination(
            lambda: catalog,
            "lake",
            f"analytics.users_{mode}",
            cohort_identity("cohort_small"),
            staging_root=(tmp_path / "staging").as_uri(),
        )
        settings = SHARDED if mode == "pages" else {"mode": "stream"}
        result = export_cohort_day(client, query, target, DAY, timezone="UTC", **settings)
        assert result["iceberg"]["rows"] == 1000
        table = catalog.load_table(f"analytics.users_{mode}")
        assert len(table.snapshots()) == 1  # one commit, whatever the shards
        tables[mode] = table.scan().to_arrow().sort_by("distinct_id")
    assert tables["pages"].equals(tables["stream"])
    assert not list((tmp_path / "staging").rglob("*.parquet"))


def test_each_shard_and_the_whole_report_their_progress(
    client: AnalyticsClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    with caplog.at_level(logging.INFO):
        export(client, tmp_path, **SHARDED)
    lines = [record.getMessage() for record in caplog.records]
    for index in range(5):
        done = [
            line for line in lines if line.startswith(f"cohort cohort_small shard {index}: done")
        ]
        assert len(done) == 1 and "200 rows" in done[0], lines
    (whole,) = [line for line in lines if line.startswith("cohort cohort_small, all shards: done")]
    assert "1000 rows" in whole and "/s" in whole


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (b'{"distinct_id": 5, "distinct_id": 6}', "twice"),
        (b'{"distinct_id": NaN}', "NaN"),
    ],
    ids=["a repeated key", "NaN"],
)
def test_a_hostile_user_on_a_page_is_refused_as_the_stream_refuses_it(
    client: AnalyticsClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    line: bytes,
    says: str,
) -> None:
    real = AnalyticsClient.get_cohort_user_lines

    def hostile(self: AnalyticsClient, *args: Any, **kwargs: Any) -> Any:
        answer = real(self, *args, **kwargs)
        if kwargs.get("page") != 4:
            return answer
        rest = answer.lines.partition(b"\n")[2]
        return dataclasses.replace(answer, lines=line + b"\n" + rest)

    monkeypatch.setattr(AnalyticsClient, "get_cohort_user_lines", hostile)
    query = cohort_query("cohort_small", properties=["distinct_id"])
    with pytest.raises(AnalyticsError, match=says):
        export_cohort_day(client, query, destination(tmp_path), DAY, **SHARDED, timezone="UTC")
    assert not (tmp_path / "users/cohort_code=cohort_small").exists()


def test_a_key_echoing_the_token_on_a_page_is_masked_as_the_streams_is(
    client: AnalyticsClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The pages hold the same redaction as the stream: a user key the export did not ask for,
    named after the token, is logged masked (the shard reader's decoder knows the secrets)."""
    token = client.config.token
    assert token
    real = AnalyticsClient.get_cohort_user_lines

    def echoing(self: AnalyticsClient, *args: Any, **kwargs: Any) -> Any:
        answer = real(self, *args, **kwargs)
        first, _, rest = answer.lines.partition(b"\n")
        tagged = first[:-1] + b', "' + str(token).encode() + b'": 1}'
        return dataclasses.replace(answer, lines=tagged + b"\n" + rest)

    monkeypatch.setattr(AnalyticsClient, "get_cohort_user_lines", echoing)
    query = cohort_query("cohort_small", properties=["distinct_id"])
    with caplog.at_level(logging.WARNING):
        export_cohort_day(client, query, destination(tmp_path), DAY, **SHARDED, timezone="UTC")
    warned = [r.getMessage() for r in caplog.records if "did not ask for" in r.getMessage()]
    assert warned and all("'***'" in message for message in warned)
    assert str(token) not in caplog.text


def test_an_empty_cohort_read_in_pages_publishes_its_columns(tmp_path: Path) -> None:
    """A cohort of no users in pages mode: one shard of page 1 (none made an IndexError out of
    the publication), published as the stream publishes it, an empty file of its columns."""
    from airflow_provider_analytics.client import ClientConfig
    from tests.integration.export_servers import ExportServer

    plan = [{"id": "distinct_id", "dataType": "string"}, {"id": "age", "dataType": "number"}]
    with ExportServer(plan=plan, count=0) as server:
        config = ClientConfig(server.base_url, token="t0k", app_key="app")
        with AnalyticsClient(config) as api:
            for limit in (None, 5):  # the pages of a limited one ask for one user, not 0
                summary = export_cohort_day(
                    api,
                    cohort_query("c1", limit=limit, properties=["distinct_id", "age"]),
                    destination(tmp_path, "c1"),
                    DAY,
                    mode="pages",
                    timezone="UTC",
                    settings=ExportSettings(retry_delay=0.01),
                )
                assert (summary["mode"], summary["rows"], summary["shards"]) == ("pages", 0, 1)
                table = pq.read_table(tmp_path / "users/cohort_code=c1/dt=2024-01-15/users.parquet")
                assert (table.num_rows, table.column_names) == (0, ["distinct_id", "age"])


@pytest.mark.parametrize("mode", ["auto", "pages"])
def test_a_cohort_code_names_the_cohort_as_a_query_does(tmp_path: Path, mode: str) -> None:
    """``export_cohort_day`` takes a cohort code, as ``export_cohort_to_parquet`` does (auto
    and pages mode raised AttributeError on it); a code that is not text is refused by name, and
    a destination that is not one (text raised AttributeError)."""
    from airflow_provider_analytics.client import ClientConfig
    from tests.integration.export_servers import ExportServer

    plan = [{"id": "distinct_id", "dataType": "string"}]
    with ExportServer(plan=plan, count=0) as server:
        config = ClientConfig(server.base_url, token="t0k", app_key="app")
        with AnalyticsClient(config) as api:
            day = destination(tmp_path, "c1")
            summary = export_cohort_day(api, "c1", day, DAY, mode=mode, timezone="UTC")
            with pytest.raises(AnalyticsValidationError, match="cohort_code: must be"):
                export_cohort_day(api, None, day, DAY, mode=mode)  # type: ignore[arg-type]
            with pytest.raises(AnalyticsValidationError, match="destination: must be"):
                export_cohort_day(api, "c1", str(tmp_path), DAY)  # type: ignore[arg-type]
    assert summary["rows"] == 0


def test_a_limited_cohort_is_read_in_pages_no_larger_than_its_limit(
    client: AnalyticsClient, tmp_path: Path
) -> None:
    """A page may not exceed the request's limit: 150 users of the default pages of 5,000 were
    refused at the first page, once the count was asked for and the plan recorded."""
    summary = export_cohort_day(
        client,
        cohort_query("cohort_small", limit=150),
        destination(tmp_path),
        DAY,
        mode="pages",
        timezone="Asia/Shanghai",
        settings=ExportSettings(retry_delay=0.01),
    )
    assert (summary["rows"], summary["page_size"], summary["shards"]) == (150, 150, 1)
    assert published(tmp_path).num_rows == 150
