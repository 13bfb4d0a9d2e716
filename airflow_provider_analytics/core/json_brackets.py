"""Where a JSON text's braces and brackets stand outside strings, and how deep they nest,
found from the quotes and brackets alone (vectorised over the bytes, nothing decoded): the one
measure of nesting depth, for answers (:func:`~airflow_provider_analytics.core.strict_json.
loads`), the export's blocks (before Arrow infers a key's type, which recurses once a level)
and the users of a page (:mod:`~airflow_provider_analytics.core.page_lines`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from airflow_provider_analytics.core import byte_scans

_OPENING: Final = (ord("{"), ord("["))
_CLOSING: Final = (ord("}"), ord("]"))
_QUOTE: Final = ord('"')


@dataclass(frozen=True)
class Structure:
    """A text's braces and brackets outside strings: where they stand, which they are, and the
    nesting depth after each."""

    at: np.ndarray[Any, Any]
    char: np.ndarray[Any, Any]
    depth: np.ndarray[Any, Any]


def _without_escapes(data: bytes) -> bytes:
    """``data`` with its escaped backslashes, then its escaped quotes, blanked where they stand
    (a run of backslashes pairs from its left, as JSON reads it): two passes of
    ``bytes.replace``, which keep every position and stay linear however many escapes a hostile
    text holds."""
    if b"\\" not in data:  # (memchr) rare: most texts skip the passes
        return data
    return data.replace(b"\\\\", b"__").replace(b'\\"', b"__")


def structure(data: bytes) -> Structure:
    """Find the structure from the quotes and brackets alone: a bracket is outside strings when
    an even number of real quotes precede it, once the escapes are blanked."""
    data = _without_escapes(data)
    raw = np.frombuffer(data, dtype=np.uint8)
    quotes = raw == _QUOTE
    marks = byte_scans.positions(raw, *_OPENING, *_CLOSING)
    marks = marks[~_quoted(quotes, marks)]
    chars = raw[marks]
    opening = (chars == _OPENING[0]) | (chars == _OPENING[1])
    depth = np.cumsum(opening.astype(np.int64) * 2 - 1)
    return Structure(marks, chars, depth)


def nesting(data: bytes) -> tuple[int, int]:
    """The deepest and the lowest nesting of arrays and objects in ``data`` (JSON texts one
    after another, as a parser reads them, newlines or not); ``(0, 0)`` without any. A lowest
    below 0: more were closed than opened, and what follows cannot be judged.

    Vectorised (:func:`structure`, ~1 ms a MiB) from :data:`SMALL` bytes on; a shorter text
    (an answer, a line) is measured on its brackets alone, numpy's fixed cost (~40 us) being
    larger than the whole walk."""
    if len(data) >= SMALL:
        depth = structure(data).depth
    else:
        brackets = _without_escapes(data).translate(None, _NOT_STRUCTURE)
        brackets = _STRING.sub(b"", brackets).partition(b'"')[0]
        # (after a quote left open, everything is in its string)
        depth = np.cumsum(np.frombuffer(brackets.translate(_STEPS), np.int8), dtype=np.int64)
    return (int(depth.max()), int(depth.min())) if depth.size else (0, 0)


SMALL: Final = 2048
_NOT_STRUCTURE: Final = bytes(set(range(256)) - set(b'[]{}"'))
_STRING: Final = re.compile(rb'"[^"]*"')
_STEPS: Final = bytes.maketrans(b"[{]}", bytes([1, 1, 255, 255]))  # +1 and -1 as int8


def _quoted(quotes: np.ndarray[Any, Any], at: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Whether an odd number of ``quotes`` (a mask) stand before each position of ``at``: the
    mask packed 64 bits a word, each turned into its running parity by six shifts, then each
    word's carry applied (a third of the cost of searching among every quote)."""
    bits = np.packbits(quotes, bitorder="little")
    words = np.zeros((len(bits) + 7) // 8, dtype="<u8")
    words.view(np.uint8)[: len(bits)] = bits
    for shift in (1, 2, 4, 8, 16, 32):
        words ^= words << np.uint64(shift)
    odd_before = np.bitwise_xor.accumulate((words >> np.uint64(63)).astype(np.uint8))
    words[1:][odd_before[:-1].astype(bool)] ^= np.uint64(2**64 - 1)
    return ((words[at >> 6] >> (at & 63).astype(np.uint64)) & np.uint64(1)).astype(bool)
