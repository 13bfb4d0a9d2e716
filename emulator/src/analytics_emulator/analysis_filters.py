"""Filters of analysis requests: ``{conditions: [{expression, function, params}], relation}``.

Functions by data type (a function on another type is a 400):

- string: EQ (several params: any of them), NOT_EQ, CONTAIN (substring), NOT_CONTAIN,
  NULL, NOT_NULL, EMPTY (null or ``""``), NOT_EMPTY
- number: EQ, NOT_EQ, GT, GTE, LT, LTE, RANGE (two bounds, inclusive), NULL, NOT_NULL;
  params may be numbers or numeric strings
- boolean: TRUE, FALSE, NULL, NOT_NULL
- datetime: ABSOLUTE_TIME (two datetimes, inclusive; a date-only upper bound means the
  end of that day), NULL, NOT_NULL
- array<string>: EQ (first element), CONTAIN (membership), NOT_CONTAIN, NULL, NOT_NULL,
  EMPTY (null or ``[]``), NOT_EMPTY

NOT_EQ and NOT_CONTAIN are exact complements of EQ and CONTAIN, so a null value satisfies
them; every other value test is false on null. CONTAIN and NOT_CONTAIN take exactly one
param; EQ and NOT_EQ one or more; NULL, NOT_NULL, EMPTY, NOT_EMPTY, TRUE and FALSE none.
``relation`` is AND or OR in any letter case, AND when omitted; a filter with no
conditions keeps everything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

import numpy as np

from analytics_emulator.analysis_expressions import parse_property_expression
from analytics_emulator.analysis_validation import (
    finite_number,
    require_list,
    require_object,
)
from analytics_emulator.errors import BadRequest
from analytics_emulator.eventlog_columns import InvalidValue, parse_datetime_ms

if TYPE_CHECKING:
    from analytics_emulator.analysis_expressions import PropertyExpr
    from analytics_emulator.eventlog_columns import Column

FUNCTIONS_BY_TYPE: Final[dict[str, frozenset[str]]] = {
    "string": frozenset(
        {"EQ", "NOT_EQ", "CONTAIN", "NOT_CONTAIN", "NULL", "NOT_NULL", "EMPTY", "NOT_EMPTY"}
    ),
    "number": frozenset({"EQ", "NOT_EQ", "GT", "GTE", "LT", "LTE", "RANGE", "NULL", "NOT_NULL"}),
    "boolean": frozenset({"TRUE", "FALSE", "NULL", "NOT_NULL"}),
    "datetime": frozenset({"ABSOLUTE_TIME", "NULL", "NOT_NULL"}),
    "array<string>": frozenset(
        {"EQ", "CONTAIN", "NOT_CONTAIN", "NULL", "NOT_NULL", "EMPTY", "NOT_EMPTY"}
    ),
}
ALL_FUNCTIONS: Final = frozenset().union(*FUNCTIONS_BY_TYPE.values())

_ARITY: Final[dict[str, tuple[int, int | None]]] = {
    "EQ": (1, None),
    "NOT_EQ": (1, None),
    "CONTAIN": (1, 1),
    "NOT_CONTAIN": (1, 1),
    "GT": (1, 1),
    "GTE": (1, 1),
    "LT": (1, 1),
    "LTE": (1, 1),
    "RANGE": (2, 2),
    "ABSOLUTE_TIME": (2, 2),
    "NULL": (0, 0),
    "NOT_NULL": (0, 0),
    "EMPTY": (0, 0),
    "NOT_EMPTY": (0, 0),
    "TRUE": (0, 0),
    "FALSE": (0, 0),
}
_TRUE_ON_NULL: Final = frozenset({"NOT_EQ", "NOT_CONTAIN", "NULL", "EMPTY"})
_INT64_LIMIT: Final = 2**63 - 1
_INTEGER_TEXT: Final = re.compile(r"[+-]?\d+", re.ASCII)
_END_OF_DAY_MS: Final = 86_400_000 - 1


@dataclass(frozen=True)
class Condition:
    """One checked condition; ``params`` are already in the property's value form."""

    expression: PropertyExpr
    function: str
    params: tuple[Any, ...]


@dataclass(frozen=True)
class Filter:
    """Checked conditions joined by OR (``any_of``) or AND."""

    conditions: tuple[Condition, ...]
    any_of: bool

    def expressions(self) -> list[PropertyExpr]:
        return [condition.expression for condition in self.conditions]


class ColumnSource(Protocol):
    """Rows whose property values a filter can read."""

    def __len__(self) -> int: ...

    def column(self, expression: PropertyExpr) -> Column: ...


def _number_param(value: object, where: str) -> int | float:
    if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value.strip()):
        value = int(value.strip())
    elif isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise BadRequest(f"{where} must hold numbers, got {value!r}", [where]) from None
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) <= _INT64_LIMIT:
        return value
    number = finite_number(value)
    if number is None:
        raise BadRequest(f"{where} must hold finite numbers, got {value!r}", [where])
    return number


def _datetime_param(value: object, where: str, *, upper: bool) -> int:
    if not isinstance(value, str):
        raise BadRequest(f"{where} must hold datetimes yyyy-MM-dd[ HH:mm:ss]", [where])
    try:
        millis = parse_datetime_ms(value)
    except InvalidValue:
        raise BadRequest(f"{where}: not a datetime: {value!r}", [where]) from None
    return millis + _END_OF_DAY_MS if upper and len(value) == len("yyyy-MM-dd") else millis


def _params(function: str, data_type: str, raw: object, where: str) -> tuple[Any, ...]:
    values = [] if raw is None else require_list(raw, where, non_empty=False)
    low, high = _ARITY[function]
    if len(values) < low or (high is not None and len(values) > high):
        count = str(low) if low == high else f"at least {low}"
        raise BadRequest(f"{function} takes {count} params, got {len(values)}", [where])
    bounds: tuple[int | float, ...]
    if function == "ABSOLUTE_TIME":
        bounds = (
            _datetime_param(values[0], where, upper=False),
            _datetime_param(values[1], where, upper=True),
        )
    elif data_type == "number":
        bounds = tuple(_number_param(v, where) for v in values)
    else:
        if not all(isinstance(v, str) for v in values):
            raise BadRequest(f"{where} must hold strings for {data_type} properties", [where])
        return tuple(values)
    if function in {"RANGE", "ABSOLUTE_TIME"} and bounds[0] > bounds[1]:
        raise BadRequest(f"{function} bounds must be ascending", [where])
    return bounds


def _condition(value: object, where: str) -> Condition:
    body = require_object(value, where)
    expression = parse_property_expression(body.get("expression"), f"{where}.expression")
    function = body.get("function")
    if not isinstance(function, str) or function not in ALL_FUNCTIONS:
        raise BadRequest(f"unknown filter function {function!r}", [f"{where}.function"])
    if function not in FUNCTIONS_BY_TYPE[expression.data_type]:
        raise BadRequest(
            f"{function} does not apply to {expression.data_type} property {expression.text}",
            [f"{where}.function"],
        )
    params = _params(function, expression.data_type, body.get("params"), f"{where}.params")
    return Condition(expression, function, params)


def parse_filter(value: object, where: str) -> Filter | None:
    """Check a filter object; None (or an absent filter) means no filter.

    :param value: the ``filter`` value of the request.
    :param where: its parameter name, e.g. ``steps[0].filter``.
    :raises BadRequest: naming the condition part that is wrong.
    """
    if value is None:
        return None
    body = require_object(value, where)
    raw_conditions = body.get("conditions")
    conditions = (
        []
        if raw_conditions is None
        else require_list(raw_conditions, f"{where}.conditions", non_empty=False)
    )
    relation = body.get("relation")
    if relation is None:
        relation = "AND"
    if not isinstance(relation, str) or relation.upper() not in {"AND", "OR"}:
        raise BadRequest(f"relation must be AND or OR, got {relation!r}", [f"{where}.relation"])
    return Filter(
        tuple(_condition(item, f"{where}.conditions[{i}]") for i, item in enumerate(conditions)),
        any_of=relation.upper() == "OR",
    )


def _each(dictionary: np.ndarray, test: Any) -> np.ndarray:
    return np.fromiter((bool(test(v)) for v in dictionary), dtype=bool, count=len(dictionary))


def _entry_matches(condition: Condition, column: Column) -> np.ndarray:
    """Result of the condition for every dictionary entry of the column."""
    function, params, entries = condition.function, condition.params, column.dictionary
    is_list = column.data_type == "array<string>"
    if function in {"EQ", "NOT_EQ"}:
        if column.data_type == "number":
            matched = np.isin(entries, np.asarray(params))
        elif is_list:
            matched = _each(entries, lambda v: len(v) > 0 and v[0] in params)
        else:
            matched = _each(entries, lambda v: v in params)
        return matched if function == "EQ" else ~matched
    if function in {"CONTAIN", "NOT_CONTAIN"}:
        matched = _each(entries, lambda v: params[0] in v)
        return matched if function == "CONTAIN" else ~matched
    if function in {"EMPTY", "NOT_EMPTY"}:
        empty = _each(entries, lambda v: len(v) == 0)
        return empty if function == "EMPTY" else ~empty
    comparisons = {
        "GT": lambda: entries > params[0],
        "GTE": lambda: entries >= params[0],
        "LT": lambda: entries < params[0],
        "LTE": lambda: entries <= params[0],
        "RANGE": lambda: (entries >= params[0]) & (entries <= params[1]),
        "ABSOLUTE_TIME": lambda: (entries >= params[0]) & (entries <= params[1]),
        "TRUE": lambda: entries == True,  # noqa: E712 - element-wise on a bool array
        "FALSE": lambda: entries == False,  # noqa: E712
        "NULL": lambda: np.zeros(len(entries), dtype=bool),
        "NOT_NULL": lambda: np.ones(len(entries), dtype=bool),
    }
    return np.asarray(comparisons[function](), dtype=bool)


def condition_mask(condition: Condition, column: Column) -> np.ndarray:
    """Per-row result of one condition on the rows of ``column``."""
    return column.per_row(_entry_matches(condition, column), condition.function in _TRUE_ON_NULL)


def filter_mask(checked: Filter | None, source: ColumnSource) -> np.ndarray:
    """Per-row result of a whole filter (all True without a filter or conditions)."""
    if checked is None or not checked.conditions:
        return np.ones(len(source), dtype=bool)
    masks = [condition_mask(c, source.column(c.expression)) for c in checked.conditions]
    combine = np.logical_or if checked.any_of else np.logical_and
    return combine.reduce(masks)
