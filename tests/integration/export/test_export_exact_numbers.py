"""No value changed by default: integers near and beyond 2**53 come back from Parquet as the
integers the stream held, a column with decimals is double and refuses, by name, an integer a
double cannot hold, and a column that turns double after row groups were written as int64 is
rewritten exactly (issue: every answer checked, item 6). Bodies are sent by a local server,
and the emulator's ids are checked against its paged endpoint.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
from airflow_provider_analytics.export.decoder import ExportDataError
from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.export.stream import export_cohort_to_parquet, prepare_export
from airflow_provider_analytics.output.parquet_destination import (
    EarlierDayUnreadableError,
    earlier_schema,
)
from tests.integration.export_servers import ExportServer

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from analytics_emulator.server import EmulatorServer

PLAN = [{"id": "user_id", "dataType": "number"}, {"id": "amount", "dataType": "number"}]
ONCE = ExportSettings(attempts=1, retry_delay=0.0)
SMALL_GROUPS = ExportSettings(attempts=1, retry_delay=0.0, row_group_rows=10, block_bytes=256)
"""Row groups of 10 rows, blocks of a few lines: a column turns double after groups were
written."""
IDS = [
    4255875062385414000,
    -4635244755532264000,
    2**53 - 1,
    2**53,
    2**53 + 1,
    -(2**53) - 1,
    2**63 - 1,
    -(2**63),
    4255875062385414001,
    0,
    -1,
]
"""Integers a double holds and integers it does not, up to both ends of int64."""


def body_of(*records: dict[str, Any]) -> bytes:
    return b"".join(
        json.dumps({"user_id": None, "amount": None, **r}).encode() + b"\n" for r in records
    )


@pytest.fixture
def export(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    servers: list[ExportServer] = []

    def run(body: bytes, rows: int, **kwargs: Any) -> Any:
        server = ExportServer(plan=PLAN, count=rows, body=body).__enter__()
        servers.append(server)
        kwargs.setdefault("settings", ONCE)
        config = ClientConfig(server.base_url, token="t0k", app_key="app")
        with AnalyticsClient(config) as client:
            return export_cohort_to_parquet(client, "c1", tmp_path / "users.parquet", **kwargs)

    yield run
    for server in servers:
        server.__exit__(None, None, None)


def read(tmp_path: Path) -> pa.Table:
    return pq.read_table(tmp_path / "users.parquet")


def test_integers_near_and_beyond_2_53_come_back_exact_by_default(
    export: Callable[..., Any], tmp_path: Path
) -> None:
    body = body_of(*({"user_id": i, "amount": i % 7} for i in IDS))
    assert b"4255875062385414001" in body and b"9223372036854775807" in body
    result = export(body, len(IDS))
    table = read(tmp_path)
    assert table.schema.field("user_id").type == pa.int64()
    assert table.column("user_id").to_pylist() == IDS
    assert result.column_origins == {"user_id": "plan", "amount": "plan"}
    assert "inexact_values" not in result.as_dict()


def test_ids_stay_exact_across_row_groups_and_blocks(
    export: Callable[..., Any], tmp_path: Path
) -> None:
    ids = [
        IDS[i % len(IDS)] + (i // len(IDS)) * (1 if IDS[i % len(IDS)] < 0 else -1)
        for i in range(95)
    ]
    export(body_of(*({"user_id": i} for i in ids)), len(ids), settings=SMALL_GROUPS)
    assert read(tmp_path).column("user_id").to_pylist() == ids
    assert pq.ParquetFile(tmp_path / "users.parquet").num_row_groups == 10


def test_a_column_with_decimals_is_double_and_keeps_every_value(
    export: Callable[..., Any], tmp_path: Path
) -> None:
    amounts = [1, 14.898609719035171, 0.30000000000000004, 2**53, -3, 1e300, 5.0]
    text = [json.dumps(a) for a in amounts]
    body = b"".join(f'{{"user_id": 1, "amount": {t}}}\n'.encode() for t in text)
    export(body, len(amounts))
    table = read(tmp_path)
    assert table.schema.field("amount").type == pa.float64()
    assert table.schema.field("user_id").type == pa.int64()
    assert table.column("amount").to_pylist() == [float(a) for a in amounts]


@pytest.mark.parametrize("big_first", [True, False], ids=["integer first", "decimal first"])
def test_an_integer_a_double_cannot_hold_in_a_double_column_is_refused_by_name(
    export: Callable[..., Any], tmp_path: Path, big_first: bool
) -> None:
    records = [{"amount": 1}, {"amount": 4255875062385414001}, {"amount": 2}, {"amount": 0.5}]
    if not big_first:
        records = [records[0], records[3], records[2], records[1]]
    with pytest.raises(ExportDataError) as refused:
        export(body_of(*records), 4)
    message = str(refused.value)
    row = 2 if big_first else 4
    assert (
        f"column 'amount' (row {row} of the export): 4255875062385414001 is an integer" in message
    )
    assert "it would become 4255875062385414144" in message
    decimal_row = 4 if big_first else 2
    assert f"holds decimals (the first in row {decimal_row})" in message
    assert "schema_overrides={'amount': 'decimal'}" in message
    assert "schema_overrides={'amount': 'double'}" in message
    assert list(tmp_path.iterdir()) == []


def test_the_settings_the_refusal_names_accept_the_values(
    export: Callable[..., Any], tmp_path: Path
) -> None:
    body = body_of({"amount": 4255875062385414001}, {"amount": 0.5})
    export(body, 2, schema_overrides={"amount": "decimal"})
    assert [str(v) for v in read(tmp_path).column("amount").to_pylist()] == [
        "4255875062385414001.000000000",
        "0.500000000",
    ]
    export(body, 2, schema_overrides={"amount": "double"})
    assert read(tmp_path).column("amount").to_pylist() == [4255875062385414001.0, 0.5]


def test_the_int64_setting_refuses_a_decimal_by_name(
    export: Callable[..., Any], tmp_path: Path
) -> None:
    with pytest.raises(ExportDataError, match=r"column 'amount' \(row 2 .*not an integer"):
        export(body_of({"amount": 1}, {"amount": 1.5}), 2, schema_overrides={"amount": "int64"})


def test_a_decimal_beyond_the_range_of_a_double_is_refused_by_name(
    export: Callable[..., Any], tmp_path: Path
) -> None:
    body = b'{"user_id": 1, "amount": 0.5}\n{"user_id": 2, "amount": 1e400}\n'
    with pytest.raises(ExportDataError) as refused:
        export(body, 2)
    assert "column 'amount' (row 2 of the export): 1e400 is a decimal beyond the range" in str(
        refused.value
    )
    assert "schema_overrides={'amount': 'string'}" in str(refused.value)


def test_a_column_turning_double_after_written_row_groups_is_rewritten_exactly(
    export: Callable[..., Any], tmp_path: Path
) -> None:
    """Five row groups were written as int64 when the first decimal arrives: the file is
    rewritten row group by row group, as double, and no temporary is left beside it."""
    amounts: list[Any] = [2**53 - i for i in range(50)] + [-(2**60), 2**62]  # doubles hold these
    amounts += [i + 0.25 for i in range(30)]
    records = [{"user_id": i, "amount": a} for i, a in enumerate(amounts)]
    result = export(body_of(*records), len(records), settings=SMALL_GROUPS)
    table = read(tmp_path)
    assert table.schema.field("amount").type == pa.float64()
    assert table.schema.field("user_id").type == pa.int64()
    assert table.column("amount").to_pylist() == [float(a) for a in amounts]
    assert table.column("user_id").to_pylist() == list(range(len(records)))
    parquet = pq.ParquetFile(tmp_path / "users.parquet")
    assert parquet.num_row_groups == 9
    assert parquet.schema_arrow.field("amount").metadata == {b"analytics.id": b"amount"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["users.parquet"]
    assert result.bytes_written == (tmp_path / "users.parquet").stat().st_size


def test_an_integer_written_before_the_first_decimal_is_refused_by_name(
    export: Callable[..., Any], tmp_path: Path
) -> None:
    """Row 7 was written as int64 long before row 60 made the column double: the export fails
    naming row 7, and neither the file nor its temporaries are left."""
    amounts: list[Any] = [*range(59), 0.5]
    amounts[6] = 4255875062385414001
    records = [{"user_id": i, "amount": a} for i, a in enumerate(amounts)]
    with pytest.raises(ExportDataError) as refused:
        export(body_of(*records), len(records), settings=SMALL_GROUPS)
    assert "column 'amount' (row 7 of the export): 4255875062385414001" in str(refused.value)
    assert "(the first in row 60)" in str(refused.value)
    assert list(tmp_path.iterdir()) == []


def test_an_empty_export_writes_number_columns_as_int64(
    export: Callable[..., Any], tmp_path: Path
) -> None:
    result = export(b"", 0)
    assert result.rows == 0
    assert read(tmp_path).schema.field("amount").type == pa.int64()


def test_the_emulator_ids_come_back_as_the_paged_endpoint_gives_them(
    emulator: EmulatorServer, tmp_path: Path
) -> None:
    """The emulator's ids are random integers in [2**61, 2**62) of both signs, most of which a
    double cannot hold; with default settings each is the integer the platform holds."""
    config = emulator.config
    with AnalyticsClient(
        ClientConfig(emulator.base_url, token=config.token, app_key=config.app_key)
    ) as client:
        export_cohort_to_parquet(
            client,
            "cohort_small",
            tmp_path / "users.parquet",
            properties=["distinct_id", "age", "balance"],
            settings=ExportSettings(row_group_rows=100, retry_delay=0.0),
        )
        paged = client.get_cohort_users(
            "cohort_small", limit=1000, properties=["distinct_id", "age", "balance"]
        )["users"]
    table = read(tmp_path)
    assert table.schema.field("distinct_id").type == pa.int64()
    assert table.schema.field("age").type == pa.int64()
    assert table.schema.field("balance").type == pa.float64()
    assert table.column("distinct_id").to_pylist() == [u["distinct_id"] for u in paged]
    inexact = [i for i in table.column("distinct_id").to_pylist() if int(float(i)) != i]
    assert len(inexact) > 900  # most ids are integers a double would have changed
    assert table.column("balance").to_pylist() == [u["balance"] for u in paged]


def test_a_number_column_keeps_the_type_of_the_destinations_earlier_days(tmp_path: Path) -> None:
    """Day to day, a number column keeps the type an earlier day of the destination wrote it
    with: a decimal in a column the earlier days hold as int64 is refused by name, and a day
    of whole numbers in a column that turned double stays double."""
    days = tmp_path / "cohort=c1"

    def export_day(day: str, *records: dict[str, Any], **kwargs: Any) -> pa.Table:
        target = days / f"dt={day}" / "users.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        earlier = earlier_schema(days, day, "users.parquet")
        with ExportServer(plan=PLAN, count=len(records), body=body_of(*records)) as server:
            config = ClientConfig(server.base_url, token="t0k", app_key="app")
            with AnalyticsClient(config) as client:
                export_cohort_to_parquet(
                    client, "c1", target, settings=ONCE, destination_schema=earlier, **kwargs
                )
        return pq.read_table(target)

    first = export_day("2024-01-01", {"user_id": 1, "amount": 3}, {"user_id": 2, "amount": 4})
    assert first.schema.field("amount").type == pa.int64()

    with pytest.raises(ExportDataError) as refused:
        export_day("2024-01-02", {"user_id": 3, "amount": 1.5})
    message = str(refused.value)
    assert "column 'amount' (row 1 of the export)" in message
    assert "earlier days hold the column as int64" in message
    assert "schema_overrides={'amount': 'double'}" in message
    assert not (days / "dt=2024-01-02" / "users.parquet").exists()

    second = export_day(
        "2024-01-02", {"user_id": 3, "amount": 1.5}, schema_overrides={"amount": "double"}
    )
    assert second.schema.field("amount").type == pa.float64()
    third = export_day("2024-01-03", {"user_id": 4, "amount": 7})
    assert third.schema.field("amount").type == pa.float64()
    assert third.column("amount").to_pylist() == [7.0]
    assert third.schema.field("user_id").type == pa.int64()
    with pytest.raises(ExportDataError, match=r"9007199254740993 is an integer that a double"):
        export_day("2024-01-04", {"user_id": 5, "amount": 2**53 + 1})
    # a rerun of the first day reads only the days before it
    assert earlier_schema(days, "2024-01-01", "users.parquet") is None


def test_an_unreadable_earlier_day_is_refused_naming_its_file(tmp_path: Path) -> None:
    days = tmp_path / "cohort=c1"
    broken = days / "dt=2024-01-01" / "users.parquet"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"not parquet at all")
    with pytest.raises(EarlierDayUnreadableError, match=r"dt=2024-01-01/users.parquet: the newest"):
        earlier_schema(days, "2024-01-02", "users.parquet")


def test_earlier_types_still_keeps_a_number_columns_type_and_warns(tmp_path: Path) -> None:
    """0.2.0's ``earlier_types=`` keeps working for one release: it names the number types an
    earlier day holds, and warns with its new name, naming the caller's line."""
    target = tmp_path / "users.parquet"
    with ExportServer(plan=PLAN, count=1, body=body_of({"user_id": 1, "amount": 3})) as server:
        config = ClientConfig(server.base_url, token="t0k", app_key="app")
        with (
            AnalyticsClient(config) as client,
            pytest.warns(DeprecationWarning, match="destination_schema=") as warned,
        ):
            export_cohort_to_parquet(
                client, "c1", target, settings=ONCE, earlier_types={"amount": pa.float64()}
            )
            prepare_export(client, "c1", earlier_types={"amount": pa.float64()})
    assert pq.read_table(target).schema.field("amount").type == pa.float64()
    assert [w.filename for w in warned] == [__file__, __file__]
