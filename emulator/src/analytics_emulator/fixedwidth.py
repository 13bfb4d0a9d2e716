"""JSON text for whole columns at once, as fixed-width byte matrices.

A column of ``n`` values becomes an ``(n, width)`` ``uint8`` matrix: row ``i`` holds the
JSON text of value ``i`` (UTF-8), padded with NUL bytes. NUL never occurs in JSON text
(a NUL inside a string is written ``\\u0000``), so rows of several columns can be laid
side by side in one matrix and the padding dropped with a single mask, which turns a
block of records into NDJSON without a Python loop per value. Everything here is
vectorised numpy; the helpers only differ in how they produce the digits.
"""

from __future__ import annotations

import functools
import json
import threading
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

PAD = 0
NULL_TEXT = b"null"
_ZERO = ord("0")
_MINUS = ord("-")
_QUOTE = ord('"')
MS_PER_DAY = 86_400_000


def text_table(texts: Sequence[bytes]) -> np.ndarray:
    """Stack byte strings into a padded ``(len(texts), width)`` matrix.

    :param texts: JSON texts, already encoded.
    """
    width = max((len(t) for t in texts), default=1) or 1
    table = np.zeros((len(texts), width), dtype=np.uint8)
    for row, text in enumerate(texts):
        table[row, : len(text)] = np.frombuffer(text, dtype=np.uint8)
    return table


def json_text(value: object) -> bytes:
    """Compact JSON text of ``value``, non-ASCII kept as UTF-8."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def constant(text: bytes, n: int) -> np.ndarray:
    """The same text on every one of ``n`` rows (a read-only broadcast view)."""
    return np.broadcast_to(np.frombuffer(text, dtype=np.uint8), (n, len(text)))


def with_nulls(matrix: np.ndarray, null: np.ndarray | None) -> np.ndarray:
    """Replace the rows flagged in ``null`` with ``null``.

    :param matrix: a column's text matrix (not modified).
    :param null: boolean mask of null rows, or None when the column has no nulls.
    """
    if null is None or not null.any():
        return matrix
    width = max(matrix.shape[1], len(NULL_TEXT))
    out = np.zeros((matrix.shape[0], width), dtype=np.uint8)
    out[:, : matrix.shape[1]] = matrix
    out[null] = 0
    out[null, : len(NULL_TEXT)] = np.frombuffer(NULL_TEXT, dtype=np.uint8)
    return out


_PAIRS = np.array([[ord(a), ord(b)] for a in "0123456789" for b in "0123456789"], dtype=np.uint8)
"""``_PAIRS[v]`` is the two ASCII digits of ``0 <= v < 100``."""


def _write_digits(out: np.ndarray, start: int, values: np.ndarray, width: int) -> None:
    """Write non-negative ``values`` zero-filled into columns ``start..start+width-1``."""
    rest = values.astype(np.int64, copy=True)
    col = start + width
    while col - start >= 2:
        rest, pair = np.divmod(rest, 100)
        out[:, col - 2 : col] = _PAIRS[pair]
        col -= 2
    if col > start:
        out[:, start] = (rest % 10).astype(np.uint8) + _ZERO


def integers(values: np.ndarray, *, min_digits: int = 1) -> np.ndarray:
    """Signed decimal integers, exact for the whole int64 range but its minimum.

    :param values: int64 values.
    :param min_digits: write at least this many digits (leading zeros), which the decimal
        formatter uses to keep ``0.05`` from losing its zero.
    :returns: ``(n, width)`` matrix, right-aligned, padding on the left; ``width`` is one
        more than the digits of the largest magnitude (room for a sign).
    """
    n = values.shape[0]
    magnitude = np.abs(values.astype(np.int64)).astype(np.uint64)
    largest = int(magnitude.max()) if n else 0
    width = max(len(str(largest)), min_digits)
    out = np.empty((n, width + 1), dtype=np.uint8)
    rest = magnitude.copy()
    ten = np.uint64(10)
    for col in range(width, 0, -1):
        quotient = rest // ten
        out[:, col] = (rest - quotient * ten).astype(np.uint8) + _ZERO
        rest = quotient
    digits = np.full(n, min_digits, dtype=np.int64)
    for power in range(min_digits, width):
        digits += magnitude >= np.uint64(10**power)
    first = width + 1 - digits
    out[np.arange(width + 1)[None, :] < first[:, None]] = PAD
    signed = np.flatnonzero(values < 0)
    out[signed, first[signed] - 1] = _MINUS
    return out


def decimals(hundredths: np.ndarray) -> np.ndarray:
    """Exact two-digit decimals (``1234.56``, ``-0.05``) from integer hundredths."""
    digits = integers(hundredths, min_digits=3)
    n, width = digits.shape
    out = np.empty((n, width + 1), dtype=np.uint8)
    out[:, : width - 2] = digits[:, : width - 2]
    out[:, width - 2] = ord(".")
    out[:, width - 1 :] = digits[:, width - 2 :]
    return out


def _civil_dates(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Year, month, day of proleptic Gregorian dates given as days since 1970-01-01."""
    shifted = days.astype(np.int64) + 719_468
    era = np.floor_divide(shifted, 146_097)
    day_of_era = shifted - era * 146_097
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_index = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * month_index + 2) // 5 + 1
    month = np.where(month_index < 10, month_index + 3, month_index - 9)
    year = year_of_era + era * 400 + (month <= 2)
    return year, month, day


DATE = "date"
SECONDS = "seconds"
MILLIS = "millis"
_DATETIME_WIDTH = {DATE: 10, SECONDS: 19, MILLIS: 23}


_TABLE_FIRST_DAY = -25_567
"""1900-01-01 in days since 1970-01-01; the date table covers 1900 to 2099."""
_TABLE_DAYS = 73_049


def _write_dates(out: np.ndarray, start: int, days: np.ndarray) -> None:
    """``yyyy-MM-dd`` of days since 1970-01-01 into ``out[:, start:start+10]``."""
    year, month, day = _civil_dates(days)
    _write_digits(out, start, year, 4)
    out[:, start + 4] = _MINUS
    _write_digits(out, start + 5, month, 2)
    out[:, start + 7] = _MINUS
    _write_digits(out, start + 8, day, 2)


@functools.cache
def _date_table() -> np.ndarray:
    table = np.empty((_TABLE_DAYS, 10), dtype=np.uint8)
    _write_dates(table, 0, np.arange(_TABLE_FIRST_DAY, _TABLE_FIRST_DAY + _TABLE_DAYS))
    return table


@functools.cache
def _clock_table() -> np.ndarray:
    """``HH:mm:ss`` of every second of a day."""
    seconds = np.arange(86_400)
    table = np.empty((86_400, 8), dtype=np.uint8)
    _write_digits(table, 0, seconds // 3600, 2)
    table[:, 2] = ord(":")
    _write_digits(table, 3, seconds // 60 % 60, 2)
    table[:, 5] = ord(":")
    _write_digits(table, 6, seconds % 60, 2)
    return table


def datetimes(millis: np.ndarray, style: str) -> np.ndarray:
    """Quoted wall-clock datetimes in one of the platform's three formats.

    Dates and clock times are looked up in tables built once (a date of 1900-2099 or a
    second of the day is one row), so a column costs a few fancy-indexing passes.

    :param millis: milliseconds since 1970-01-01 00:00:00 of the project's local clock.
    :param style: ``date`` (``yyyy-MM-dd``), ``seconds`` (``yyyy-MM-dd HH:mm:ss``) or
        ``millis`` (``yyyy-MM-dd HH:mm:ss.SSS``).
    """
    width = _DATETIME_WIDTH[style]
    n = millis.shape[0]
    out = np.empty((n, width + 2), dtype=np.uint8)
    out[:, 0] = _QUOTE
    out[:, width + 1] = _QUOTE
    days, in_day = np.divmod(millis.astype(np.int64), MS_PER_DAY)
    index = days - _TABLE_FIRST_DAY
    if n and index.min() >= 0 and index.max() < _TABLE_DAYS:
        out[:, 1:11] = _date_table()[index]
    else:
        _write_dates(out, 1, days)
    if style == DATE:
        return out
    seconds, milli = np.divmod(in_day, 1000)
    out[:, 11] = ord(" ")
    out[:, 12:20] = _clock_table()[seconds]
    if style == MILLIS:
        out[:, 20] = ord(".")
        _write_digits(out, 21, milli, 3)
    return out


_scratch = threading.local()


def _scratch_buffer(name: str, size: int, dtype: type) -> np.ndarray:
    """A per-thread buffer reused across calls (fresh multi-megabyte arrays cost page
    faults on every block)."""
    buffer: np.ndarray | None = getattr(_scratch, name, None)
    if buffer is None or buffer.size < size:
        buffer = np.empty(size, dtype=dtype)
        setattr(_scratch, name, buffer)
    return buffer[:size]


def join_rows(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Concatenate the parts of every row side by side and drop the padding.

    :param parts: matrices with the same number of rows; each row of the result is the
        concatenation of that row in every part, in order.
    :returns: the rows' text back to back as a new ``uint8`` array (the caller puts a
        newline part last for NDJSON).
    """
    n = parts[0].shape[0]
    width = sum(p.shape[1] for p in parts)
    grid = _scratch_buffer("grid", n * width, np.uint8).reshape(n, width)
    offset = 0
    for part in parts:
        grid[:, offset : offset + part.shape[1]] = part
        offset += part.shape[1]
    flat = grid.reshape(-1)
    keep = np.not_equal(flat, PAD, out=_scratch_buffer("keep", flat.size, np.bool_))
    return flat[keep]


def strip_text(row: np.ndarray) -> str:
    """The text of one padded row."""
    return row[row != PAD].tobytes().decode()
