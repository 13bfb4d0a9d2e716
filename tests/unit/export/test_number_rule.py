"""The number rule of a cohort export (export/number_rule.py), value by value and vectorised."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from airflow_provider_analytics.core.errors import AnalyticsError, DecimalFound, NumberRefusal
from airflow_provider_analytics.core.ndjson import MalformedStreamError
from airflow_provider_analytics.export import number_rule
from airflow_provider_analytics.export.decoder import BlockDecoder, ExportDataError
from airflow_provider_analytics.export.schema import export_schema


@pytest.mark.parametrize(
    ("text", "integer"),
    [
        ("0", True),
        ("-0", True),
        ("4255875062385414000", True),
        ("1.0", False),
        ("1e3", False),
        ("1E3", False),
        ("-2.5e-7", False),
    ],
)
def test_a_token_is_an_integer_without_fraction_or_exponent(text: str, integer: bool) -> None:
    assert number_rule.is_integer_token(text) is integer


@pytest.mark.parametrize(
    ("value", "exact"),
    [
        (2**53, True),
        (2**53 + 1, False),
        (-(2**53) - 1, False),
        (2**60, True),
        (4255875062385414144, True),
        (4255875062385414000, False),
        (2**63 - 1, False),
        (-(2**63), True),
    ],
)
def test_a_double_holds_an_integer_exactly_or_not(value: int, exact: bool) -> None:
    assert number_rule.holds_exactly(value) is exact


def test_the_int64_rule_keeps_integers_and_signals_the_first_decimal() -> None:
    to_int64 = number_rule.number_converter("n", double=False)
    assert to_int64("4255875062385414001") == 4255875062385414001
    assert to_int64(str(-(2**63))) == -(2**63)
    with pytest.raises(DecimalFound):
        to_int64("5.0")
    with pytest.raises(NumberRefusal, match="beyond int64") as refused:
        to_int64(str(2**63))
    assert "schema_overrides={'n': 'decimal'}" in refused.value.setting
    with pytest.raises(NumberRefusal) as refused:
        to_int64("9" * 30)
    assert "schema_overrides={'n': 'string'}" in refused.value.setting


def test_the_double_rule_refuses_what_a_double_would_change() -> None:
    to_double = number_rule.number_converter("n", double=True, decimal_row=9)
    assert to_double("4255875062385414144") == 4255875062385414144.0
    assert to_double("14.898609719035171") == 14.898609719035171
    assert to_double("1e-400") == 0.0  # the double it denotes
    with pytest.raises(NumberRefusal, match=r"would become 4255875062385414144.*row 9"):
        to_double("4255875062385414000")
    with pytest.raises(NumberRefusal, match="beyond the range of a double"):
        to_double("-1e400")
    assert issubclass(NumberRefusal, AnalyticsError)


def _chunked(values: list[int | None], arrow_type: pa.DataType) -> pa.ChunkedArray:
    """Values in three chunks, the middle one a slice (an offset into its buffers)."""
    padded = pa.array([0, 0, *values[2:5], 0], arrow_type).slice(2, 3)
    return pa.chunked_array(
        [pa.array(values[:2], arrow_type), padded, pa.array(values[5:], arrow_type)]
    )


def test_the_first_inexact_integer_is_found_through_nulls_chunks_and_offsets() -> None:
    values = [1, None, 2**53, None, 7, 2**53 + 1, 4255875062385414000]
    assert number_rule.first_inexact(_chunked(values, pa.int64())) == 5
    assert number_rule.first_inexact(pa.array([None, 2**62, -(2**63)], pa.int64())) is None
    assert number_rule.first_inexact(pa.array([2**63 - 1], pa.int64())) == 0
    assert number_rule.first_inexact(pa.array([], pa.int64())) is None


def test_doubles_whose_tokens_matter_are_found() -> None:
    values = pa.array([0.5, None, 2.0**53, float("nan"), 1e300, -float("inf"), 3.0])
    assert number_rule.beyond_exact(values) == [2, 3, 4, 5]
    assert number_rule.not_finite(values) == [3, 5]
    assert number_rule.first_fraction(pa.array([None, 2.0, 1e20, -0.25, 0.5])) == 3
    assert number_rule.first_fraction(pa.array([None, 5.0, float("nan")])) is None


def _decoder(**overrides: str) -> BlockDecoder:
    plan = [{"id": "n", "dataType": "number"}, {"id": "s", "dataType": "string"}]
    return BlockDecoder(export_schema(["n", "s"], plan, overrides=overrides or None))


def _lines(*values: str) -> bytes:
    return b"".join(f'{{"n": {v}, "s": "x"}}\n'.encode() for v in values)


def test_a_column_becomes_double_at_its_first_decimal_and_widens_what_came_before() -> None:
    decoder = _decoder()
    first = decoder.decode(_lines("1", str(2**60), "null"))
    assert first.schema.field("n").type == pa.int64()
    second = decoder.decode(_lines("2", "2.5"))
    assert second.schema.field("n").type == pa.float64()
    assert decoder.slow_lines == 0  # the decimal was found by Arrow, not line by line
    widened = decoder.widen(first, decoder.arrow_schema, 0)
    assert widened.column("n").to_pylist() == [1.0, float(2**60), None]
    assert widened.schema == decoder.arrow_schema


def test_widening_refuses_an_integer_a_double_cannot_hold_naming_its_row() -> None:
    decoder = _decoder()
    table = decoder.decode(_lines("1", "4255875062385414000"))
    with pytest.raises(ExportDataError, match=r"column 'n' \(row 2 of the export\)"):
        decoder.decode(_lines("0.5"))
    with pytest.raises(ExportDataError, match=r"column 'n' \(row 12 of the export\)"):
        decoder.widen(table, decoder.read_schema.set(0, pa.field("n", pa.float64())), 10)


def test_a_double_set_by_the_caller_takes_the_nearest_double_and_refuses_nan() -> None:
    decoder = _decoder(n="double")
    table = decoder.decode(_lines("4255875062385414000", "1"))
    assert table.column("n").to_pylist() == [4255875062385414000.0, 1.0]
    with pytest.raises(MalformedStreamError, match="line 4 of the export is not strict JSON"):
        decoder.decode(_lines("2", "NaN"))


def test_arrow_s_nan_in_a_double_column_is_refused_after_the_fast_path() -> None:
    decoder = _decoder()
    decoder.decode(_lines("0.5"))
    with pytest.raises(MalformedStreamError, match="line 3 of the export is not strict JSON"):
        decoder.decode(_lines("1.5", "Infinity", "2.5"))
    assert decoder.slow_lines == 0


@pytest.mark.parametrize(
    "token", ["4255875062385414000", str(2**53 + 1), str(-(2**53) - 1), str(2**63 - 1)]
)
def test_in_a_double_column_each_inexact_integer_token_is_refused(token: str) -> None:
    decoder = _decoder()
    with pytest.raises(ExportDataError, match=rf"row 2 of the export\): {token} is an integer"):
        decoder.decode(_lines("0.5", token, "1"))


def test_exact_integers_in_a_double_column_are_taken_as_their_double() -> None:
    tokens = ["0.5", str(2**53), "4255875062385414144", str(-(2**62)), "7"]
    table = _decoder().decode(_lines(*tokens))
    assert table.column("n").to_pylist() == [json.loads(t) * 1.0 for t in tokens]
