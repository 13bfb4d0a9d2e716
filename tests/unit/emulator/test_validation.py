"""The emulator's input rules, each refusal naming the offending parameter."""

from __future__ import annotations

from datetime import date

import pytest
from analytics_emulator import validation as v
from analytics_emulator.errors import BadRequest


def _refused(call, *args, **kwargs) -> list[str]:  # type: ignore[no-untyped-def]
    with pytest.raises(BadRequest) as caught:
        call(*args, **kwargs)
    assert caught.value.status == 400 and caught.value.code == 400
    return list(caught.value.data)


def _never_preset(item_id: str) -> bool:
    return False


@pytest.mark.parametrize("good", ["a", "_x", "user_level2", "A" * 100, "CamelCase_9"])
def test_identifiers_accepted(good: str) -> None:
    assert v.identifier(good, "id", is_preset=_never_preset) == good


@pytest.mark.parametrize(
    "bad", ["", "9lives", "has-dash", "has space", "A" * 101, "ü_umlaut", "a.b", 12, None, "a\n"]
)
def test_identifiers_refused(bad: object) -> None:
    assert _refused(v.identifier, bad, "properties[1].id", is_preset=_never_preset) == [
        "properties[1].id"
    ]


def test_dollar_ids_only_for_preset_items() -> None:
    assert v.identifier("$city", "id", is_preset=lambda i: i == "$city") == "$city"
    assert _refused(v.identifier, "$custom", "id", is_preset=lambda i: i == "$city") == ["id"]
    assert _refused(v.identifier, "$", "id", is_preset=lambda i: True) == ["id"]


@pytest.mark.parametrize(
    "good", ["Order amount", "订单金额", "Size (cm)", "a_b-c.d,e", "金额（元），含税。", "x" * 50]
)
def test_names_accepted(good: str) -> None:
    assert v.name(good, "name") == good


@pytest.mark.parametrize(
    "bad", ["", "   ", "x" * 51, "50%", "a/b", "tag#1", "<b>", "semi;colon", "a\tb", 3]
)
def test_names_refused(bad: object) -> None:
    assert _refused(v.name, bad, "name") == ["name"]


def test_remark_limit_and_characters() -> None:
    assert v.remark("", "remark") == ""
    assert v.remark("r" * 100, "remark") == "r" * 100
    assert _refused(v.remark, "r" * 101, "remark") == ["remark"]
    assert _refused(v.remark, "new!", "remark") == ["remark"]


@pytest.mark.parametrize("good", ["string", "number", "boolean", "datetime", "array<string>"])
def test_data_types(good: str) -> None:
    assert v.data_type(good, "dataType") == good


@pytest.mark.parametrize("bad", ["int", "String", "array", "list<string>", None, 1])
def test_bad_data_types(bad: object) -> None:
    assert _refused(v.data_type, bad, "properties[0].dataType") == ["properties[0].dataType"]


def test_dates_and_ranges() -> None:
    assert v.day("2024-02-29", "fromDate") == date(2024, 2, 29)
    for bad in ("2023-02-29", "2024-1-05", "20240105", "2024/01/05", "", None, 20240105):
        assert _refused(v.day, bad, "fromDate") == ["fromDate"]
    assert v.date_range({"fromDate": "2024-01-01", "toDate": "2024-01-01"}) == (
        date(2024, 1, 1),
        date(2024, 1, 1),
    )
    assert _refused(v.date_range, {"fromDate": "2024-01-02", "toDate": "2024-01-01"}) == [
        "fromDate",
        "toDate",
    ]
    assert _refused(v.date_range, {"toDate": "2024-01-01"}) == ["fromDate"]


def test_positive_integers() -> None:
    assert v.positive_int(1, "limit") == 1
    for bad in (0, -1, 1.0, "1", True, None):
        assert _refused(v.positive_int, bad, "pageSize") == ["pageSize"]


def test_booleans_must_be_json_booleans() -> None:
    assert v.boolean(False, "activation") is False
    for bad in (0, 1, "true", None):
        assert _refused(v.boolean, bad, "activation") == ["activation"]


def test_conversion_window() -> None:
    assert v.convert_time(3) == 3
    assert _refused(v.convert_time, 0) == ["convertTime"]
    for unit in ("DAY", "HOUR", "MINUTE"):
        assert v.convert_time_unit(unit) == unit
    for bad in ("day", "WEEK", "SECOND", None):
        assert _refused(v.convert_time_unit, bad) == ["convertTimeUnit"]


def test_flag_queries() -> None:
    assert v.flag_query(None, "plan") is None
    assert v.flag_query("0", "plan") == 0 and v.flag_query("1", "plan") == 1
    for bad in ("2", "", "yes", "01"):
        assert _refused(v.flag_query, bad, "dataStatus") == ["dataStatus"]


def test_required_fields_and_paths() -> None:
    assert _refused(v.required, {"id": None}, "id", "properties[3]") == ["properties[3].id"]
    assert v.join_path("steps", 1) == "steps[1]"
    assert v.join_path("steps[1]", "expression") == "steps[1].expression"
    assert _refused(v.required_query, " ", "eventId") == ["eventId"]
