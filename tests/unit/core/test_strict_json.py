"""The bounds of the one strict JSON decoder: depth and length refused by name before
decoding, and a declared answer's validation stopped at an array's first fault."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from airflow_provider_analytics.core import strict_json
from airflow_provider_analytics.core.strict_json import MAX_DEPTH, StrictJsonError

TRICKY_TEXT = st.text(alphabet='[]{}"\\ab/\n\u00e9\u7528', max_size=12)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | TRICKY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TRICKY_TEXT, inner, max_size=3),
    max_leaves=12,
)


def depth(value: Any) -> int:
    """The reference: levels of arrays and objects, walked on the decoded value."""
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    return 0


def nested(value: Any, levels: int) -> Any:
    for level in range(levels):
        value = [value] if level % 2 else {'k[{\\"': value}
    return value


@given(value=JSON, extra=st.integers(min_value=0, max_value=80))
def test_the_depth_is_measured_as_a_walk_of_the_value_measures_it(value: Any, extra: int) -> None:
    """Property, against an independent walk: strings full of brackets, quotes and
    backslashes never change the measured depth."""
    document = nested(value, extra)
    text = json.dumps(document, ensure_ascii=False)
    if depth(document) > MAX_DEPTH:
        with pytest.raises(StrictJsonError, match=f"nested deeper than {MAX_DEPTH} levels"):
            strict_json.loads(text.encode())
    else:
        assert strict_json.loads(text.encode()) == document
        assert strict_json.loads(text) == document


def test_the_limit_is_exact_and_a_huge_depth_costs_no_recursion() -> None:
    assert strict_json.loads(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) is not None
    for levels in (MAX_DEPTH + 1, 100_000):
        with pytest.raises(StrictJsonError, match="nested deeper"):
            strict_json.loads(b"[" * levels + b"]" * levels)


def test_brackets_that_do_not_pair_are_a_syntax_error_not_a_depth() -> None:
    with pytest.raises(StrictJsonError, match="is not valid JSON"):
        strict_json.loads(b"[}" * 100)


def test_a_document_longer_than_the_limit_is_refused_unread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(strict_json, "MAX_BYTES", 10)
    with pytest.raises(StrictJsonError, match="11 bytes long, more than the 10 bytes"):
        strict_json.loads(b"[1,2,3,4,5]")


def test_validation_stops_at_an_arrays_first_fault() -> None:
    adapter = TypeAdapter(list[dict[str, list[int]]])
    payload = [{"a": ["x"] * 1000}] * 1000
    with pytest.raises(Exception) as caught:
        strict_json.first_fault(adapter).validate_python(payload, strict=True)
    assert caught.value.error_count() == 1  # type: ignore[attr-defined]
    assert strict_json.first_fault(adapter).validate_python([{"a": [1]}]) == [{"a": [1]}]


@pytest.mark.parametrize(
    ("document", "says"),
    [
        (b"[1e400]", "1e400 is beyond a double's range"),
        (b'{"a": -1.5E+309}', "-1.5E+309 is beyond a double's range"),
        (b"9" * 5000, "an integer has more than 4300 digits"),
    ],
)
def test_a_number_json_would_misread_or_crash_on_is_refused_by_name(
    document: bytes, says: str
) -> None:
    """``json`` reads 1e400 as infinity (no JSON value) and raises a bare ValueError on an
    integer longer than ``int`` converts; both are refused as strict JSON faults."""
    with pytest.raises(StrictJsonError, match=re.escape(says)):
        strict_json.loads(document)


def test_numbers_in_range_stay_exact_and_a_callers_hooks_still_apply() -> None:
    assert strict_json.loads(b"[1e308, 1e-400, 4255875062385414000]") == [
        1e308,
        0.0,
        4255875062385414000,
    ]
    as_text = strict_json.decoder(parse_float=str, parse_int=str)
    assert strict_json.loads(b"[1e400, 12]", using=as_text) == ["1e400", "12"]
