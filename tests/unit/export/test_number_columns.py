"""The ``number`` columns of one export as its blocks pass (export/number_columns.py): int64
until a decimal, then double, never rounding an integer silently."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_provider_analytics.core.errors import ExportDataError
from airflow_provider_analytics.export.number_columns import NumberColumns
from airflow_provider_analytics.export.schema import ExportColumn

COLUMNS = (
    ExportColumn("n", pa.int64(), "plan", widens=True),
    ExportColumn("m", pa.int64(), "plan", widens=True),
    ExportColumn("s", pa.string(), "plan"),
)
BIG = 2**53 + 1  # a double cannot hold it


def _table(n: list[int | None], m: list[int | None]) -> pa.Table:
    return pa.table(
        {"n": pa.array(n, pa.int64()), "m": pa.array(m, pa.int64()), "s": ["x"] * len(n)}
    )


def test_a_column_turns_double_and_earlier_tables_widen_exactly() -> None:
    numbers = NumberColumns(COLUMNS)
    assert numbers.int64_columns() == [0, 1]
    first = _table([1, None], [2, 3])
    numbers.note_inexact(first, 0)
    numbers.become_double(0, 5)
    assert numbers.doubles == {0: 5}
    assert numbers.int64_columns() == [1]
    schema = pa.schema([("n", pa.float64()), ("m", pa.int64()), ("s", pa.string())])
    widened = numbers.widen(first, schema, 0)
    assert widened.schema == schema
    assert widened.column("n").to_pylist() == [1.0, None]


def test_an_earlier_integer_a_double_cannot_hold_refuses_the_change_by_row() -> None:
    numbers = NumberColumns(COLUMNS)
    numbers.note_inexact(_table([1, 2], [3, 4]), 0)
    numbers.note_inexact(_table([5, BIG], [6, 7]), 2)  # rows 3 and 4 of the export
    with pytest.raises(ExportDataError, match=r"column 'n' \(row 4 of the export\)") as refused:
        numbers.become_double(0, 9)
    assert "the first in row 9" in str(refused.value)
    assert "schema_overrides={'n': 'decimal'}" in str(refused.value)


def test_widening_checks_every_integer_again() -> None:
    numbers = NumberColumns(COLUMNS)
    schema = pa.schema([("n", pa.int64()), ("m", pa.float64()), ("s", pa.string())])
    with pytest.raises(ExportDataError, match=r"column 'm' \(row 12 of the export\)"):
        numbers.widen(_table([1, 2], [3, BIG]), schema, 10)


def test_a_column_double_from_the_start_is_not_int64() -> None:
    double = ExportColumn("d", pa.int64(), "earlier", widens=True, starts_double=True)
    numbers = NumberColumns((double, *COLUMNS))
    assert numbers.doubles == {0: 0}
    assert numbers.int64_columns() == [1, 2]
