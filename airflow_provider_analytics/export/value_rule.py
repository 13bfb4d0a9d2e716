"""The decoding rule of a cohort export, value by value: what the Python path applies to a line
Arrow's parser refused (the values Arrow's parser takes, and no others).

JSON numbers arrive as :class:`JsonNumber`, their text, so each column reads them by its own
rule (a ``number`` column by :mod:`~airflow_provider_analytics.export.number_rule`). A converter
raises :class:`Unfit` for a value that does not fit (the decoder names the column and row),
:class:`NumberRefusal` for a number the number rule refuses, and :class:`DecimalFound` when a
``number`` column read as int64 meets a decimal.
"""

from __future__ import annotations

import decimal
import re
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa

from airflow_provider_analytics.core import strict_json
from airflow_provider_analytics.core.arrow_types import is_text
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
DECIMAL_TEXT: Final = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
"""Exact decimal columns also take numbers written as strings, as Arrow's parser does."""
_INTEGER: Final = re.compile(r"-?\d+")


def kind(value: Any) -> str:
    """The JSON kind of a decoded value, for messages."""
    if isinstance(value, JsonNumber):
        return "number"
    if isinstance(value, bool):
        return "boolean"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), type(value).__name__)


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and not isinstance(value, JsonNumber)


def _only(
    accepts: Callable[[Any], Any], what: str, read: Callable[[Any], Any] = lambda value: value
) -> Callable[[Any], Any]:
    """The converter of the values ``accepts``, read by ``read``; any other is not ``what``."""

    def convert(value: Any) -> Any:
        if accepts(value):
            return read(value)
        raise Unfit(f"a JSON {kind(value)} is not {what}")

    return convert


def _numbers_only(read: Callable[[str], Any]) -> Callable[[Any], Any]:
    return _only(lambda value: isinstance(value, JsonNumber), "a number", read)


def _decimal_reader(scale: int) -> Callable[[str], decimal.Decimal]:
    def to_decimal(value: str) -> decimal.Decimal:
        number = decimal.Decimal(value)
        exponent = number.as_tuple().exponent
        if isinstance(exponent, int) and -exponent > scale:
            raise Unfit(f"more than {scale} decimals")
        return number

    return to_decimal


def _unsupported(value: Any) -> Any:
    raise Unfit("this column type has no line-by-line rule")


def converter(
    column: ExportColumn, *, double: bool = False, decimal_row: int | None = None
) -> Callable[[Any], Any]:
    """The Python rule for one column; a ``number`` column (:attr:`ExportColumn.widens`) reads
    by whether it is ``double`` by now, and the row of its first decimal when it is."""
    arrow_type = column.arrow_type
    if column.widens:
        return _numbers_only(number_converter(column.name, double=double, decimal_row=decimal_row))
    if pa.types.is_timestamp(arrow_type):
        return _only(_is_text, "a datetime text")
    if is_text(arrow_type):
        # a number keeps its JSON text, a boolean is written as JSON writes it
        as_text = {True: "true", False: "false"}
        return _only(
            lambda value: isinstance(value, (str, bool)),
            "a string",
            lambda value: as_text[value] if isinstance(value, bool) else str(value),
        )
    if pa.types.is_floating(arrow_type):
        return _numbers_only(lambda text: finite_double(text, column.name))
    if pa.types.is_integer(arrow_type):
        return _only(
            lambda value: isinstance(value, JsonNumber) and _INTEGER.fullmatch(value),
            "an integer",
            int,
        )
    if pa.types.is_decimal(arrow_type):
        return _only(
            lambda value: isinstance(value, str) and DECIMAL_TEXT.fullmatch(value),
            "a number",
            _decimal_reader(arrow_type.scale),
        )
    if pa.types.is_boolean(arrow_type):
        return _only(lambda value: isinstance(value, bool), "true or false")
    if pa.types.is_list(arrow_type) and pa.types.is_string(arrow_type.value_type):
        return _only(
            lambda value: (
                isinstance(value, list) and all(item is None or _is_text(item) for item in value)
            ),
            "a list of strings and nulls",
        )
    return _unsupported
