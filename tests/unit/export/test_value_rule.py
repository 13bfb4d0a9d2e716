"""The line-by-line rule of the export's Python path (export/value_rule.py): each column type
takes the JSON values Arrow's parser takes, and refuses the others."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest

from airflow_provider_analytics.core.errors import DecimalFound, NumberRefusal, Unfit
from airflow_provider_analytics.export.schema import ExportColumn
from airflow_provider_analytics.export.value_rule import DECODER, converter, kind


def _read(arrow_type: pa.DataType, text: str, **options: object) -> object:
    """The JSON ``text`` as the strict decoder gives it, through the rule of a column."""
    column = ExportColumn("c", arrow_type, "plan", widens=bool(options.pop("widens", False)))
    return converter(column, **options)(DECODER.decode(text))  # type: ignore[arg-type]


def test_a_string_column_keeps_a_number_s_text_and_writes_booleans_as_json() -> None:
    assert _read(pa.string(), "12.50") == "12.50"  # the token, not a float's repr
    assert _read(pa.string(), "true") == "true"
    with pytest.raises(Unfit, match="a JSON array is not a string"):
        _read(pa.string(), '["a"]')


def test_a_number_column_follows_the_number_rule() -> None:
    assert _read(pa.int64(), "4255875062385414001", widens=True) == 4255875062385414001
    with pytest.raises(DecimalFound):
        _read(pa.int64(), "1.5", widens=True)
    assert _read(pa.int64(), "1.5", widens=True, double=True) == 1.5
    with pytest.raises(NumberRefusal, match=r"the first in row 7"):
        _read(pa.int64(), "4255875062385414001", widens=True, double=True, decimal_row=7)
    with pytest.raises(Unfit, match="a JSON string is not a number"):
        _read(pa.int64(), '"3"', widens=True)


def test_typed_columns_take_their_kind_only() -> None:
    assert _read(pa.int64(), "-12") == -12
    with pytest.raises(Unfit, match="not an integer"):
        _read(pa.int64(), "1.0")
    assert _read(pa.float64(), "2e3") == 2000.0
    with pytest.raises(NumberRefusal, match="beyond the range of a double"):
        _read(pa.float64(), "1e400")
    assert _read(pa.decimal128(38, 2), '"1.25"') == decimal.Decimal("1.25")  # as Arrow reads
    with pytest.raises(Unfit, match="more than 2 decimals"):
        _read(pa.decimal128(38, 2), "1.255")
    assert _read(pa.bool_(), "false") is False
    with pytest.raises(Unfit, match="not true or false"):
        _read(pa.bool_(), "0")
    assert _read(pa.timestamp("ms", tz="UTC"), '"2024-01-15 08:00:00"') == "2024-01-15 08:00:00"
    with pytest.raises(Unfit, match="not a datetime text"):
        _read(pa.timestamp("ms", tz="UTC"), "1705305600000")
    assert _read(pa.list_(pa.string()), '["a", null]') == ["a", None]
    with pytest.raises(Unfit, match="not a list of strings"):
        _read(pa.list_(pa.string()), "[1]")
    with pytest.raises(Unfit, match="no line-by-line rule"):
        _read(pa.binary(), '"x"')


def test_kinds_are_named_as_json_names_them() -> None:
    assert [kind(DECODER.decode(t)) for t in ("1", "true", '"x"', "[]", "{}")] == [
        "number",
        "boolean",
        "string",
        "array",
        "object",
    ]
