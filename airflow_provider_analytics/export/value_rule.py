"""The decoding rule of a cohort export, value by value: what the Python path applies to a line
Arrow's parser refused (the values Arrow's parser takes, and no others).

JSON numbers arrive as :class:`JsonNumber`, their text, so each column reads them by its own rule:
a string column keeps the text, a ``number`` column follows
:mod:`~airflow_provider_analytics.export.number_rule`, a decimal column reads the digits.
A converter raises ``TypeError``/``ValueError``/``ArithmeticError`` for a value that does not
fit (the decoder names the column and the row), :class:`NumberRefusal` for a number the number
rule refuses, and :class:`DecimalFound` when a ``number`` column read as int64 meets a decimal.
"""

from __future__ import annotations

import decimal
import re
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa

from airflow_provider_analytics.core import strict_json
from airflow_provider_analytics.core.errors import ExportDataError as ExportDataError
from airflow_provider_analytics.core.errors import Unfit
from airflow_provider_analytics.export.number_rule import finite_double, number_converter

if TYPE_CHECKING:
    from collections.abc import Callable

    from airflow_provider_analytics.export.schema import ExportColumn


class JsonNumber(str):
    """A JSON number kept as its text, so each column can read it by its own rule."""

    __slots__ = ()


DECODER: Final = strict_json.decoder(parse_int=JsonNumber, parse_float=JsonNumber)
"""The strict decoder of the Python path: numbers kept as :class:`JsonNumber`."""
DECIMAL_TEXT: Final = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
"""Exact decimal columns also take numbers written as strings, as Arrow's parser does."""


def kind(value: Any) -> str:
    """The JSON kind of a decoded value, for messages."""
    if isinstance(value, JsonNumber):
        return "number"
    if isinstance(value, bool):
        return "boolean"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), type(value).__name__)


def _to_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):  # JsonNumber included: its JSON text
        return str(value)
    raise Unfit(f"a JSON {kind(value)} is not a string")


def _numbers_only(read: Callable[[str], Any]) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if isinstance(value, JsonNumber):
            return read(value)
        raise Unfit(f"a JSON {kind(value)} is not a number")

    return convert


def _to_integer(value: Any) -> int:
    if isinstance(value, JsonNumber) and re.fullmatch(r"-?\d+", value):
        return int(value)
    raise Unfit(f"a JSON {kind(value)} is not an integer")


def _decimal_converter(scale: int) -> Callable[[Any], decimal.Decimal]:
    def to_decimal(value: Any) -> decimal.Decimal:
        if not isinstance(value, str) or not DECIMAL_TEXT.fullmatch(value):
            raise Unfit(f"a JSON {kind(value)} is not a number")
        number = decimal.Decimal(value)
        exponent = number.as_tuple().exponent
        if isinstance(exponent, int) and -exponent > scale:
            raise Unfit(f"more than {scale} decimals")
        return number

    return to_decimal


def _to_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise Unfit(f"a JSON {kind(value)} is not true or false")


def _to_text(value: Any) -> str:
    if isinstance(value, str) and not isinstance(value, JsonNumber):
        return value
    raise Unfit(f"a JSON {kind(value)} is not a datetime text")


def _to_string_list(value: Any) -> list[str | None]:
    if isinstance(value, list) and all(
        item is None or (isinstance(item, str) and not isinstance(item, JsonNumber))
        for item in value
    ):
        return value
    raise Unfit("not a list of strings and nulls")


def _unsupported(value: Any) -> Any:
    raise Unfit("this column type has no line-by-line rule")


def converter(
    column: ExportColumn, *, double: bool = False, decimal_row: int | None = None
) -> Callable[[Any], Any]:
    """The Python rule for one column.

    :param column: the column.
    :param double: for a ``number`` column (:attr:`ExportColumn.widens`): whether it is double
        by now (else int64).
    :param decimal_row: for a ``number`` column that is double: the row of its first decimal.
    """
    arrow_type = column.arrow_type
    if column.widens:
        return _numbers_only(number_converter(column.name, double=double, decimal_row=decimal_row))
    if pa.types.is_timestamp(arrow_type):
        return _to_text
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return _to_string
    if pa.types.is_floating(arrow_type):
        return _numbers_only(lambda text: finite_double(text, column.name))
    if pa.types.is_integer(arrow_type):
        return _to_integer
    if pa.types.is_decimal(arrow_type):
        return _decimal_converter(arrow_type.scale)
    if pa.types.is_boolean(arrow_type):
        return _to_boolean
    if pa.types.is_list(arrow_type) and pa.types.is_string(arrow_type.value_type):
        return _to_string_list
    return _unsupported
