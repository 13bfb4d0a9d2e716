"""A page of cohort users as the export's NDJSON lines, without building the users.

A page of the paged endpoint (spec 4.12) is one JSON object, ``{count, page, size, users}``,
whose ``users`` array holds the same records the streamed export sends one per line. To read a
cohort in pages by the stream's one decoding rule, the page is split here, on its bytes:

- every member but ``users`` is decoded by the strict rules (the page with its ``users`` array
  emptied), and then checked by the declared answer;
- each user object is found by its braces outside strings (quotes not escaped by a backslash
  open and close strings) and handed on as the bytes that were sent, one per line, to the
  decoder the stream uses (:class:`~airflow_provider_analytics.export.decoder.BlockDecoder`),
  which applies the export's rule to every value and refuses a line that is not JSON.

Between two users only a comma and white space may stand; anything else (a number, a string, a
stray bracket) is refused naming the user's position. The scan is vectorised over the page's
bytes, so a page of 10,000 users costs a few milliseconds and its text, not its users as
objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from airflow_provider_analytics.core import strict_json
from airflow_provider_analytics.core.strict_json import StrictJsonError

USERS: Final = "users"

_BETWEEN = re.compile(rb"[ \t\n\r]*,[ \t\n\r]*")
_SPACE = re.compile(rb"[ \t\n\r]*")


@dataclass(frozen=True)
class PageParts:
    """A page split for the export's decoder.

    :param envelope: every member of the page but ``users``, strictly decoded (``users``
        itself when it is not an array, for the declared answer to refuse).
    :param rows: how many user objects ``users`` holds (``None``: no ``users`` array).
    :param lines: the user objects as sent, one per line, each line ending in ``\\n``.
    """

    envelope: dict[str, Any]
    rows: int | None
    lines: bytes


_MARKS = np.zeros(256, dtype=bool)
_MARKS[[0x7B, 0x7D, 0x5B, 0x5D, 0x3A]] = True  # { } [ ] :


@dataclass(frozen=True)
class _Structure:
    """The page's braces, brackets and colons outside strings: where they stand, which they
    are, and the nesting depth after each."""

    at: np.ndarray[Any, Any]
    char: np.ndarray[Any, Any]
    depth: np.ndarray[Any, Any]


def _structure(data: bytes) -> _Structure:
    """Find the structure from the quotes and marks alone: a mark is outside strings when an
    even number of real quotes (not escaped by an odd run of backslashes) precede it."""
    raw = np.frombuffer(data, dtype=np.uint8)
    quotes = np.flatnonzero(raw == 0x22)
    if b'\\"' in data:
        later = quotes[quotes > 0]
        escaped = []
        for position in later[raw[later - 1] == 0x5C].tolist():
            run = position - 1
            while run >= 0 and data[run] == 0x5C:
                run -= 1
            if (position - 1 - run) % 2:
                escaped.append(position)
        if escaped:  # both sorted: drop the escaped ones by their index
            quotes = np.delete(quotes, np.searchsorted(quotes, escaped))
    marks = np.flatnonzero(_MARKS[raw])
    marks = marks[(np.searchsorted(quotes, marks) % 2) == 0]
    chars = raw[marks]
    opening = (chars == 0x7B) | (chars == 0x5B)
    closing = (chars == 0x7D) | (chars == 0x5D)
    depth = np.cumsum(opening.astype(np.int64) - closing.astype(np.int64))
    return _Structure(marks, chars, depth)


def split_page(data: bytes) -> PageParts:
    """Split a page's body; the users' values are left to the export's decoder.

    :raises StrictJsonError: the page without its users is not a strict JSON object (not UTF-8,
        a repeated member, ``NaN``, bad syntax), or ``users`` holds an item that is not an
        object. The users' bytes (UTF-8 included) are the export decoder's to check.
    """
    structure = _structure(data)
    found = _users_array(data, structure)
    if found is None:
        envelope = strict_json.loads(data)
        if not isinstance(envelope, dict):
            raise StrictJsonError("is not a JSON object")
        return PageParts(envelope, None, b"")
    opened, closed = found
    envelope = strict_json.loads(data[: opened + 1] + data[closed:])
    if not isinstance(envelope, dict) or envelope.pop(USERS, None) != []:
        raise StrictJsonError("is not a JSON object with one users array")
    rows, lines = _users(data, opened, closed, structure)
    return PageParts(envelope, rows, lines)


def _after_space(data: bytes, at: int) -> int:
    """The first position from ``at`` on that is not white space."""
    found = _SPACE.match(data, at)
    return found.end() if found else at


def _users_array(data: bytes, structure: _Structure) -> tuple[int, int] | None:
    """The positions of the ``[`` and ``]`` of the top-level ``users`` array, if any."""
    colons = structure.at[(structure.char == 0x3A) & (structure.depth == 1)]
    for colon in colons.tolist():
        # the member's name ends just before the colon: find '"users"' there
        head = data.rfind(b'"users"', 0, colon + 1)
        if head < 0 or data[head + 7 : colon].strip(b" \t\n\r"):
            continue
        if head > 0 and data[head - 1 : head] == b"\\":
            continue
        start = _after_space(data, colon + 1)
        if data[start : start + 1] != b"[":
            return None
        after = (structure.at > start) & (structure.char == 0x5D) & (structure.depth == 1)
        closing = structure.at[after]
        if not closing.size:
            raise StrictJsonError("is not valid JSON (the users array does not end)")
        return start, int(closing[0])
    return None


def _users(data: bytes, opened: int, closed: int, structure: _Structure) -> tuple[int, bytes]:
    """The user objects between ``opened`` and ``closed`` as lines, and their count."""
    within = (structure.at > opened) & (structure.at < closed)
    starts = structure.at[within & (structure.char == 0x7B) & (structure.depth == 3)]
    ends = structure.at[within & (structure.char == 0x7D) & (structure.depth == 2)]
    if starts.size != ends.size:
        raise StrictJsonError("is not valid JSON (a user object does not end)")
    lines: list[bytes] = []
    previous = opened + 1
    for index, (start, end) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        gap = data[previous:start]
        if index == 0 and gap.strip(b" \t\n\r"):
            raise StrictJsonError(f"users[{index}] is not a JSON object")
        if index > 0 and not _BETWEEN.fullmatch(gap):
            raise StrictJsonError(f"users[{index}] is not a JSON object")
        line = data[start : end + 1]
        if b"\n" in line or b"\r" in line:  # white space between tokens (a string holds none)
            line = line.replace(b"\r", b" ").replace(b"\n", b" ")
        lines.append(line)
        previous = end + 1
    if data[previous:closed].strip(b" \t\n\r"):
        raise StrictJsonError(f"users[{len(lines)}] is not a JSON object")
    body = b"\n".join(lines)
    return len(lines), body + b"\n" if lines else b""
