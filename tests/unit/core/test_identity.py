"""The identity gate: what a cohort code or report key may be, its folder name, the report key's
digest, and the partition columns no data column may take."""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_analytics.client.analysis_requests import FunnelRequest, FunnelStep
from airflow_provider_analytics.core.column_names import ColumnNames, column_name_map
from airflow_provider_analytics.core.errors import AnalyticsUsageError, AnalyticsValidationError
from airflow_provider_analytics.core.identity import (
    Identity,
    cohort_code,
    cohort_identity,
    hive_escape,
    report_identity,
    table_holds,
)

if TYPE_CHECKING:
    from pathlib import Path

STEPS = [{"expression": "event.$startup", "filter": None}, "event.purchase"]


def funnel(**body: object) -> FunnelRequest:
    return FunnelRequest.of({"steps": STEPS, "crowds": ["$ALL"], **body})


def test_a_cohort_is_named_by_its_code() -> None:
    assert str(cohort_identity("vip")) == "cohort_code=vip"
    assert Identity.parse("cohort_code=vip") == cohort_identity("vip")


@pytest.mark.parametrize("text", ["vip", "cohort=vip", "cohort_code=", "=x", "dt=2024-01-01"])
def test_only_the_two_identity_columns_parse(text: str) -> None:
    assert Identity.parse(text) is None


@pytest.mark.parametrize(
    "text",
    ["cohort_code=a/b", "cohort_code=' OR 1=1 --", "cohort_code=a\nb", "cohort_code=" + "x" * 1000],
)
def test_an_identity_no_operator_could_write_does_not_parse(text: str) -> None:
    with pytest.raises(AnalyticsValidationError) as refused:
        Identity.parse(text)
    assert refused.value.field == "cohort_code"


def test_the_digest_ignores_the_dates_and_the_key_order() -> None:
    one = report_identity("funnel", funnel(fromDate="2024-01-01", toDate="2024-01-01"))
    other = report_identity("funnel", FunnelRequest.of({"crowds": ["$ALL"], "steps": STEPS}))
    assert one == other
    assert one.column == "report_key"
    assert one.value.startswith("funnel_") and len(one.value) == len("funnel_") + 12


def test_any_other_value_changes_the_digest() -> None:
    changed = [
        funnel(crowds=["vip"]),
        funnel(steps=[*STEPS, "event.add_to_cart"]),
        funnel(convertTime=1, convertTimeUnit="DAY"),
    ]
    keys = {report_identity("funnel", request).value for request in [funnel(), *changed]}
    assert len(keys) == 4
    assert report_identity("events", funnel()).value != report_identity("funnel", funnel()).value


def test_a_dict_and_the_equivalent_typed_request_get_one_key() -> None:
    """The digest is over the request as sent: ``"event.purchase"`` and
    ``FunnelStep("event.purchase")`` send the same step."""
    typed = FunnelRequest(
        steps=[FunnelStep("event.$startup"), FunnelStep("event.purchase")], crowds=["$ALL"]
    )
    assert typed.to_body() == funnel().to_body()
    assert report_identity("funnel", typed) == report_identity("funnel", funnel())


def test_the_digest_needs_the_checked_request_not_a_dict() -> None:
    with pytest.raises(AnalyticsUsageError, match="checked request"):
        report_identity("funnel", {"steps": STEPS, "crowds": ["$ALL"]})  # type: ignore[arg-type]


def test_a_given_key_is_kept() -> None:
    assert report_identity("funnel", funnel(), "checkout.v2").value == "checkout.v2"


@pytest.mark.parametrize("key", ["", "-x", "a/b", "a b", "a=b", "x" * 65, 7, "ключ"])
def test_a_key_outside_the_rule_is_refused_by_name(key: object) -> None:
    with pytest.raises(AnalyticsValidationError) as caught:
        report_identity("funnel", funnel(), key)
    assert caught.value.field == "report_key"


def test_a_code_is_measured_in_bytes_of_its_folder_name() -> None:
    """90 Chinese characters are 270 bytes of UTF-8: refused by name, before any request,
    although 100 characters are allowed."""
    with pytest.raises(AnalyticsValidationError, match=r"at most 255 bytes.*282 bytes") as refused:
        cohort_code("用" * 90)
    assert refused.value.field == "cohort_code"
    assert cohort_code("用" * 81) == "用" * 81  # 12 + 243 bytes
    with pytest.raises(AnalyticsValidationError, match="bytes"):
        cohort_code("%" * 90)  # 90 characters, 270 bytes once escaped


def test_the_folder_is_escaped_as_hive_escapes() -> None:
    assert hive_escape("%76ip") == "%2576ip"
    assert cohort_identity("a:b?c#d*e[f]'g\"h{i}^j").folder == (
        "cohort_code=a%3Ab%3Fc%23d%2Ae%5Bf%5D%27g%22h%7Bi}%5Ej"
    )
    assert cohort_identity("日本 vip+").folder == "cohort_code=日本 vip+"


_CODES = st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=30).filter(
    lambda code: _accepted(code)
)


def _accepted(code: str) -> bool:
    try:
        cohort_code(code)
    except AnalyticsValidationError:
        return False
    return True


@settings(max_examples=25, deadline=None)
@given(codes=st.lists(_CODES, min_size=1, max_size=4, unique=True))
def test_every_accepted_code_reads_back_as_itself_in_pyarrow_and_duckdb(
    tmp_path_factory: pytest.TempPathFactory, codes: list[str]
) -> None:
    """Folders written by the one rule, read back by the hive partitioning of pyarrow and
    DuckDB: each reader sees each code itself, never another cohort's."""
    root: Path = tmp_path_factory.mktemp("hive")
    codes = [*codes, "vip", "%76ip", "a%2Fb", "50%"]
    codes = list(dict.fromkeys(codes))
    for number, code in enumerate(codes):
        folder = root / cohort_identity(code).folder / "dt=2024-01-05"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"n": [number]}), folder / "users.parquet")
    read = ds.dataset(root, format="parquet", partitioning="hive").to_table()
    assert dict(zip(read["n"].to_pylist(), read["cohort_code"].to_pylist(), strict=True)) == dict(
        enumerate(codes)
    )
    pattern = str(root / "*" / "*" / "*.parquet").replace("'", "''")
    rows = duckdb.sql(
        f"select n, cohort_code from read_parquet('{pattern}', hive_partitioning = true)"
    ).fetchall()
    assert dict(rows) == dict(enumerate(codes))


def test_partition_columns_are_never_data_columns_in_any_naming() -> None:
    """With ``ids`` a property named like a partition column is refused by name (in any case,
    as DuckDB and Spark compare names); with ``warehouse`` it gets a trailing ``_``."""
    for name in ("cohort_code", "dt", "DT", "report_key"):
        with pytest.raises(AnalyticsValidationError, match="partition column") as refused:
            column_name_map(["distinct_id", name], ColumnNames.IDS)
        assert refused.value.field == "properties"
    named = column_name_map(["cohort_code", "dt"], ColumnNames.WAREHOUSE)
    assert named == {"cohort_code": "cohort_code_", "dt": "dt_"}


def test_a_table_without_an_identity_column_holds_what_its_columns_say() -> None:
    assert table_holds(["distinct_id", "dt"]) == "cohort_code"
    assert table_holds(["report_updated_at", "report_updated_at_text", "dt"]) == "report_key"
    assert table_holds(["report_updated_at", "report_updated_at_text", "cohort_code"]) == (
        "cohort_code"
    )
