"""A page of cohort users as the export's NDJSON lines, without building the users.

A page of the paged endpoint (spec 4.12) is one JSON object, ``{count, page, size, users}``,
whose ``users`` array holds the same records the streamed export sends one per line. To read a
cohort in pages by the stream's one decoding rule, the page is split here, on its bytes:

- every member but ``users`` is decoded by the strict rules (the page with its ``users`` array
  emptied), and then checked by the declared answer;
- each user object is found by its braces outside strings (quotes not escaped by a backslash
  open and close strings) and handed on as the bytes that were sent, one per line, to the
  decoder the stream uses (:class:`~airflow_provider_analytics.tabular.arrow.BlockDecoder`),
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


def _structure(data: bytes) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Each byte's nesting depth after it (outside strings), and which bytes lie outside
    strings. Small integer types keep the arrays at a byte or two per byte of the page."""
    raw = np.frombuffer(data, dtype=np.uint8)
    quote = raw == 0x22
    if b'\\"' in data:  # a quote after an odd run of backslashes is text, not a quote
        quotes = np.flatnonzero(quote)
        quotes = quotes[quotes > 0]
        for position in quotes[raw[quotes - 1] == 0x5C].tolist():
            run = position - 1
            while run >= 0 and data[run] == 0x5C:
                run -= 1
            if (position - 1 - run) % 2:
                quote[position] = False
    # the parity of the quotes up to a byte tells a string's inside (its quotes included)
    inside = (np.cumsum(quote, dtype=np.uint8) & 1).astype(bool) | quote
    step = (raw == 0x7B).view(np.int8) + (raw == 0x5B).view(np.int8)
    step -= (raw == 0x7D).view(np.int8) + (raw == 0x5D).view(np.int8)
    step[inside] = 0
    return np.cumsum(step, dtype=np.int16), ~inside


def split_page(data: bytes) -> PageParts:
    """Split a page's body; the users' values are left to the export's decoder.

    :raises StrictJsonError: the page without its users is not a strict JSON object (not UTF-8,
        a repeated member, ``NaN``, bad syntax), or ``users`` holds an item that is not an
        object. The users' bytes (UTF-8 included) are the export decoder's to check.
    """
    depth, outside = _structure(data)
    found = _users_array(data, depth, outside)
    if found is None:
        envelope = strict_json.loads(data)
        if not isinstance(envelope, dict):
            raise StrictJsonError("is not a JSON object")
        return PageParts(envelope, None, b"")
    opened, closed = found
    envelope = strict_json.loads(data[: opened + 1] + data[closed:])
    if not isinstance(envelope, dict) or envelope.pop(USERS, None) != []:
        raise StrictJsonError("is not a JSON object with one users array")
    rows, lines = _users(data, opened, closed, depth, outside)
    return PageParts(envelope, rows, lines)


def _users_array(
    data: bytes, depth: np.ndarray[Any, Any], outside: np.ndarray[Any, Any]
) -> tuple[int, int] | None:
    """The positions of the ``[`` and ``]`` of the top-level ``users`` array, if any."""
    colons = np.flatnonzero(outside & (depth == 1) & (np.frombuffer(data, np.uint8) == 0x3A))
    for colon in colons.tolist():
        # the member's name ends just before the colon: find '"users"' there
        head = data.rfind(b'"users"', 0, colon + 1)
        if head < 0 or data[head + 7 : colon].strip(b" \t\n\r"):
            continue
        if head > 0 and data[head - 1 : head] == b"\\":
            continue
        start = colon + 1 + len(_SPACE.match(data, colon + 1).group())  # type: ignore[union-attr]
        if data[start : start + 1] != b"[":
            return None
        closing = np.flatnonzero(
            (depth[start:] == 1) & outside[start:] & (np.frombuffer(data, np.uint8)[start:] == 0x5D)
        )
        if not closing.size:
            raise StrictJsonError("is not valid JSON (the users array does not end)")
        return start, start + int(closing[0])
    return None


def _users(
    data: bytes,
    opened: int,
    closed: int,
    depth: np.ndarray[Any, Any],
    outside: np.ndarray[Any, Any],
) -> tuple[int, bytes]:
    """The user objects between ``opened`` and ``closed`` as lines, and their count."""
    raw = np.frombuffer(data, dtype=np.uint8)
    span = slice(opened + 1, closed)
    level = depth[span]
    out = outside[span]
    chars = raw[span]
    starts = np.flatnonzero(out & (chars == 0x7B) & (level == 3)) + opened + 1
    ends = np.flatnonzero(out & (chars == 0x7D) & (level == 2)) + opened + 1
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
