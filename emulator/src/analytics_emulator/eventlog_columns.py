"""Dictionary-encoded property columns, shared by the event log and user property lookups.

A column keeps one small array of distinct values (the dictionary) and, per row, the
position of the row's value in it (``-1`` for null). Predicates, split labels and
distinct counts are then computed once per distinct value and mapped to rows with one
array lookup, which keeps the analyses vectorised even for strings and lists.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

NULL_CODE: Final = -1
UNKNOWN_LABEL: Final = "未知"
"""Split label for a missing value, as the platform writes it."""

LOCAL_EPOCH: Final = datetime(1970, 1, 1)
"""Times are counted from midnight 1970-01-01 on the project's local clock (see eventlog)."""

_INT64_MAX: Final = 2**63 - 1
_FLOAT_EXACT_INT: Final = 2**53
_DATETIME_PATTERN: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?: (\d{2}):(\d{2}):(\d{2})(?:\.(\d{3}))?)?", re.ASCII
)


class InvalidValue(ValueError):
    """A value does not fit the property's data type."""


def parse_datetime_ms(text: str) -> int:
    """Milliseconds since the local epoch of a platform datetime text.

    :param text: ``yyyy-MM-dd HH:mm:ss.SSS``, ``yyyy-MM-dd HH:mm:ss`` or ``yyyy-MM-dd``.
    :raises InvalidValue: for any other text or an impossible date.
    """
    match = _DATETIME_PATTERN.fullmatch(text)
    if match is None:
        raise InvalidValue(f"not a datetime: {text!r}")
    year, month, day, hour, minute, second, milli = match.groups()
    try:
        moment = datetime(
            int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0)
        )
    except ValueError as exc:
        raise InvalidValue(f"not a datetime: {text!r}") from exc
    return (moment - LOCAL_EPOCH) // timedelta(milliseconds=1) + int(milli or 0)


def format_datetime_ms(millis: int) -> str:
    """Platform text of a local-epoch millisecond count; ``.SSS`` only when non-zero."""
    moment = LOCAL_EPOCH + timedelta(milliseconds=int(millis))
    text = moment.strftime("%Y-%m-%d %H:%M:%S")
    return text if moment.microsecond == 0 else f"{text}.{moment.microsecond // 1000:03d}"


def format_number(value: float) -> str:
    """A number as a label: integral values without a decimal point, others as shortest repr."""
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    as_float = float(value)
    return str(int(as_float)) if as_float.is_integer() else repr(as_float)


def normalise_value(data_type: str, value: Any) -> Any:
    """The hashable in-memory form of one property value, or None for null.

    number -> int or float; datetime -> local-epoch milliseconds; string -> str;
    boolean -> bool; array<string> -> tuple of str.

    :raises InvalidValue: when the value does not have the property's data type.
    """
    if value is None:
        return None
    if data_type == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidValue(f"not a number: {value!r}")
        if isinstance(value, float) and math.isnan(value):
            return None
        return value
    if data_type == "string":
        if not isinstance(value, str):
            raise InvalidValue(f"not a string: {value!r}")
        return value
    if data_type == "boolean":
        if not isinstance(value, bool):
            raise InvalidValue(f"not a boolean: {value!r}")
        return value
    if data_type == "datetime":
        if isinstance(value, datetime):
            return (value.replace(tzinfo=None) - LOCAL_EPOCH) // timedelta(milliseconds=1)
        if isinstance(value, date):
            return (date_to_day(value)) * 86_400_000
        if not isinstance(value, str):
            raise InvalidValue(f"not a datetime: {value!r}")
        return parse_datetime_ms(value)
    if data_type == "array<string>":
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise InvalidValue(f"not a list of strings: {value!r}")
        return tuple(value)
    raise InvalidValue(f"unknown data type {data_type!r}")


def date_to_day(day: date) -> int:
    """Days since 1970-01-01 (the day key of the event log)."""
    return (day - LOCAL_EPOCH.date()).days


def day_to_date(day: int) -> date:
    return LOCAL_EPOCH.date() + timedelta(days=int(day))


@dataclass(frozen=True)
class Column:
    """One property's values for a sequence of rows.

    ``codes[i]`` indexes ``dictionary`` (``-1`` = null). The dictionary holds each distinct
    value once: numbers as int64 when every value is an integer that fits (ids beyond 2**53
    stay exact) and float64 otherwise, datetimes as int64 local-epoch milliseconds, strings
    and lists (tuples) as object arrays, booleans as a bool array.
    """

    data_type: str
    codes: np.ndarray
    dictionary: np.ndarray

    def __len__(self) -> int:
        return len(self.codes)

    def take(self, rows: np.ndarray) -> Column:
        """The column restricted (or reordered) to ``rows``."""
        return Column(self.data_type, self.codes[rows], self.dictionary)

    def per_row(self, per_entry: np.ndarray, null_result: Any) -> np.ndarray:
        """Map a result computed per dictionary entry to the rows; null rows get ``null_result``.

        :param per_entry: one result per dictionary entry.
        :param null_result: the result for rows whose value is null.
        """
        table = np.append(per_entry, np.asarray([null_result], dtype=per_entry.dtype))
        return table[self.codes]

    def numbers(self) -> np.ndarray:
        """Per-row float64 values of a number column, NaN for null."""
        return self.per_row(self.dictionary.astype(np.float64), np.nan)

    def python_value(self, row: int) -> Any:
        """The value of one row written as a from_records value would be."""
        code = int(self.codes[row])
        if code == NULL_CODE:
            return None
        return to_python(self.data_type, self.dictionary[code])

    def labels(self) -> list[str]:
        """Split label of every dictionary entry (see :func:`value_label`)."""
        return [value_label(self.data_type, entry) for entry in self.dictionary]


def to_python(data_type: str, entry: Any) -> Any:
    """A dictionary entry back in the record form (datetimes as text, lists as lists)."""
    if data_type == "datetime":
        return format_datetime_ms(int(entry))
    if data_type == "array<string>":
        return list(entry)
    if data_type == "boolean":
        return bool(entry)
    if data_type == "number":
        return int(entry) if isinstance(entry, (int, np.integer)) else float(entry)
    return entry


def value_label(data_type: str, entry: Any) -> str:
    """How a value is written as a split label.

    Numbers without a needless ``.0`` (``12``, ``19.99``), booleans ``true``/``false``,
    datetimes as ``yyyy-MM-dd HH:mm:ss``, lists as compact JSON (``["A","B"]``), strings
    unchanged.
    """
    if data_type == "number":
        return format_number(entry)
    if data_type == "boolean":
        return "true" if entry else "false"
    if data_type == "datetime":
        return format_datetime_ms(int(entry))
    if data_type == "array<string>":
        return json.dumps(list(entry), ensure_ascii=False, separators=(",", ":"))
    return str(entry)


def build_dictionary(data_type: str, distinct: Sequence[Any]) -> np.ndarray:
    """The dictionary array for distinct normalised values, in the dtype :class:`Column` uses."""
    if data_type == "number":
        if all(isinstance(v, int) and -_INT64_MAX <= v <= _INT64_MAX for v in distinct):
            return np.asarray(distinct, dtype=np.int64)
        if all(isinstance(v, float) or abs(v) <= _FLOAT_EXACT_INT for v in distinct):
            return np.asarray(distinct, dtype=np.float64)
        # Integers beyond 2**53 beside decimals: float64 would change the integers (and so
        # their labels and comparisons), so keep the exact Python numbers.
        return _object_array(distinct)
    if data_type == "datetime":
        return np.asarray(distinct, dtype=np.int64)
    if data_type == "boolean":
        return np.asarray(distinct, dtype=bool)
    return _object_array(distinct)


def _object_array(distinct: Sequence[Any]) -> np.ndarray:
    dictionary = np.empty(len(distinct), dtype=object)
    for position, value in enumerate(distinct):
        # Element-wise, so tuples of equal length are not broadcast into a 2-d array.
        dictionary[position] = value
    return dictionary


def encode_values(data_type: str, values: Iterable[Any], *, strict: bool) -> Column:
    """Dictionary-encode raw values of one property.

    :param data_type: the property's data type (catalog.DATA_TYPES).
    :param values: one raw value per row (None for null).
    :param strict: raise on a value of the wrong type; otherwise such a value (for example
        the masked-value marker in a number property) is treated as null.
    :raises InvalidValue: in strict mode, for a value of the wrong type.
    """
    positions: dict[Any, int] = {}
    codes: list[int] = []
    for value in values:
        try:
            normalised = normalise_value(data_type, value)
        except InvalidValue:
            if strict:
                raise
            normalised = None
        if normalised is None:
            codes.append(NULL_CODE)
            continue
        codes.append(positions.setdefault(normalised, len(positions)))
    return Column(
        data_type,
        np.asarray(codes, dtype=np.int32),
        build_dictionary(data_type, list(positions)),
    )


def concat_columns(first: Column, second: Column) -> Column:
    """The rows of ``first`` then those of ``second``, under one dictionary that still holds
    each distinct value once (a value in both keeps ``first``'s position).

    :raises ValueError: when the columns are of different data types.
    """
    if first.data_type != second.data_type:
        raise ValueError(f"cannot join a {first.data_type} column and a {second.data_type} one")
    positions: dict[Any, int] = {
        value: code for code, value in enumerate(first.dictionary.tolist())
    }
    remap = [positions.setdefault(value, len(positions)) for value in second.dictionary.tolist()]
    lookup = np.asarray([*remap, NULL_CODE], dtype=np.int32)  # a null code (-1) picks the last
    return Column(
        first.data_type,
        np.concatenate([first.codes, lookup[second.codes]]).astype(np.int32),
        build_dictionary(first.data_type, list(positions)),
    )


def null_column(data_type: str, length: int) -> Column:
    """A column of ``length`` nulls (a property nobody reported)."""
    return Column(
        data_type, np.full(length, NULL_CODE, dtype=np.int32), build_dictionary(data_type, [])
    )
