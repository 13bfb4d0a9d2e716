"""Checks of the request fields that funnel and event analysis share.

Every check raises :class:`BadRequest` naming the offending parameter, so a malformed body
becomes a 400 with ``data`` listing it, never another exception.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any, Final

from analytics_emulator import catalog
from analytics_emulator.analysis_expressions import (
    PropertyExpr,
    parse_property_expression,
)
from analytics_emulator.errors import BadRequest
from analytics_emulator.eventlog_columns import date_to_day

if TYPE_CHECKING:
    from collections.abc import Mapping

MAX_SAMPLING_FACTOR: Final = 64
_DATE_PATTERN: Final = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)


def require_body(request: object) -> Mapping[str, Any]:
    """The request body as a mapping.

    :raises BadRequest: when the body is not a JSON object.
    """
    if not isinstance(request, dict):
        raise BadRequest("the request body must be a JSON object", ["body"])
    return request


def require_list(value: object, where: str, *, non_empty: bool) -> list[Any]:
    """A list-valued field, optionally required to have entries."""
    if not isinstance(value, list) or (non_empty and not value):
        what = "a non-empty array" if non_empty else "an array"
        raise BadRequest(f"{where} must be {what}", [where])
    return value


def require_object(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise BadRequest(f"{where} must be an object", [where])
    return value


def integer(value: object, where: str, *, minimum: int, maximum: int | None = None) -> int:
    """A whole number within bounds; integral floats such as ``2.0`` are accepted.

    :raises BadRequest: for booleans, fractions, non-numbers and values out of bounds.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest(f"{where} must be an integer", [where])
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise BadRequest(f"{where} must be an integer", [where])
    number = int(value)
    if number < minimum or (maximum is not None and number > maximum):
        bounds = f"at least {minimum}" if maximum is None else f"{minimum} to {maximum}"
        raise BadRequest(f"{where} must be {bounds}, got {number}", [where])
    return number


@dataclass(frozen=True)
class DateRange:
    """``fromDate``..``toDate``, both inclusive."""

    first: date
    last: date

    @property
    def first_day(self) -> int:
        return date_to_day(self.first)

    @property
    def last_day(self) -> int:
        return date_to_day(self.last)

    def dates(self) -> list[date]:
        return [self.first + timedelta(days=i) for i in range((self.last - self.first).days + 1)]


def _date(body: Mapping[str, Any], key: str) -> date:
    value = body.get(key)
    if not isinstance(value, str) or _DATE_PATTERN.fullmatch(value) is None:
        raise BadRequest(f"{key} is required and must be written yyyy-MM-dd", [key])
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise BadRequest(f"{key} is not a calendar date: {value!r}", [key]) from exc


def parse_dates(body: Mapping[str, Any]) -> DateRange:
    """``fromDate`` and ``toDate`` (required, ``yyyy-MM-dd``, from not after to)."""
    first, last = _date(body, "fromDate"), _date(body, "toDate")
    if first > last:
        raise BadRequest("fromDate must not be after toDate", ["fromDate", "toDate"])
    return DateRange(first, last)


def parse_crowd(body: Mapping[str, Any], cohorts: Mapping[str, int]) -> int | None:
    """The one user group of ``crowds``, as the number of leading users it holds.

    ``$ALL`` is everyone (None); a cohort of size N holds users 0..N-1. Comparing several
    groups is not supported, so exactly one entry is accepted.

    :raises BadRequest: for a missing list, several entries or an unknown cohort code.
    """
    crowds = body.get("crowds")
    if not isinstance(crowds, list) or len(crowds) != 1 or not isinstance(crowds[0], str):
        raise BadRequest(
            "crowds must hold exactly one user group ($ALL or a cohort code); "
            "cohort comparison is not supported",
            ["crowds"],
        )
    code = crowds[0]
    if code == catalog.ALL_USERS:
        return None
    if code not in cohorts:
        raise BadRequest(f"unknown cohort {code!r}", ["crowds"])
    return int(cohorts[code])


def parse_sampling(body: Mapping[str, Any]) -> int:
    """``samplingFactor`` k (1..64, default 1): the analysis sees users with index % k == 0.

    That is a deterministic 1/k sample of users; the numbers are reported as counted in
    the sample, not scaled back up by k.
    """
    value = body.get("samplingFactor")
    if value is None:
        return 1
    return integer(value, "samplingFactor", minimum=1, maximum=MAX_SAMPLING_FACTOR)


def check_use_cache(body: Mapping[str, Any]) -> None:
    """``useCache`` must be a boolean when given; results are always computed afresh."""
    value = body.get("useCache")
    if value is not None and not isinstance(value, bool):
        raise BadRequest("useCache must be a boolean", ["useCache"])


@dataclass(frozen=True)
class Split:
    """A ``byField``: the property to split by and its optional number buckets."""

    expression: PropertyExpr
    buckets: tuple[float, ...] | None


def finite_number(value: object) -> float | None:
    """A JSON number (not a boolean) as a finite float, None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _bucket_bound(value: object, where: str) -> float:
    number = finite_number(value)
    if number is None:
        raise BadRequest(f"{where} must hold finite numbers", [where])
    return number


def parse_split(value: object, where: str) -> Split:
    """A ``{expression, buckets}`` split.

    ``buckets`` (null or empty = none) must be strictly ascending finite numbers and is
    allowed on number properties only; bounds b1 < b2 give the intervals ``-∞~b1``,
    ``b1~b2`` and ``b2~+∞``, each closed on its lower bound.
    """
    field = require_object(value, where)
    expression = parse_property_expression(field.get("expression"), f"{where}.expression")
    raw = field.get("buckets")
    if raw is None or raw == []:
        return Split(expression, None)
    where_buckets = f"{where}.buckets"
    bounds = tuple(
        _bucket_bound(v, where_buckets) for v in require_list(raw, where_buckets, non_empty=True)
    )
    if expression.data_type != "number":
        raise BadRequest(
            f"buckets apply to number properties only, {expression.text} is {expression.data_type}",
            [where_buckets],
        )
    if any(a >= b for a, b in itertools.pairwise(bounds)):
        raise BadRequest(f"{where_buckets} must be strictly ascending", [where_buckets])
    return Split(expression, bounds)
