"""Reading a streamed cohort export (spec 4.13) without holding the body in memory."""

from __future__ import annotations

import time
import warnings
import zlib
from typing import TYPE_CHECKING, Any

import requests
import urllib3.exceptions

from airflow_provider_analytics.core.cohort_records import OPERATION, RecordKeys, decode_line
from airflow_provider_analytics.core.errors import (
    AnalyticsError,
    AnalyticsStreamError,
    AnalyticsUsageError,
)
from airflow_provider_analytics.core.ndjson import (
    MAX_LINE_BYTES,
    MalformedStreamError,
    describe_unfinished,
    iter_lines,
)
from airflow_provider_analytics.core.redaction import remember

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from airflow_provider_analytics.core.progress import Progress

_IN_TRANSIT = (requests.RequestException, urllib3.exceptions.HTTPError, OSError, zlib.error)
"""What breaks a body on its way: the connection, or compressed bytes that do not inflate."""
_RERUN_HINT = (
    "run the export again; for large cohorts raise export_read_timeout and the timeout of "
    "any proxy in between, or export fewer users with limit"
)


class CohortExport:
    """The open body of a cohort export: one JSON object per line, read as it arrives, once,
    through one of :meth:`iter_bytes`, :meth:`iter_lines` or :meth:`iter_records`. Use it as a
    context manager so the connection is released however reading ends.

    :param response: the export's answer, opened with ``stream=True``.
    :param release: gives back the export's place among the calls in flight, once the body has
        ended or the export is closed.
    :param deadline: ``time.monotonic()`` value by which the whole body must have arrived.
    :param max_line_bytes: the longest line :meth:`iter_lines` accepts.
    :param progress: told of the rows and bytes as they arrive, and when the body ends.
    :param secrets: deprecated; each is remembered
        (:func:`~airflow_provider_analytics.core.redaction.remember`), so masked everywhere.
    """

    def __init__(
        self,
        response: requests.Response,
        *,
        release: Callable[[], None] | None = None,
        deadline: float | None = None,
        max_line_bytes: int = MAX_LINE_BYTES,
        progress: Progress | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        if secrets:
            warnings.warn(
                "CohortExport(secrets=...) is deprecated; mask a value in every message with "
                "airflow_provider_analytics.core.redaction.remember",
                DeprecationWarning,
                stacklevel=2,
            )
            remember(secrets)
        self._response = response
        self._release = release
        self._progress = progress
        self._counting_lines = False
        self._deadline = deadline
        self.max_line_bytes = max_line_bytes
        self._started = False
        self._closed = False
        self.bytes_read = 0
        """Body bytes received so far."""
        self.lines_read = 0
        """Complete lines handed out so far by :meth:`iter_lines` or :meth:`iter_records`."""
        self.unexpected_keys: dict[str, int] = {}
        """Per key the records held but :meth:`iter_records` was not given in ``keys``: how many
        records held it."""

    def __enter__(self) -> CohortExport:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"CohortExport(bytes_read={self.bytes_read}, lines_read={self.lines_read})"

    def close(self) -> None:
        """Release the connection; an unfinished body is discarded."""
        self._closed = True
        try:
            self._response.close()
        finally:
            self._give_back()
        if self._progress is not None:
            self._progress.close()

    def _give_back(self) -> None:  # the export's place among the calls in flight, once
        release, self._release = self._release, None
        if release is not None:
            release()

    def _broken(self, detail: str, *, hint: str = _RERUN_HINT) -> AnalyticsStreamError:
        return AnalyticsStreamError(f"{OPERATION}: {detail}; {hint}", operation=OPERATION)

    def _read_chunks(self, chunk_size: int) -> Iterator[bytes]:
        """The decoded body, one receive a chunk (an exact byte count when the stream breaks;
        a trickle still meets the deadline)."""
        raw = self._response.raw
        read1 = getattr(raw, "read1", None)
        encoding = self._response.headers.get("Content-Encoding", "").strip().lower()
        if read1 is None:  # a stand-in body without read1 (tests)
            yield from self._response.iter_content(chunk_size)
        elif encoding in ("gzip", "x-gzip"):
            yield from self._inflated(read1, chunk_size)
        else:
            while chunk := read1(chunk_size, decode_content=True):
                yield chunk
        self._give_back()  # the whole body is in: the platform serves this call no more

    def _inflated(self, read1: Callable[..., bytes], chunk_size: int) -> Iterator[bytes]:
        """A gzip body inflated at most ``chunk_size`` bytes at a time, refused unless its
        last member ends (cut at a flush point, it inflates cleanly but lacks the rest)."""
        inflate = zlib.decompressobj(31)
        while data := read1(chunk_size, decode_content=False):
            while data:
                if inflate.eof:  # another member follows
                    inflate = zlib.decompressobj(31)
                if chunk := inflate.decompress(data, chunk_size):
                    yield chunk
                data = inflate.unconsumed_tail or inflate.unused_data
        if rest := inflate.flush():
            yield rest
        if not inflate.eof:
            self.close()
            raise self._broken(
                f"the gzip stream ended before its end ({self.bytes_read} bytes had been "
                "inflated); the body was cut"
            )

    def iter_bytes(self, chunk_size: int = 1 << 20) -> Iterator[bytes]:
        """Yield the raw body in chunks of at most ``chunk_size`` bytes, as they arrive.

        Chunk boundaries are arbitrary (they may cut a line or a UTF-8 character).

        :param chunk_size: largest chunk to read at once.
        :raises AnalyticsStreamError: the stream broke before its end.
        """
        if self._started or self._closed:
            raise AnalyticsUsageError(
                "the export body was already read or closed; start a new export"
            )
        self._started = True
        content_type = self._response.headers.get("Content-Type", "").lower()
        if content_type.startswith(("text/html", "application/xhtml")):  # named before it is read
            self.close()
            raise MalformedStreamError(
                f"{OPERATION}: {describe_unfinished(b'<', 0)}", operation=OPERATION
            )
        try:
            for chunk in self._read_chunks(chunk_size):
                self.bytes_read += len(chunk)
                if self._progress is not None:
                    rows = self.lines_read if self._counting_lines else None
                    self._progress.update(rows, self.bytes_read)
                yield chunk
                if self._deadline is not None and time.monotonic() > self._deadline:
                    self.close()
                    raise self._broken(
                        f"the export did not finish within its deadline ({self.bytes_read} "
                        "bytes had arrived)",
                        hint="raise export_deadline if the cohort is this large, or export "
                        "fewer users with limit",
                    )
        except _IN_TRANSIT as exc:
            self.close()
            raise self._broken(
                f"the stream broke after {self.bytes_read} bytes "
                f"({type(exc).__name__}: {exc}); the connection was cut before the end"
            ) from None
        if self._progress is not None and not self._counting_lines:
            self._progress.finish(None, self.bytes_read)

    def _checked(self, keys: Iterable[str] | None) -> Iterator[tuple[bytes, dict[str, Any]]]:
        """Each line with its record, by the export's one rule
        (:mod:`~airflow_provider_analytics.core.cohort_records`); a fault names the export."""
        rule = RecordKeys(keys)
        self.unexpected_keys = rule.unexpected
        self._counting_lines = True
        try:
            for line in iter_lines(self.iter_bytes(), max_line_bytes=self.max_line_bytes):
                self.lines_read += 1
                record = decode_line(line, self.lines_read)
                rule.check(record, self.lines_read)
                yield line, record
        except AnalyticsError as exc:
            self.close()
            if exc.operation is not None:
                raise
            raise type(exc)(f"{OPERATION}: {exc}", operation=OPERATION) from None
        if self._progress is not None:
            self._progress.finish(self.lines_read, self.bytes_read)

    def iter_lines(self, *, keys: Iterable[str] | None = None) -> Iterator[bytes]:
        """Yield the body's complete lines (without line ends; empty lines skipped), each checked
        (and refused) as :meth:`iter_records` checks it.

        :param keys: as in :meth:`iter_records`.
        """
        for line, _ in self._checked(keys):
            yield line

    def iter_records(self, *, keys: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        """Yield each line decoded as a JSON object (cohort user record, spec 2.6).

        Large integers such as ``distinct_id`` stay exact Python ints. Lines are read by the
        rule every reader of the export applies
        (:mod:`~airflow_provider_analytics.core.cohort_records`): ``NaN``, a repeated key and
        invalid UTF-8 are refused naming the line, as is the platform's error object.

        :param keys: the record keys the export asked for (property ids, ``tag.<code>``); a
            record lacking one is refused naming its row and the key, and keys beyond them are
            counted in :attr:`unexpected_keys` (and logged once each). ``None``: the keys are
            not checked, and only a record shaped like the platform's error object (``code``,
            ``msg``, perhaps ``data``, nothing else) is refused.
        :raises AnalyticsStreamError: the stream broke, or ended inside a line.
        :raises MalformedStreamError: a line is not strict JSON or not a JSON object (the message
            names its line number).
        :raises ExportRecordError: a line lacks one of ``keys``, or is the platform's error object.
        """
        for _, record in self._checked(keys):
            yield record
