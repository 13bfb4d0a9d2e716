"""The one rule for a line of the cohort export (core/cohort_records.py)."""

from __future__ import annotations

import logging

import pytest

from airflow_provider_analytics.core.cohort_records import (
    ExportRecordError,
    RecordKeys,
    decode_line,
)
from airflow_provider_analytics.core.errors import AnalyticsError, AnalyticsProtocolError
from airflow_provider_analytics.core.ndjson import MalformedStreamError


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (b'{"a": NaN}', "line 4 of the export is not strict JSON: NaN is not a JSON value"),
        (b'{"a": -Infinity}', "line 4 of the export is not strict JSON: -Infinity is not"),
        (b'{"a": 1, "a": 1}', "line 4 of the export is not strict JSON: the key 'a' is given"),
        (b'{"a": "\xff"}', "line 4 of the export is not valid UTF-8 (byte 7); run the export"),
        (b'{"a": 1', "line 4 of the export is not valid JSON (Expecting"),
        (b"[1, 2]", "line 4 of the export is not a JSON object but a list"),
        (b"<html>", "looks like an HTML page"),
    ],
)
def test_a_line_that_is_not_a_strict_json_object_is_refused_naming_it(
    line: bytes, said: str
) -> None:
    with pytest.raises(MalformedStreamError) as refused:
        decode_line(line, 4)
    assert said in str(refused.value)


def test_a_strict_fault_is_not_called_damage_on_the_way() -> None:
    """NaN or a repeated key is what the platform wrote; a cut line may be the network's."""
    with pytest.raises(MalformedStreamError) as strict:
        decode_line(b'{"a": NaN}', 1)
    with pytest.raises(MalformedStreamError) as damaged:
        decode_line(b'{"a": 1', 1)
    assert "damaged" not in str(strict.value) and "damaged" in str(damaged.value)


def test_a_record_must_hold_every_requested_key_null_or_not() -> None:
    keys = RecordKeys(["a", "b", "tag.c"])
    keys.check({"a": None, "b": 0, "tag.c": None}, 1)
    with pytest.raises(ExportRecordError) as refused:
        keys.check({"a": 1, "x": 2}, 7)
    message = str(refused.value)
    assert message.startswith(
        "export_cohort_users: row 7 of the export lacks the keys 'b', 'tag.c'"
    )
    assert refused.value.operation == "export_cohort_users"
    assert issubclass(ExportRecordError, AnalyticsProtocolError)
    assert keys.unexpected == {}  # a refused record counts nothing


def test_many_missing_keys_are_named_a_few_at_a_time() -> None:
    keys = RecordKeys([f"k{i}" for i in range(12)])
    with pytest.raises(ExportRecordError, match=r"'k0', 'k1', 'k2', 'k3', 'k4' and 7 more"):
        keys.require({}, 1)


@pytest.mark.parametrize("requested", [None, ["a", "b"], ["code", "b"]])
def test_the_platform_s_error_object_is_named_as_such(requested: list[str] | None) -> None:
    keys = RecordKeys(requested)
    with pytest.raises(ExportRecordError) as refused:
        keys.check({"code": 503, "msg": "engine unavailable", "data": None}, 1)
    assert "row 1 of the export is the platform's error object (code 503" in str(refused.value)
    assert refused.value.code == 503 and refused.value.msg == "engine unavailable"


def test_requested_keys_that_look_like_an_error_object_are_a_record() -> None:
    keys = RecordKeys(["code", "msg", "data"])
    keys.check({"code": 1, "msg": "hello", "data": None}, 1)
    assert keys.unexpected == {}


def test_keys_not_asked_for_are_counted_and_logged_once_each(
    caplog: pytest.LogCaptureFixture,
) -> None:
    keys = RecordKeys(["a"])
    with caplog.at_level(logging.WARNING):
        for row in range(1, 6):
            keys.check({"a": 1, "x": None, **({"y": 1} if row > 3 else {})}, row)
    assert keys.unexpected == {"x": 5, "y": 2}
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2
    assert "row 1 of the export holds the key 'x'" in warned[0]
    assert "row 4 of the export holds the key 'y'" in warned[1]


def test_without_requested_keys_only_the_error_object_is_refused() -> None:
    keys = RecordKeys(None)
    keys.check({"anything": 1}, 1)
    keys.check({}, 2)
    assert keys.unexpected == {}
    assert issubclass(ExportRecordError, AnalyticsError)
