"""Cohort export to Parquet against the emulator over real HTTP, read back and checked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from airflow.sdk import ObjectStoragePath
from analytics_emulator import catalog

from airflow_provider_analytics.client import AnalyticsClient, AnalyticsError, ClientConfig
from airflow_provider_analytics.export.schema import (
    DOUBLE_TYPE,
    NUMBER_TYPE,
    TIMESTAMP_TYPE,
)
from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.export.stream import (
    ExportIncompleteError,
    export_cohort_to_parquet,
)
from airflow_provider_analytics.output.storage import AnalyticsStorageError

if TYPE_CHECKING:
    from pathlib import Path

    from tests.emulator_helpers import EmulatorAdmin

pytestmark = pytest.mark.integration

FAST_RETRY = ExportSettings(retry_delay=0.01, attempts=3)
EXPECTED_TYPES = {
    "string": pa.string(),
    "number": NUMBER_TYPE,
    "boolean": pa.bool_(),
    "datetime": TIMESTAMP_TYPE,
    "array<string>": pa.list_(pa.string()),
}
DECIMAL_PROPERTIES = {"balance", "score"}
"""The emulator's number properties that hold decimals (written like ``12.30``): double."""


def destination(tmp_path: Path, name: str = "users.parquet") -> ObjectStoragePath:
    return ObjectStoragePath(f"file://{tmp_path}/cohort=x/dt=2024-01-05/{name}")


def export(client: AnalyticsClient, tmp_path: Path, cohort: str, **kwargs: Any) -> Any:
    """The export with the platform's ids as column names, so that columns compare with the
    plan's ids (the default names: test_cohort_column_names.py)."""
    kwargs.setdefault("column_names", "ids")
    kwargs.setdefault("settings", FAST_RETRY)
    kwargs.setdefault("timezone", catalog.PROJECT_TIMEZONE)
    return export_cohort_to_parquet(client, cohort, destination(tmp_path), **kwargs)


def read_back(tmp_path: Path) -> pa.Table:
    return pq.read_table(str(tmp_path / "cohort=x/dt=2024-01-05/users.parquet"))


def files_in(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "cohort=x/dt=2024-01-05").iterdir())


def test_default_columns_are_typed_from_the_plan(client: AnalyticsClient, tmp_path: Path) -> None:
    result = export(client, tmp_path, "cohort_small")
    table = read_back(tmp_path)
    assert result.rows == result.expected_rows == table.num_rows == 1000
    assert table.column_names == catalog.default_user_property_ids() == result.columns
    for prop in catalog.USER_PROPERTIES:
        if prop.id not in table.column_names:
            continue
        expected = pa.string() if prop.masking else EXPECTED_TYPES[prop.data_type]
        if prop.id in DECIMAL_PROPERTIES:
            expected = DOUBLE_TYPE
        assert table.schema.field(prop.id).type == expected, prop.id
    assert set(table.column("phone").to_pylist()) == {catalog.MASKED_MARKER}
    assert result.masked_values == 0
    assert (
        result.bytes_written == (tmp_path / "cohort=x/dt=2024-01-05/users.parquet").stat().st_size
    )


def test_values_equal_the_paged_endpoint_exactly(client: AnalyticsClient, tmp_path: Path) -> None:
    columns = ["distinct_id", "balance", "nickname", "interests", "is_vip", "tag.tag_rfm"]
    export(client, tmp_path, "cohort_small", properties=columns, limit=200)
    table = read_back(tmp_path)
    assert table.schema.field("distinct_id").type == pa.int64()  # the default keeps ids exact
    paged = client.get_cohort_users(
        "cohort_small",
        limit=200,
        properties=["distinct_id", "balance", "nickname", "interests", "is_vip", "tag_rfm"],
    )["users"]
    assert table.num_rows == len(paged) == 200
    assert table.column_names == columns
    for row, user in zip(table.to_pylist(), paged, strict=True):
        assert row["distinct_id"] == user["distinct_id"]  # ids beyond 2**53, exact
        assert row["balance"] == user["balance"]  # float64: the same double
        assert row["nickname"] == user["nickname"]
        assert row["interests"] == user["interests"]
        assert row["is_vip"] == user["is_vip"]
        assert row["tag.tag_rfm"] == user["tag.tag_rfm"]
    assert any(abs(int(v)) > 2**53 for v in table.column("distinct_id").to_pylist())
    assert any(v is not None for v in table.column("tag.tag_rfm").to_pylist())


def test_marker_in_a_typed_column_becomes_null_and_is_counted(
    client: AnalyticsClient, emulator_admin: EmulatorAdmin, tmp_path: Path
) -> None:
    emulator_admin.mask_values(["age", "is_vip", "register_time"])
    result = export(
        client,
        tmp_path,
        "cohort_tiny",
        properties=["distinct_id", "age", "is_vip", "register_time"],
    )
    table = read_back(tmp_path)
    assert table.schema.field("age").type == NUMBER_TYPE
    for column in ("age", "is_vip", "register_time"):
        assert table.column(column).null_count == table.num_rows == 7
    assert result.masked_values == 3 * 7


def test_multibyte_text_split_across_tiny_chunks_is_intact(
    client: AnalyticsClient, tmp_path: Path
) -> None:
    columns = ["distinct_id", "nickname", "$city", "interests"]
    export(client, tmp_path / "big", "cohort_small", properties=columns, limit=300)
    export(
        client,
        tmp_path / "tiny",
        "cohort_small",
        properties=columns,
        limit=300,
        settings=ExportSettings(chunk_bytes=7, block_bytes=301, row_group_rows=64),
    )
    big, tiny = read_back(tmp_path / "big"), read_back(tmp_path / "tiny")
    assert tiny.equals(big)
    assert any(ord(ch) > 0xFFFF for v in big.column("nickname").to_pylist() if v for ch in v)
    assert (
        pq.read_metadata(str(tmp_path / "tiny/cohort=x/dt=2024-01-05/users.parquet")).num_row_groups
        > 1
    )


def test_empty_cohort_writes_the_full_schema_with_no_rows(
    client: AnalyticsClient, tmp_path: Path
) -> None:
    result = export(client, tmp_path, "cohort_empty")
    table = read_back(tmp_path)
    assert result.rows == table.num_rows == 0
    assert table.column_names == catalog.default_user_property_ids()
    assert table.schema.field("distinct_id").type == NUMBER_TYPE


def test_limit_caps_rows_and_expected_count(client: AnalyticsClient, tmp_path: Path) -> None:
    result = export(client, tmp_path, "cohort_small", limit=123, properties=["distinct_id"])
    assert result.rows == result.expected_rows == read_back(tmp_path).num_rows == 123
    result = export(client, tmp_path, "cohort_tiny", limit=500, properties=["distinct_id"])
    assert result.rows == result.expected_rows == 7


class _OvercountingClient(AnalyticsClient):
    """Reports a bigger cohort than the export delivers: a stream that ends early, cleanly."""

    def get_cohort_users(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        page = super().get_cohort_users(*args, **kwargs)
        return {**page, "count": page["count"] + 3}


def test_short_stream_fails_with_expected_and_received_and_writes_nothing(
    client: AnalyticsClient, tmp_path: Path
) -> None:
    liar = _OvercountingClient(client.config)
    with pytest.raises(ExportIncompleteError, match=r"expected 10 rows but the export delivered 7"):
        export(liar, tmp_path, "cohort_tiny", properties=["distinct_id"])
    assert not (tmp_path / "cohort=x").exists() or files_in(tmp_path) == []


@pytest.mark.parametrize("kind", ["cut_after_rows", "cut_inside_line", "malformed_line"])
def test_broken_stream_is_retried_from_the_start(
    client: AnalyticsClient, emulator_admin: EmulatorAdmin, tmp_path: Path, kind: str
) -> None:
    emulator_admin.fault("export_cohort_users", kind, rows=400, times=1)
    result = export(client, tmp_path, "cohort_small", properties=["distinct_id", "nickname"])
    assert result.attempts == 2
    table = read_back(tmp_path)
    assert table.num_rows == 1000
    assert len(set(table.column("distinct_id").to_pylist())) == 1000  # no duplicates


def test_broken_every_time_fails_clearly_and_leaves_nothing(
    client: AnalyticsClient, emulator_admin: EmulatorAdmin, tmp_path: Path
) -> None:
    emulator_admin.fault("export_cohort_users", "cut_inside_line", rows=100, times=10)
    with pytest.raises(ExportIncompleteError, match="failed after 3 attempts, nothing written"):
        export(client, tmp_path, "cohort_small", properties=["distinct_id"])
    assert not (tmp_path / "cohort=x").exists() or files_in(tmp_path) == []


def test_failed_rerun_keeps_the_previous_file_and_rerun_replaces(
    client: AnalyticsClient, emulator_admin: EmulatorAdmin, tmp_path: Path
) -> None:
    export(client, tmp_path, "cohort_small", properties=["distinct_id"], limit=50)
    emulator_admin.fault("export_cohort_users", "cut_after_rows", rows=10, times=10)
    with pytest.raises(ExportIncompleteError):
        export(client, tmp_path, "cohort_small", properties=["distinct_id"], limit=60)
    assert read_back(tmp_path).num_rows == 50
    emulator_admin.clear_faults()
    export(client, tmp_path, "cohort_small", properties=["distinct_id"], limit=60)
    assert read_back(tmp_path).num_rows == 60
    assert files_in(tmp_path) == ["users.parquet"]


def test_bad_input_fails_before_any_request(tmp_path: Path) -> None:
    # no server at this address: any request would fail differently
    offline = AnalyticsClient(ClientConfig("http://127.0.0.1:9", token="t" * 8, app_key="a" * 8))
    with pytest.raises(ValueError, match="limit"):
        export(offline, tmp_path, "cohort_small", limit=0)
    with pytest.raises(ValueError, match="cohort_code"):
        export(offline, tmp_path, "")
    with pytest.raises(ValueError, match="properties"):
        export(offline, tmp_path, "cohort_small", properties=["bad id!"])


def test_a_storage_failure_names_the_destination_and_the_cohort(
    client: AnalyticsClient, tmp_path: Path
) -> None:
    # A custom destination has no cohort= partition to name the cohort by.
    (tmp_path / "plain-file").write_text("not a folder")
    target = ObjectStoragePath(f"file://{tmp_path}/plain-file/export.parquet")
    with pytest.raises(AnalyticsStorageError) as caught:
        export_cohort_to_parquet(client, "cohort_tiny", target)
    assert isinstance(caught.value, AnalyticsError)
    assert "plain-file/export.parquet" in str(caught.value)
    assert "(cohort 'cohort_tiny')" in str(caught.value)
