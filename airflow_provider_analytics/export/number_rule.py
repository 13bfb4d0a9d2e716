"""The rule for the numbers of a cohort export: no value is changed by default.

A JSON integer token (digits, perhaps a leading ``-``) keeps its exact integer; a decimal token
(with ``.``, ``e`` or ``E``) is the double it denotes. A column of the plan's type ``number`` is
``int64`` while every value of the export is an integer token that fits int64, and ``float64``
(double) once one is a decimal token. This is what DuckDB's ``read_json`` and ``pyarrow.json``
infer (BIGINT for integer literals, DOUBLE for decimals, DOUBLE when both meet), with one
difference: a promotion never rounds silently. Refused instead, naming the column, the 1-based
row and the setting that accepts the value (:class:`NumberRefusal`):

- an integer beyond int64, in any default ``number`` column (``decimal`` keeps it exact);
- in a double column, an integer that a double cannot hold exactly (beyond 2**53 in magnitude
  and not equal to its double), before or after the first decimal (``decimal`` keeps both
  exact, ``double`` accepts the nearest double);
- a decimal beyond the range of a double (``1e400``; ``string`` keeps its text).

A column set to ``double`` with ``schema_overrides`` takes every number as its nearest double
(the caller chose it); ``int64`` takes integer tokens that fit; ``decimal`` exact decimals.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import pyarrow as pa

from airflow_provider_analytics.core.errors import DecimalFound, NumberRefusal

if TYPE_CHECKING:
    from collections.abc import Callable

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
EXACT_DOUBLE_LIMIT: Final = 2**53
"""Up to this magnitude a double holds every integer; beyond it only some."""
_DOUBLE_OF_2_63: Final = float(2**63)
_DECIMAL_INTEGER_DIGITS: Final = 29
"""Integer digits of the ``decimal`` setting, decimal(38, 9)."""


def value_slots(array: pa.Array, dtype: Any) -> np.ndarray[Any, Any]:
    """A fixed-width array's value slots as a view of its data buffer, without a copy (a null
    slot holds whatever the builder left there). ``Array.to_numpy``, like giving Arrow a Python
    constant, makes pyarrow import pandas, ~40 MiB of a worker's memory an export does not need.
    """
    data = np.frombuffer(array.buffers()[1], dtype=dtype)
    return data[array.offset : array.offset + len(array)]


def is_integer_token(text: str) -> bool:
    """Whether a JSON number token is an integer (no fraction, no exponent)."""
    return "." not in text and "e" not in text and "E" not in text


def holds_exactly(value: int) -> bool:
    """Whether a double holds ``value`` exactly."""
    return -EXACT_DOUBLE_LIMIT <= value <= EXACT_DOUBLE_LIMIT or float(value) == value


def _setting(column: str, kind: str) -> str:
    return f"schema_overrides={{{column!r}: {kind!r}}}"


def _accepting(*settings: str) -> str:
    return "To accept it, set " + ", or ".join(settings)


def beyond_int64(column: str, digits: int) -> NumberRefusal:
    if digits <= _DECIMAL_INTEGER_DIGITS:
        accept = _accepting(f"{_setting(column, 'decimal')} (exact, decimal(38, 9))")
    else:
        accept = _accepting(
            f"{_setting(column, 'string')} (its text; decimal(38, 9) holds 29 digits)"
        )
    return NumberRefusal("an integer beyond int64", accept)


def inexact_in_double(column: str, value: int, decimal_row: int | None) -> NumberRefusal:
    """An integer a double cannot hold, in a column that is double."""
    because = (
        f"the column holds decimals (the first in row {decimal_row}), so it is a double column"
        if decimal_row is not None
        else "the column is a double column"
    )
    return NumberRefusal(
        f"an integer that a double cannot hold exactly (it would become {int(float(value))}); "
        f"{because}",
        _accepting(
            f"{_setting(column, 'decimal')} (every value exact, up to 9 decimals)",
            f"{_setting(column, 'double')} (the nearest double)",
        ),
    )


def integer_of(text: str, column: str) -> int:
    """An integer token as its exact integer, refused beyond int64."""
    value = int(text)
    if not INT64_MIN <= value <= INT64_MAX:
        raise beyond_int64(column, len(text.lstrip("-")))
    return value


def number_converter(
    column: str, *, double: bool, decimal_row: int | None = None
) -> Callable[[str], Any]:
    """The Python rule for one default ``number`` column (a JSON number given as its text).

    :param column: the column's id, for the setting named in a refusal.
    :param double: whether the column is double already (else int64: a decimal token raises
        :class:`DecimalFound`).
    :param decimal_row: the row of its first decimal, for the message.
    """

    def to_int64(text: str) -> int:
        if not is_integer_token(text):
            raise DecimalFound()
        return integer_of(text, column)

    def to_double(text: str) -> float:
        if is_integer_token(text):
            value = integer_of(text, column)
            if not holds_exactly(value):
                raise inexact_in_double(column, value, decimal_row)
            return float(value)
        return finite_double(text, column)

    return to_double if double else to_int64


def finite_double(text: str, column: str) -> float:
    """A number token's nearest double, refused when it is beyond the range of a double."""
    value = float(text)
    if math.isinf(value):
        accept = _accepting(f"{_setting(column, 'string')} (its text)")
        raise NumberRefusal("a decimal beyond the range of a double", accept)
    return value


def _numpy(values: pa.Array | pa.ChunkedArray, dtype: type[np.generic]) -> np.ndarray[Any, Any]:
    """A numeric column's values as numpy, nulls as 0, read from its buffers (giving Arrow a
    Python constant such as ``fill_null(values, 0)`` would make pyarrow load pandas)."""
    array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    data = value_slots(array, dtype)
    if array.null_count:
        bits = np.unpackbits(np.frombuffer(array.buffers()[0], dtype=np.uint8), bitorder="little")
        valid = bits[array.offset : array.offset + len(array)].astype(bool)
        data = np.where(valid, data, 0)
    return data


def _inside(values: pa.Array | pa.ChunkedArray, low: float, high: float, strict: bool) -> bool:
    """Whether every value slot of an int64 or double column lies between ``low`` and ``high``
    (``strict``: neither reached), null slots included: a certain "nothing to look at" for the
    checks below, decided by numpy's min and max on the buffers (NaN fails it). Otherwise
    (False) the checks read every value, nulls as 0.

    Two numpy reductions a chunk: the checks run on every block of an export, where Arrow's
    ``min_max`` and ``all(is_finite)`` took ~55 us a column of a 1 MiB block, these ~12 us
    (the cost is the calls' own, not the values').
    """
    dtype = {pa.int64(): np.int64, pa.float64(): np.float64}.get(values.type)
    if dtype is None:
        return False
    for chunk in values.chunks if isinstance(values, pa.ChunkedArray) else [values]:
        if not len(chunk):
            continue
        data = value_slots(chunk, dtype)
        smallest, largest = data.min(), data.max()
        within = low < smallest and largest < high if strict else low <= smallest <= largest <= high
        if not within:
            return False
    return True


def first_inexact(values: pa.Array | pa.ChunkedArray) -> int | None:
    """The index of the first int64 value that a double cannot hold exactly, or None.

    Cheap when no value is beyond 2**53 in magnitude (one min/max pass).
    """
    if _inside(values, -EXACT_DOUBLE_LIMIT, EXACT_DOUBLE_LIMIT, strict=False):
        return None
    exact = _numpy(values, np.int64)
    doubles = exact.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        back = doubles.astype(np.int64)
    inexact = (doubles >= _DOUBLE_OF_2_63) | (back != exact)
    found = np.flatnonzero(inexact)
    return int(found[0]) if found.size else None


def beyond_exact(values: pa.Array | pa.ChunkedArray) -> list[int]:
    """Indices of doubles beyond 2**53 in magnitude or not finite: those whose JSON token the
    rule must look at (an integer there may not be the double Arrow read)."""
    if _inside(values, -EXACT_DOUBLE_LIMIT, EXACT_DOUBLE_LIMIT, strict=True):
        return []
    array = _numpy(values, np.float64)
    with np.errstate(invalid="ignore"):
        odd = ~np.isfinite(array) | (np.abs(array) >= EXACT_DOUBLE_LIMIT)
    return np.flatnonzero(odd).tolist()


def first_fraction(values: pa.Array | pa.ChunkedArray) -> int | None:
    """The index of the first double with a fraction (so certainly a decimal token), or None."""
    array = _numpy(values, np.float64)
    with np.errstate(invalid="ignore"):
        fractions = np.flatnonzero(np.isfinite(array) & (array != np.floor(array)))
    return int(fractions[0]) if fractions.size else None


def not_finite(values: pa.Array | pa.ChunkedArray) -> list[int]:
    """Indices of doubles that are NaN or infinite (Arrow's parser reads ``NaN`` and
    ``Infinity`` tokens, which are not JSON)."""
    if _inside(values, -math.inf, math.inf, strict=True):
        return []
    return np.flatnonzero(~np.isfinite(_numpy(values, np.float64))).tolist()
