"""The one line splitter for newline-delimited JSON streams.

Splitting on ``b"\\n"`` is safe for UTF-8 (no byte of a multi-byte character is ``0x0A``). Work is
per chunk, never per byte in Python; a block's lines are counted by numpy (``bytes.count`` took
a third of a 1M-user export's reading and splitting). Blocks of whole lines feed the Arrow
decoder, single lines the record reader; both refuse a line longer than ``max_line_bytes``
before holding more of it, so a hostile stream cannot make memory grow without bound.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from airflow_provider_analytics.core import strict_json
from airflow_provider_analytics.core.errors import AnalyticsStreamError

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

_NEWLINE: Final = ord("\n")
MAX_LINE_BYTES: Final = 16 << 20  # a cohort user record is a few KiB


class MalformedStreamError(AnalyticsStreamError, ValueError):
    """The body is not newline-delimited JSON objects: a cut, corrupted or foreign stream."""


def describe_unfinished(tail: bytes, complete_rows: int) -> str:
    """What an unterminated ``tail`` after ``complete_rows`` lines is, for the message (a JSON
    array or an HTML page named as such: waiting longer would not help)."""
    text = tail.lstrip()
    if text[:1] == b"[":
        return (
            "the body is a JSON array, not one JSON object per line (NDJSON); check that "
            "the base URL points at the platform's export API"
        )
    if text[:1] == b"<":
        return (
            "the body is not JSON but looks like an HTML page (probably a proxy or login "
            "page); check the base URL and the credentials"
        )
    return (
        f"the stream ended inside a line after {complete_rows} complete rows "
        f"({len(tail)} bytes of an unfinished line)"
    )


def iter_counted_blocks(
    chunks: Iterable[bytes],
    block_bytes: int = 1 << 20,
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[tuple[bytes, int]]:
    """Byte chunks cut anywhere, grouped into blocks of whole lines of about ``block_bytes``,
    each ending with ``b"\\n"`` (blank lines may remain) and given with its count of
    ``b"\\n"``, so the decoder need not pass over every byte again; a final piece without a
    newline only if it is a complete JSON object. :class:`MalformedStreamError` names a cut or
    long line."""
    pending: list[bytes | memoryview] = []
    pending_bytes = 0  # bytes held in ``pending``
    line_bytes = 0  # bytes of the unfinished line at the end of ``pending``
    rows = 0  # newline-terminated lines yielded so far (blank ones included)
    for chunk in chunks:
        if not chunk:
            continue
        cut = chunk.rfind(b"\n") + 1
        # the unfinished last line may not outgrow the bound (complete ones: _counted_lines)
        line_bytes = line_bytes + len(chunk) if cut == 0 else len(chunk) - cut
        if line_bytes > max_line_bytes:
            held = b"".join(pending) + chunk
            raise _too_long(rows + held.count(b"\n"), max_line_bytes)
        pending.append(chunk)
        pending_bytes += len(chunk)
        if cut == 0 or pending_bytes < block_bytes:
            continue
        last = pending.pop()
        pending.append(memoryview(last)[:cut])  # joined without a copy of its own
        block = b"".join(pending)
        lines = _counted_lines(block, rows, max_line_bytes)
        rows += lines
        yield block, lines
        rest = last[cut:]
        pending, pending_bytes = ([rest], len(rest)) if rest else ([], 0)
    data = b"".join(pending)
    cut = data.rfind(b"\n") + 1
    if cut:
        block = data[:cut]
        lines = _counted_lines(block, rows, max_line_bytes)
        rows += lines
        yield block, lines
    tail = data[cut:]
    if tail.strip():
        try:
            record = strict_json.loads(tail)
        except strict_json.StrictJsonError:
            record = None
        if not isinstance(record, dict):
            raise MalformedStreamError(describe_unfinished(tail, rows))
        yield tail + b"\n", 1


def _counted_lines(block: bytes, rows_before: int, max_line_bytes: int) -> int:
    """The block's count of ``b"\\n"``; refuse a line longer than ``max_line_bytes`` (cheap
    when none is)."""
    # numpy loads when a stream is read, not when a DAG file imports the settings
    from airflow_provider_analytics.core.byte_scans import byte_count

    if len(block) > max_line_bytes:
        for row, line in enumerate(block.split(b"\n")):
            if len(line) > max_line_bytes:
                raise _too_long(rows_before + row, max_line_bytes)
    return byte_count(block, _NEWLINE)


def _too_long(rows_before: int, max_line_bytes: int) -> MalformedStreamError:
    return MalformedStreamError(
        f"line {rows_before + 1} of the export is longer than max_line_bytes "
        f"({max_line_bytes} bytes); raise max_line_bytes if such records are expected"
    )


def iter_lines(chunks: Iterable[bytes], *, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[bytes]:
    """The complete lines of byte chunks cut anywhere, line ends removed, blank lines skipped;
    cut, bounded and refused as :func:`iter_counted_blocks` does."""
    for block, _ in iter_counted_blocks(chunks, 1, max_line_bytes=max_line_bytes):
        for line in block.split(b"\n"):
            line = line.rstrip(b"\r")
            if line.strip():
                yield line
