"""Blocks of NDJSON cohort user records -> Arrow tables of an :class:`ExportSchema`, by one rule.

The rule, per value of a column (absent keys and ``null`` give null):

- ``string`` columns take strings; a number becomes its JSON text, ``true``/``false`` theirs.
- ``number`` (float64) columns take JSON numbers, rounded to the nearest double; a value of
  magnitude 2**53 or more (or beyond the double range) is counted in :attr:`inexact_values`.
  Exact ``decimal`` columns take numbers (also written as strings) with at most the
  column's scale of decimals.
- ``boolean`` columns take ``true``/``false``; ``datetime`` columns the spec's three texts,
  which must be real calendar dates, read in the project's timezone; ``array<string>``
  columns lists of strings and nulls.
- The masked marker ``(已脱敏)`` in a column that is not a string becomes null and is counted
  in :attr:`masked_values`.
- Anything else (a string in a number column, invalid UTF-8, an impossible date, a value that
  does not fit) is refused with :class:`ExportDataError` naming the column and the 1-based row
  of the export. A line that is not one JSON object (or repeats a key) is refused with
  :class:`MalformedStreamError`.

Arrow's C++ parser decodes whole blocks (the fast path). It accepts exactly the values the
rule takes as they are, so a block it refuses holds a marker or an odd value. It also reads
two objects on one line as two rows, so its table is taken only when it has one row per line
of the block; otherwise the block's lines are taken apart (blank ones dropped) and a line of
two objects is refused by the line rule. Markers are common (one row in a thousand), so a
refused block is first given to Arrow again with each ``"<typed column>": "(已脱敏)"``
written as ``"<typed column>": null`` (a byte replacement, counted). That is exact when
every ``{`` of the block opens one of its records and the key's quote follows ``{``, ``,``
or white space, which is checked: the key can then only be a record's own. Otherwise each
line Arrow refuses is decoded in Python by the same rule and its row put in place of an
empty one in Arrow's table.
Vectorised steps (datetime texts, markers in them, decimal range, counting) run on whole row
groups (:meth:`BlockDecoder.complete`), value by value, so a value's outcome never depends on
its neighbours or on where blocks or groups were cut.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
import struct
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from airflow_provider_analytics.core import strict_json
from airflow_provider_analytics.core.errors import AnalyticsError
from airflow_provider_analytics.core.ndjson import MalformedStreamError, describe_unfinished
from airflow_provider_analytics.tabular.export_schema import (
    MASKED_MARKER,
    ExportColumn,
    ExportSchema,
)

if TYPE_CHECKING:
    from collections.abc import Callable

INEXACT_MAGNITUDE: Final = float(2**53)
"""From here on a double no longer holds every integer: such values are counted."""


# Arrow constants of the hot path are built from their buffers: converting a Python value
# (``pa.scalar``, ``pa.array`` or a bare constant given to a compute function) makes pyarrow
# import pandas, ~40 MiB of a worker's memory that an export does not need.


def _numbers(arrow_type: pa.DataType, code: str, *values: float) -> pa.Array:
    """``values`` as an Arrow array of ``arrow_type`` (``code``: its ``struct`` format)."""
    data = struct.pack(f"<{len(values)}{code}", *values)
    return pa.Array.from_buffers(arrow_type, len(values), [None, pa.py_buffer(data)])


def _text(text: str) -> pa.Scalar:
    data = text.encode()
    offsets = pa.py_buffer(struct.pack("<ii", 0, len(data)))
    return pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(data)])[0]


_INEXACT_MAGNITUDE: Final = _numbers(pa.float64(), "d", INEXACT_MAGNITUDE)[0]
_MASKED_TEXT: Final = _text(MASKED_MARKER)
_NULL_TEXT: Final = pa.nulls(1, pa.string())[0]
_DATETIME_TEXT: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}( ([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,3})?)?", re.ASCII
)
"""The spec's three datetime texts (names the reason when Arrow refused a column's texts)."""
_DATETIME_LENGTHS: Final = _numbers(pa.int32(), "i", 10, 19, 21, 22, 23)
_DECIMAL_TEXT: Final = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
"""Exact decimal columns also take numbers written as strings, as Arrow's parser does."""
_LONG_DIGITS: Final = re.compile(rb"\d{60}")
"""Arrow's decimal parser wraps around beyond ~76 digits; such blocks take the Python path."""
_SMALLEST_RUN: Final = 16
_MOST_REFUSED: Final = 8
"""Lines of one run given to the Python rule one by one before the run is halved instead."""
_REFUSED_ROW: Final = re.compile(r" in row (\d+)\b")
_MARKER_MEMORY: Final = 16
"""After a block with typed markers, the next this many are scanned for them before Arrow
parses: a scan costs under a tenth of a parse, a refused parse about half of one."""
_NEWLINE: Final = ord("\n")
_BRACE: Final = ord("{")


class ParsedBlock(NamedTuple):
    """What :meth:`BlockDecoder.parse` found, for :meth:`BlockDecoder.finish`."""

    parsed: pa.Table | int | None
    """Arrow's table, or the 0-based row it refused (None when it names none)."""
    masked: int = 0
    """Markers written as null before Arrow parsed the block."""


class ExportDataError(AnalyticsError, ValueError):
    """A value in the export does not fit its column (and is not the masked marker)."""


class _Number(str):
    """A JSON number kept as its text, so each column can read it by its own rule."""

    __slots__ = ()


_DECODER: Final = strict_json.decoder(parse_int=_Number, parse_float=_Number)


def _read_type(arrow_type: pa.DataType) -> pa.DataType:
    """What the parser produces for a column: datetime texts are parsed afterwards, and
    decimals are read wide and narrowed with an overflow check."""
    if pa.types.is_timestamp(arrow_type):
        return pa.string()
    if pa.types.is_decimal(arrow_type):
        return pa.decimal256(76, arrow_type.scale)
    return arrow_type


def _shown(value: Any) -> str:
    text = repr(str(value) if isinstance(value, _Number) else value)
    return text if len(text) <= 60 else text[:57] + "..."


class BlockDecoder:
    """Decode blocks of NDJSON cohort user records (whole lines) into tables, in stream order.

    :param schema: the export's columns.
    """

    def __init__(self, schema: ExportSchema) -> None:
        self.schema = schema
        self.rows = 0
        """Rows finished so far (the 0-based row of the export the next block starts at)."""
        self.inexact_values: dict[str, int] = {}
        """Per float column: values of magnitude 2**53 or more (a double may have rounded)."""
        # markers are counted by finish (in typed columns) and by complete (in datetime texts),
        # which may run on two threads: each keeps its own count
        self._masked_in_lines = 0
        self._masked_in_columns = 0
        self.slow_lines = 0
        """Lines decoded by the Python rule (markers in typed columns, odd values)."""
        self._arrow_schema = schema.arrow_schema
        self._read_schema = pa.schema(
            [pa.field(c.name, _read_type(c.arrow_type)) for c in schema.columns]
        )
        self._parse_options = pa_json.ParseOptions(
            explicit_schema=self._read_schema, unexpected_field_behavior="ignore"
        )
        self._has_decimals = any(pa.types.is_decimal(c.arrow_type) for c in schema.columns)
        self._converters = [_converter(c.arrow_type) for c in schema.columns]
        self._text_columns = [i for i, f in enumerate(self._read_schema) if _holds_text(f.type)]
        self._typed_markers = _TypedMarkers(self._read_schema)
        self._blocks_since_markers = _MARKER_MEMORY  # blocks since one held typed markers

    # the fast path

    def _arrow(self, data: bytes, lines: int | None = None) -> pa.Table | int | None:
        """Arrow's parser on whole lines: the table, or where it refused them (the 0-based
        row it names, or None)."""
        options = pa_json.ReadOptions(use_threads=False, block_size=max(len(data), 1 << 20))
        try:
            table = pa_json.read_json(
                pa.BufferReader(data), read_options=options, parse_options=self._parse_options
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as error:
            refused = _REFUSED_ROW.search(str(error))
            return int(refused.group(1)) if refused else None
        if lines is not None and table.num_rows != lines:
            return None
        try:  # the parser copies string bytes as they are: check they are UTF-8
            for index in self._text_columns:
                table.column(index).validate(full=True)
        except pa.ArrowInvalid:
            return None
        return table

    @property
    def masked_values(self) -> int:
        """Masked markers in typed columns, written as null."""
        return self._masked_in_lines + self._masked_in_columns

    @property
    def read_schema(self) -> pa.Schema:
        """The tables :meth:`finish` returns: datetimes as their texts, decimals read wide."""
        return self._read_schema

    def parse(self, block: bytes) -> ParsedBlock:
        """Arrow's parser on the whole block; hand the result to :meth:`finish`.

        Changes no state, so blocks may be parsed on several threads; hand the results to
        :meth:`finish` in stream order. It reads one hint :meth:`finish` leaves (a recent block
        held typed markers: try nulling them first), which only saves time: Arrow refuses
        every typed marker, so either order gives the same table.
        """
        if self._has_decimals and _LONG_DIGITS.search(block):
            return ParsedBlock(None)
        # Arrow reads two objects on one line as two rows: its table is taken only when it
        # has one row a line (else the line rule refuses the line, or skips blank ones)
        lines = _byte_count(block, _NEWLINE)
        scan_first = self._blocks_since_markers < _MARKER_MEMORY  # spare Arrow a refusal
        if scan_first and (nulled := self._without_typed_markers(block, lines)):
            return nulled
        parsed = self._arrow(block, lines)
        if isinstance(parsed, pa.Table):
            return ParsedBlock(parsed)
        nulled = None if scan_first else self._without_typed_markers(block, lines)
        return nulled or ParsedBlock(parsed)

    def _without_typed_markers(self, block: bytes, lines: int) -> ParsedBlock | None:
        """Arrow's table of ``block`` (of ``lines`` lines) with its typed markers as null, and
        their count; None when there are none or the replacement is not certainly exact."""
        nulled, masked = self._typed_markers.null(block)
        if masked:
            table = self._arrow(nulled, lines)
            if isinstance(table, pa.Table) and _byte_count(nulled, _BRACE) == table.num_rows:
                return ParsedBlock(table, masked)
        return None

    def finish(self, block: bytes, parsed_block: ParsedBlock) -> pa.Table:
        """A block's table of :attr:`read_schema`, in stream order: decodes what Arrow refused;
        counts rows and the markers in typed columns. Give the tables, one by one or joined,
        to :meth:`complete`."""
        parsed, masked = parsed_block
        self._masked_in_lines += masked
        self._blocks_since_markers = 0 if masked else self._blocks_since_markers + 1
        if not isinstance(parsed, pa.Table):
            lines = [line for line in block.split(b"\n") if line.strip()]
            if self._has_decimals and _LONG_DIGITS.search(block):
                parsed, masked = self._python(lines, 0)
            else:
                parsed, masked = self._runs(lines, 0, parsed)
            self._masked_in_lines += masked
        self.rows += parsed.num_rows
        return parsed

    def complete(self, table: pa.Table, first_row: int) -> pa.Table:
        """The export's table from finished ones (joined or not): datetime texts read in the
        project's timezone, decimals narrowed, markers in datetimes and inexact values counted.

        Its fixed cost is paid once per call, so a row group is best given whole. May run on
        another thread than :meth:`finish`, one call at a time.

        :param table: rows of :attr:`read_schema`, as :meth:`finish` returned them.
        :param first_row: the 0-based row of the export the table starts at (for refusals).
        :raises ExportDataError: a value does not fit its column, naming it and its row.
        """
        columns = []
        for column, values in zip(self.schema.columns, table.columns, strict=True):
            if pa.types.is_timestamp(column.arrow_type):
                values = self._timestamps(column, values, first_row)
            elif pa.types.is_decimal(column.arrow_type):
                values = self._narrow_decimals(column, values, first_row)
            elif pa.types.is_floating(column.arrow_type):
                self._count_inexact(column, values)
            columns.append(values)
        return pa.Table.from_arrays(columns, schema=self._arrow_schema)

    def decode(self, block: bytes) -> pa.Table:
        """Decode one block of whole lines (as :func:`iter_line_blocks` cuts them)."""
        first_row = self.rows
        return self.complete(self.finish(block, self.parse(block)), first_row)

    def _runs(
        self, lines: list[bytes], start: int, refused: int | None = -1
    ) -> tuple[pa.Table, int]:
        """Decode ``lines`` (row ``start`` of the block onward) when Arrow refused them.

        Arrow names the first row it refuses and stops there, cheaply. That line is decoded
        by the Python rule and replaced by ``{}`` for Arrow, until Arrow takes the rest; the
        Python rows then replace the empty ones. Where Arrow names no row, names one again
        (its rows are objects: after a line of two they are not the lines') or refuses many,
        the lines are halved until they are few enough for the Python rule.

        :param refused: what Arrow said of all ``lines`` already (-1: not tried yet).
        :return: the table and the masked values its Python rows held.
        """
        if len(lines) <= _SMALLEST_RUN:
            return self._python(lines, start)
        for_arrow = list(lines)
        own: dict[int, tuple[pa.Table, int]] = {}  # rows decoded by the Python rule
        parsed = self._arrow(b"\n".join(lines) + b"\n", len(lines)) if refused == -1 else refused
        while not isinstance(parsed, pa.Table):
            # a row named twice: Arrow counts objects, and a line of two shifts its rows
            if (
                parsed is None
                or not 0 <= parsed < len(lines)
                or parsed in own
                or len(own) >= _MOST_REFUSED
            ):
                middle = len(lines) // 2
                first, first_masked = self._runs(lines[:middle], start)
                second, second_masked = self._runs(lines[middle:], start + middle)
                return pa.concat_tables([first, second]), first_masked + second_masked
            own[parsed] = self._python(lines[parsed : parsed + 1], start + parsed)
            for_arrow[parsed] = b"{}"
            parsed = self._arrow(b"\n".join(for_arrow) + b"\n", len(lines))
        if not own:
            return parsed, 0
        pieces, done = [], 0
        for row in sorted(own):
            pieces += [parsed.slice(done, row - done), own[row][0]]
            done = row + 1
        pieces.append(parsed.slice(done))
        return pa.concat_tables(pieces), sum(masked for _, masked in own.values())

    # the Python rule, line by line

    def _python(self, lines: list[bytes], start: int) -> tuple[pa.Table, int]:
        """The Python rule for ``lines``; returns the table and the markers it turned to null."""
        self.slow_lines += len(lines)
        masked = 0
        records = [self._record(line, start + i) for i, line in enumerate(lines)]
        arrays = []
        for column, convert, field in zip(
            self.schema.columns, self._converters, self._read_schema, strict=True
        ):
            values: list[Any] = []
            for i, record in enumerate(records):
                value = record.get(column.name)
                if value is None:
                    values.append(None)
                elif (
                    value == MASKED_MARKER
                    and not isinstance(value, _Number)
                    and not pa.types.is_string(field.type)
                ):
                    masked += 1
                    values.append(None)
                elif _has_surrogates(value):
                    raise self._refused(column, self.rows + start + i, value, "not valid UTF-8")
                else:
                    try:
                        values.append(convert(value))
                    except (TypeError, ValueError, ArithmeticError) as error:
                        raise self._refused(
                            column, self.rows + start + i, value, str(error)
                        ) from None
            try:
                arrays.append(pa.array(values, type=field.type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as error:
                index = _first_unfit(values, field.type)
                row = self.rows + start + index
                raise self._refused(column, row, values[index], str(error)) from None
        return pa.Table.from_arrays(arrays, schema=self._read_schema), masked

    def _record(self, line: bytes, row: int) -> dict[str, Any]:
        where = f"line {self.rows + row + 1} of the export"
        text = line.decode("utf-8", "surrogateescape")  # bad bytes are refused per column
        try:
            record = _DECODER.decode(text)
        except ValueError as error:
            if line.lstrip()[:1] in (b"<", b"["):
                raise MalformedStreamError(describe_unfinished(line, self.rows + row)) from None
            raise MalformedStreamError(f"{where} is not valid JSON ({error})") from None
        if not isinstance(record, dict):
            raise MalformedStreamError(f"{where} is not a JSON object")
        return record

    def _refused(self, column: ExportColumn, row: int, value: Any, why: str) -> ExportDataError:
        """``row``: the 0-based row of the export."""
        return ExportDataError(
            f"column {column.name!r} (row {row + 1} of the export): expected "
            f"{column.arrow_type}, got {_shown(value)} ({why}); nothing was written. If the "
            "plan's data type is wrong, set the column's type with schema_overrides"
        )

    # vectorised steps on whole row groups (chunked columns, no copies)

    def _timestamps(
        self, column: ExportColumn, texts: pa.ChunkedArray, first_row: int
    ) -> pa.ChunkedArray:
        marked = pc.equal(texts, _MASKED_TEXT)
        masked = pc.sum(marked).as_py() or 0
        if masked:
            self._masked_in_columns += masked
            texts = pc.if_else(marked, _NULL_TEXT, texts)
        unit = column.arrow_type.unit
        # the spec's three texts are 10, 19, or 21 to 23 bytes long; Arrow's cast then takes
        # them and refuses all else of those lengths except a "T" separator (checked against
        # the pattern on mutated texts); cheaper than a regex match per value
        valid = pc.and_(
            pc.is_in(pc.binary_length(texts), value_set=_DATETIME_LENGTHS),
            pc.invert(pc.match_substring(texts, "T")),
        )
        naive = None
        if pc.all(valid).as_py() is not False:
            try:
                naive = pc.cast(texts, pa.timestamp(unit))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                naive = None
        if naive is None:
            index, text, why = _first_bad_datetime(texts.to_pylist())
            raise self._refused(column, first_row + index, text, why)
        local = pc.assume_timezone(
            naive, self.schema.timezone, ambiguous="earliest", nonexistent="earliest"
        )
        return pc.cast(local, column.arrow_type)

    def _narrow_decimals(
        self, column: ExportColumn, values: pa.ChunkedArray, first_row: int
    ) -> pa.ChunkedArray:
        try:
            return pc.cast(values, column.arrow_type)
        except pa.ArrowInvalid as error:
            index = _first_unfit(values.to_pylist(), column.arrow_type)
            value = values[index].as_py()
            raise self._refused(column, first_row + index, value, str(error)) from None

    def _count_inexact(self, column: ExportColumn, values: pa.ChunkedArray) -> None:
        extremes = pc.min_max(values).as_py()  # one pass; most columns hold no such value
        low, high = extremes["min"], extremes["max"]
        if low is None or -INEXACT_MAGNITUDE < low <= high < INEXACT_MAGNITUDE:
            return
        beyond = pc.sum(pc.greater_equal(pc.abs(values), _INEXACT_MAGNITUDE)).as_py() or 0
        if beyond:
            self.inexact_values[column.name] = self.inexact_values.get(column.name, 0) + beyond


def _byte_count(block: bytes, byte: int) -> int:
    """How often ``byte`` occurs in ``block``: numpy counts a 1 MiB block in ~0.17 ms,
    ``bytes.count`` in ~0.45 ms (a whole block's decode takes ~11 ms)."""
    return int(np.count_nonzero(np.frombuffer(block, dtype=np.uint8) == byte))


class _TypedMarkers:
    """Writes ``"<column>": "(已脱敏)"`` as ``"<column>": null`` for the columns Arrow does not
    read as text, in the two spacings a serializer writes.

    A match counts only where the key's opening quote follows ``{``, ``,`` or white space, so
    it cannot be the end of a longer key holding an escaped quote; a block with any other
    match is left alone (the line rule then decodes it).

    :param read_schema: the columns as Arrow reads them.
    """

    def __init__(self, read_schema: pa.Schema) -> None:
        self.marker = json.dumps(MASKED_MARKER, ensure_ascii=False).encode()
        keys = [json.dumps(f.name, ensure_ascii=False).encode() for f in read_schema]
        self.prefixes = tuple(
            key + colon
            for key, field in zip(keys, read_schema, strict=True)
            if not _is_text(field.type)  # a text column keeps the marker as its text
            for colon in (b": ", b":")
        )
        self._tail = min((len(p) for p in self.prefixes), default=0)
        self._tails = np.array(sorted({p[-self._tail :] for p in self.prefixes}), dtype=bytes)
        self._anchor = self.marker.index(b"(")  # its rarest byte in JSON text

    def null(self, block: bytes) -> tuple[bytes, int]:
        """``block`` with its typed markers written as null, and how many there were (0 when
        none, or when a match is not certainly a record's key: ``block`` is then returned).

        Text columns often hold the marker in every row, so the markers are found with numpy
        and only those whose last bytes before could end a typed key are looked at in Python.
        """
        if not self.prefixes:
            return block, 0
        data = np.frombuffer(block, dtype=np.uint8)
        at = self._markers(data)
        tail = self._tail
        at = at[at >= tail]
        if not at.size:
            return block, 0
        before = data[at[:, None] + np.arange(-tail, 0)]
        at = at[np.isin(before.view(f"S{tail}").ravel(), self._tails)]
        pieces, done, size = [], 0, len(self.marker)
        for start in at.tolist():
            matched = [len(p) for p in self.prefixes if block.endswith(p, 0, start)]
            if not matched:
                continue
            key = start - max(matched)
            if key < 1 or block[key - 1] not in b"{, \t\r\n":
                return block, 0
            pieces += [block[done:start], b"null"]
            done = start + size
        if not pieces:
            return block, 0
        pieces.append(block[done:])
        return b"".join(pieces), len(pieces) // 2

    def _markers(self, data: np.ndarray[Any, np.dtype[np.uint8]]) -> np.ndarray[Any, Any]:
        """Where the marker starts in ``data``, left to right without overlaps (as
        ``bytes.find`` steps through a text)."""
        marker, anchor = self.marker, self._anchor
        at = np.flatnonzero(data == marker[anchor]) - anchor
        at = at[(at >= 0) & (at <= len(data) - len(marker))]
        for offset, byte in enumerate(marker):
            if offset != anchor and at.size:
                at = at[data[at + offset] == byte]
        if at.size > 1 and np.any(np.diff(at) < len(marker)):  # overlapping: keep the first
            kept: list[int] = []
            for start in at.tolist():
                if not kept or start >= kept[-1] + len(marker):
                    kept.append(start)
            at = np.array(kept, dtype=np.intp)
        return at


def _is_text(arrow_type: pa.DataType) -> bool:
    return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)


def _holds_text(arrow_type: pa.DataType) -> bool:
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return _holds_text(arrow_type.value_type)
    return _is_text(arrow_type)


def _has_surrogates(value: Any) -> bool:
    """Whether a decoded value holds bytes that were not UTF-8 (or an unpaired surrogate)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, list):
        return any(_has_surrogates(item) for item in value)
    if isinstance(value, dict):
        return any(_has_surrogates(k) or _has_surrogates(v) for k, v in value.items())
    return False


def _first_unfit(values: list[Any], arrow_type: pa.DataType) -> int:
    """The index of the first value that ``arrow_type`` refuses."""
    for index, value in enumerate(values):
        try:
            pa.array([value], type=arrow_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return index
    return 0


def _first_bad_datetime(texts: list[Any]) -> tuple[int, Any, str]:
    for index, text in enumerate(texts):
        if text is None:
            continue
        if not _DATETIME_TEXT.fullmatch(text):
            return index, text, "not yyyy-MM-dd HH:mm:ss[.SSS] or yyyy-MM-dd"
        try:
            dt.datetime.fromisoformat(text)
        except ValueError as error:
            return index, text, f"not a calendar date: {error}"
    return 0, None, "Arrow refused the column's datetime texts"


# per-kind conversions of the Python rule (JSON numbers arrive as _Number texts)


def _to_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):  # _Number included: its JSON text
        return str(value)
    raise TypeError(f"a JSON {_kind(value)} is not a string")


def _to_float(value: Any) -> float:
    if isinstance(value, _Number):
        return float(value)
    raise TypeError(f"a JSON {_kind(value)} is not a number")


def _to_integer(value: Any) -> int:
    if isinstance(value, _Number) and re.fullmatch(r"-?\d+", value):
        return int(value)
    raise TypeError(f"a JSON {_kind(value)} is not an integer")


def _decimal_converter(scale: int) -> Callable[[Any], decimal.Decimal]:
    def to_decimal(value: Any) -> decimal.Decimal:
        if not isinstance(value, str) or not _DECIMAL_TEXT.fullmatch(value):
            raise TypeError(f"a JSON {_kind(value)} is not a number")
        number = decimal.Decimal(value)
        exponent = number.as_tuple().exponent
        if isinstance(exponent, int) and -exponent > scale:
            raise ValueError(f"more than {scale} decimals")
        return number

    return to_decimal


def _to_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise TypeError(f"a JSON {_kind(value)} is not true or false")


def _to_text(value: Any) -> str:
    if isinstance(value, str) and not isinstance(value, _Number):
        return value
    raise TypeError(f"a JSON {_kind(value)} is not a datetime text")


def _to_string_list(value: Any) -> list[str | None]:
    if isinstance(value, list) and all(
        item is None or (isinstance(item, str) and not isinstance(item, _Number)) for item in value
    ):
        return value
    raise TypeError("not a list of strings and nulls")


def _unsupported(value: Any) -> Any:
    raise TypeError("this column type has no line-by-line rule")


def _kind(value: Any) -> str:
    if isinstance(value, _Number):
        return "number"
    if isinstance(value, bool):
        return "boolean"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), type(value).__name__)


def _converter(arrow_type: pa.DataType) -> Callable[[Any], Any]:
    """The Python rule for one column type (the values Arrow's parser takes, and no others)."""
    if pa.types.is_timestamp(arrow_type):
        return _to_text
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return _to_string
    if pa.types.is_floating(arrow_type):
        return _to_float
    if pa.types.is_integer(arrow_type):
        return _to_integer
    if pa.types.is_decimal(arrow_type):
        return _decimal_converter(arrow_type.scale)
    if pa.types.is_boolean(arrow_type):
        return _to_boolean
    if pa.types.is_list(arrow_type) and pa.types.is_string(arrow_type.value_type):
        return _to_string_list
    return _unsupported
