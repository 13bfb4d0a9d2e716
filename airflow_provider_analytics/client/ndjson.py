"""Split a newline-delimited JSON byte stream into complete lines.

Splitting on ``b"\\n"`` is safe for UTF-8: no byte of a multi-byte character equals
``0x0A``, so a character cut between two chunks is simply joined again with the rest
of its line. Work is done per chunk with ``bytes.split``, never per byte.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from airflow_provider_analytics.client.errors import AnalyticsStreamError

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def iter_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Yield the complete lines of a stream given as byte chunks of any size.

    Line ends (``\\n`` or ``\\r\\n``) are removed and empty lines skipped. A last line
    without a newline is yielded only when it is a complete JSON value; otherwise the
    stream was cut inside a line.

    :param chunks: the body, cut at arbitrary byte positions.
    :raises AnalyticsStreamError: the stream ended inside a line.
    """
    partial: list[bytes] = []
    complete = 0
    for chunk in chunks:
        if b"\n" not in chunk:
            if chunk:
                partial.append(chunk)
            continue
        pieces = chunk.split(b"\n")
        if partial:
            partial.append(pieces[0])
            pieces[0] = b"".join(partial)
            partial.clear()
        tail = pieces.pop()
        if tail:
            partial.append(tail)
        for line in pieces:
            if line.endswith(b"\r"):
                line = line[:-1]
            if line:
                complete += 1
                yield line
    last = b"".join(partial).rstrip(b"\r")
    if not last.strip():
        return
    if not _is_json(last):
        raise AnalyticsStreamError(
            f"stream ended inside a line after {complete} complete rows "
            f"({len(last)} bytes of an unfinished line)"
        )
    yield last
