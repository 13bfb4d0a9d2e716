"""Hostile plan files: alias bombs, deep nesting, duplicate keys, huge values and odd bytes
are refused with a message that names their place, at a cost that does not grow with the
expansion the file asks for."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_analytics.core.errors import bounded_repr
from airflow_provider_analytics.plan import file
from airflow_provider_analytics.plan.file import (
    DecodeError,
    TrackingPlanFileError,
    decode_yaml,
    load_tracking_plan,
    parse_tracking_plan,
)
from tests.reliability.bad_inputs import alias_bomb

if TYPE_CHECKING:
    from pathlib import Path


def refusal(tmp_path: Path, text: str, name: str = "plan.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TrackingPlanFileError) as caught:
        load_tracking_plan(path)
    return str(caught.value)


@pytest.mark.parametrize(("levels", "width"), [(9, 9), (10, 10), (25, 2)])
def test_an_alias_bomb_is_refused_while_it_is_composed(
    tmp_path: Path, levels: int, width: int
) -> None:
    text = alias_bomb(levels, width)
    assert len(text) < 600  # the sizes the issue measured: 512 and 560 bytes
    message = refusal(tmp_path, text)
    assert "alias bomb" in message
    assert "line " in message
    assert len(message) < 600


def test_aliases_within_the_bound_still_work(tmp_path: Path) -> None:
    text = (
        "common: &amount {id: amount, name: Order amount, data_type: number}\n"
        "events:\n"
        "  - id: purchase\n"
        "    properties: [*amount]\n"
        "  - id: refund\n"
        "    properties: [*amount]\n"
    )
    data = decode_yaml(text)
    assert data["events"][1]["properties"][0]["id"] == "amount"


def test_the_bound_counts_expanded_values_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reference count written independently: just under the bound passes, just over fails."""
    monkeypatch.setattr(file, "MAX_NODES", 2000)

    def document(leaves: int) -> str:
        # one list of `leaves` aliases to a scalar: 1 (list) + leaves values, plus the keys
        return "s: &s x\nbig: [" + ", ".join(["*s"] * leaves) + "]\n"

    def expanded(leaves: int) -> int:
        return 1 + 2 + 2 + leaves  # mapping, (s, x), (big, list), aliases

    fits = 2000 - expanded(0)
    assert expanded(fits) == 2000
    assert len(decode_yaml(document(fits))["big"]) == fits
    with pytest.raises(DecodeError, match="alias bomb"):
        decode_yaml(document(fits + 1))


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(DecodeError, match="contains it"):
        decode_yaml("a: &a [1, *a]\n")


@pytest.mark.parametrize(
    ("text", "first", "second"),
    [
        ("events:\n  - id: a\nuser_properties: []\nevents:\n  - id: b\n", "line 1", "line 4"),
        ("events:\n  - id: a\n    name: A\n    id: b\n", "line 2", "line 4"),
        ("user_properties:\n  - {id: x, data_type: number, data_type: string}\n", "", "line 2"),
    ],
)
def test_a_key_given_twice_is_refused_naming_both_places(
    tmp_path: Path, text: str, first: str, second: str
) -> None:
    assert yaml.safe_load(text) is not None  # the plain loader accepts it, keeping the last
    message = refusal(tmp_path, text)
    assert "given twice" in message
    assert first in message and second in message


def test_a_json_key_given_twice_is_refused(tmp_path: Path) -> None:
    text = '{"events": [{"id": "a"}], "events": []}'
    assert json.loads(text) == {"events": []}  # what a plain decoder silently makes of it
    assert "'events' is given twice" in refusal(tmp_path, text, "plan.json")


def test_duplicate_ids_name_both_places() -> None:
    with pytest.raises(TrackingPlanFileError) as caught:
        parse_tracking_plan({"events": [{"id": "a"}, {"id": "b"}, {"id": "a"}]})
    assert "events[2].id: 'a' is already declared at events[0]" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("x: " + "[" * 200 + "]" * 200, "plan.yaml"),
        ("[" * 100_000 + "]" * 100_000, "plan.json"),
    ],
)
def test_deep_nesting_is_refused(tmp_path: Path, text: str, name: str) -> None:
    assert "deep" in refusal(tmp_path, text, name)


def test_a_file_over_the_size_bound_is_refused_without_reading_it_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file, "MAX_CHARACTERS", 1000)
    assert "at most 1,000" in refusal(tmp_path, "events: []\n" + "#" * 5000)


def test_bytes_that_are_not_utf8_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_bytes(b"events:\n  - id: caf\xe9\n")
    with pytest.raises(TrackingPlanFileError, match="not UTF-8"):
        load_tracking_plan(path)


def test_huge_values_are_shown_bounded() -> None:
    huge = {"id": "x" * 100_000, "name": ["n"] * 100_000}
    with pytest.raises(TrackingPlanFileError) as caught:
        parse_tracking_plan({"events": [huge] * 1000, "k" * 10_000: 1})
    message = str(caught.value)
    assert "and " in message and "more" in message  # the listing is cut, not the count
    assert len(message) < 20_000


@settings(max_examples=50)
@given(st.recursive(st.none() | st.integers() | st.text(), st.lists, max_leaves=50))
def test_bounded_repr_is_short_for_any_value(value: Any) -> None:
    shared = [value] * 1000
    assert len(bounded_repr([shared] * 1000)) <= 80
    assert len(bounded_repr(value, 30)) <= 30


@pytest.mark.parametrize(
    ("text", "refusal_text"),
    [
        ("events:\n  - id: a\n    remark: 2024-02-30\n", "line 3, column 13: '2024-02-30' cannot"),
        ("events:\n  - id: !!int 0xZZ\n", "line 2, column 9: '0xZZ' cannot be read as int"),
        ("events:\n  - id: " + "9" * 5000 + "\n", "cannot be read as int"),
        ("events: !!map [1]\n", "cannot be read as YAML"),
        ("events:\n  - id: !!bool x\n", "line 2, column 9: 'x' cannot be read as bool"),
        ("events:\n  - id: !!int ''\n", "line 2, column 9: '' cannot be read as int"),
        ("events:\n  - id: !!timestamp 2024-1\n", "'2024-1' cannot be read as timestamp"),
        ("events:\n  - id: a\x07\n", "cannot be read as YAML: 'unacceptable character #x0007"),
    ],
)
def test_a_scalar_its_tag_cannot_hold_is_refused_naming_its_place(
    tmp_path: Path, text: str, refusal_text: str
) -> None:
    """PyYAML's constructors raise a bare ValueError (a date that does not exist, an integer
    of 5000 digits), a TypeError, or refuse a control character before the loader exists."""
    assert refusal_text in refusal(tmp_path, text)


@pytest.mark.parametrize(
    ("source", "base_dir"),
    [
        ("pl\x00an.yaml", None),
        ("pl\ud800an.yaml", None),
        ("plan.yaml", "x\x00"),
        ("~nobody_x/p", None),
    ],
)
def test_a_path_that_cannot_name_a_file_is_refused_by_name(
    source: str, base_dir: str | None
) -> None:
    with pytest.raises(TrackingPlanFileError, match="file: cannot be read: "):
        load_tracking_plan(source, base_dir=base_dir)


@pytest.mark.parametrize("name", ["plan.json", "plan.yaml"])
def test_a_byte_order_mark_is_no_part_of_the_plan(tmp_path: Path, name: str) -> None:
    """A JSON file saved with a BOM was refused as 'Expecting value at line 1, column 1'."""
    path = tmp_path / name
    plan = {"user_properties": [{"id": "age", "data_type": "number"}]}
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(plan).encode())
    assert load_tracking_plan(path) == parse_tracking_plan(plan)


def test_a_merge_key_reads_as_yaml_reads_it(tmp_path: Path) -> None:
    """The duplicate-key check built ``<<`` as a key, which no constructor knows: a plan using
    ``<<: *defaults`` was refused with "could not determine a constructor"."""
    path = tmp_path / "plan.yaml"
    path.write_text(
        "user_properties:\n"
        "  - &number {id: age, data_type: number}\n"
        "  - <<: *number\n"
        "    id: height\n",
        encoding="utf-8",
    )
    plan = load_tracking_plan(path)
    assert [(p.id, p.data_type) for p in plan.user_properties] == [
        ("age", "number"),
        ("height", "number"),
    ]


def test_a_document_too_large_without_aliases_is_not_called_an_alias_bomb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file, "MAX_NODES", 50)
    message = refusal(tmp_path, "user_properties: [" + ", ".join(["{}"] * 60) + "]\n")
    assert "expands to more than 50 values; a plan file needs far fewer" in message
    assert "alias" not in message
    bomb = "a: &a [1, 2, 3, 4, 5, 6, 7, 8]\nb: [*a, *a, *a, *a, *a, *a, *a, *a]\n"
    assert "alias bomb" in refusal(tmp_path, bomb)
