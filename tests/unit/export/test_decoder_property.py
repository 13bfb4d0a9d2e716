"""One decoding rule: the table depends only on the stream's bytes, never on how they are cut.

Hypothesis writes NDJSON with values of every plan type (the odd ones included: full-precision
doubles, ids beyond 2**53 and beyond int64, 31-digit numbers, ``NaN``, nulls inside lists,
masked markers in typed columns, numbers in string columns, impossible dates, a missing key, a
key not asked for), cuts it at arbitrary points into arbitrary blocks and row groups, and the
decoder's table must equal the one an independent reference builds with ``json.loads`` and the
rules the README documents (the number rule included: a ``number`` column is int64 when every
value is an integer token that fits, double otherwise, and an integer a double cannot hold
exactly in a double column is refused). Invalid streams must be refused by both, and the
decoder must name a cell, a key or a line the reference also finds at fault.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import pathlib
import re
import tempfile
import zoneinfo
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from airflow_provider_analytics.core.cohort_records import ExportRecordError
from airflow_provider_analytics.core.ndjson import MalformedStreamError, iter_counted_blocks
from airflow_provider_analytics.export.decoder import BlockDecoder, ExportDataError
from airflow_provider_analytics.export.schema import export_schema
from airflow_provider_analytics.output.parquet import parquet_stream

MARKER = "(已脱敏)"
TIMEZONE = "Asia/Shanghai"
PLAN = [
    {"id": "score", "dataType": "number"},
    {"id": "name", "dataType": "string"},
    {"id": "vip", "dataType": "boolean"},
    {"id": "seen", "dataType": "datetime"},
    {"id": "labels", "dataType": "array<string>"},
    {"id": "phone", "dataType": "string", "masking": 1},
    {"id": "user_id", "dataType": "number"},
]
COLUMNS = ["score", "name", "vip", "seen", "labels", "phone", "user_id", "tag.t_vip"]
KINDS = {
    "score": "number",
    "name": "string",
    "vip": "bool",
    "seen": "datetime",
    "labels": "list",
    "phone": "string",
    "user_id": "decimal",
    "tag.t_vip": "string",
}
SCHEMA = export_schema(COLUMNS, PLAN, timezone=TIMEZONE, overrides={"user_id": "decimal"})


class Invalid(Exception):
    """The reference refuses a cell."""


# ---- the reference: json.loads and the documented rules, nothing shared with the decoder

DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}( \d{2}:\d{2}:\d{2}(\.\d{1,3})?)?", re.ASCII)


def ref_datetime(text: str) -> dt.datetime:
    if not DATETIME.fullmatch(text):
        raise Invalid
    fmt = "%Y-%m-%d %H:%M:%S.%f" if "." in text else "%Y-%m-%d %H:%M:%S"
    try:
        naive = dt.datetime.strptime(text, fmt if " " in text else "%Y-%m-%d")
    except ValueError:
        raise Invalid from None
    naive = naive.replace(microsecond=naive.microsecond // 1000 * 1000)
    local = naive.replace(tzinfo=zoneinfo.ZoneInfo(TIMEZONE))
    return local.astimezone(dt.UTC)


def ref_value(kind: str, value: Any, counts: dict[str, Any]) -> Any:
    """One cell by the documented rule; numbers arrive as ("num", text). A ``number`` cell comes
    back as its token, for :func:`ref_numbers` once the column's type is known."""
    is_number = isinstance(value, tuple)
    if value is None:
        return None
    if value == MARKER and kind != "string":
        counts["masked"] += 1
        return None
    if kind == "string":
        if is_number:
            return value[1]
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str):
            return value
    elif kind == "number" and is_number:
        return value
    elif kind == "decimal" and (is_number or isinstance(value, str)):
        text = value[1] if is_number else value
        if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
            raise Invalid  # decimals are also taken from numeric strings
        number = decimal.Decimal(text)
        if number.as_tuple().exponent < -9 or abs(number) >= decimal.Decimal(10) ** 29:
            raise Invalid
        with decimal.localcontext(prec=80):
            return number.quantize(decimal.Decimal("1e-9"))
    elif kind == "bool" and isinstance(value, bool):
        return value
    elif kind == "datetime" and isinstance(value, str):
        return ref_datetime(value)
    elif (
        kind == "list"
        and isinstance(value, list)
        and all(item is None or isinstance(item, str) for item in value)
    ):
        return value
    raise Invalid


def ref_numbers(tokens: list[Any]) -> tuple[str, list[Any], set[int]]:
    """The number rule for one column, from its tokens (None for null): its type, its values
    and the 0-based rows it refuses. Integer tokens are digits with an optional minus."""
    integral = [t is None or re.fullmatch(r"-?\d+", t) is not None for t in tokens]
    double = not all(integral)
    values, bad = [], set()
    for row, token in enumerate(tokens):
        if token is None:
            values.append(None)
        elif integral[row]:
            number = int(token)
            exact = abs(number) <= 2**53 or int(float(number)) == number
            if not -(2**63) <= number < 2**63 or (double and not exact):
                bad.add(row)
            values.append(float(number) if double else number)
        else:
            number = float(token)
            if number in (float("inf"), float("-inf")):
                bad.add(row)
            values.append(number)
    return ("double" if double else "int64"), values, bad


def refuse_constant(name: str) -> Any:
    raise ValueError(name)


def _beyond_double(value: Any) -> bool:
    """Whether a value read with numbers as ``("num", text)`` holds one no double reaches."""
    if isinstance(value, tuple):
        return math.isinf(float(value[1]))
    if isinstance(value, dict):
        return any(_beyond_double(item) for item in value.values())
    if isinstance(value, list):
        return any(_beyond_double(item) for item in value)
    return False


def reference(
    lines: list[bytes],
) -> tuple[list[dict[str, Any]], dict[str, Any], set[Any], str]:
    """Rows, counts, the faults (("cell", column, row), ("key", key, row), ("line", row); rows
    1-based) and the type of the ``number`` column."""
    rows, bad, tokens = [], set(), []
    counts: dict[str, Any] = {"masked": 0, "unexpected": {}}
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(
                line.decode("utf-8"),
                parse_int=lambda t: ("num", t),
                parse_float=lambda t: ("num", t),
                parse_constant=refuse_constant,
            )
        except ValueError:
            bad.add(("line", number))
            record = {}
        bad.update(("key", key, number) for key in COLUMNS if key not in record and record)
        if _beyond_double(record):  # strict JSON has no such number: the line may be named
            bad.add(("line", number))
        for key in record:
            if key not in COLUMNS:
                counts["unexpected"][key] = counts["unexpected"].get(key, 0) + 1
        row = {}
        for column in COLUMNS:
            try:
                row[column] = ref_value(KINDS[column], record.get(column), counts)
            except Invalid:
                bad.add(("cell", column, number))
                row[column] = None
        tokens.append(row["score"][1] if row["score"] is not None else None)
        rows.append(row)
    kind, values, refused = ref_numbers(tokens)
    for row, value in zip(rows, values, strict=True):
        row["score"] = value
    bad.update(("cell", "score", index + 1) for index in refused)
    return rows, counts, bad, kind


# ---- what the platform may send

doubles = st.floats(allow_nan=False, allow_infinity=False).map(repr)
odd_numbers = st.sampled_from(
    [
        "14.898609719035171",
        "0.30000000000000004",
        "4255875062385414000",
        "-4635244755532264000",
        "4255875062385414144",
        "9" * 31,
        "1e400",
        "-0",
        "1E5",
        "9007199254740993",
        str(2**53),
        str(2**63 - 1),
        str(-(2**63)),
        str(2**63),
    ]
)
big_integers = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(2**53 - 3, 2**53 + 3),
    st.integers(-(10**20), 10**20),
).map(str)
numbers = st.one_of(doubles, odd_numbers, big_integers)
integral_numbers = st.one_of(
    odd_numbers.filter(lambda t: "." not in t and "e" not in t.lower()), big_integers
)
texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
cjk = st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x4E20), max_size=4)
dates = st.dates(dt.date(1970, 1, 1), dt.date(2100, 1, 1))
datetimes = st.one_of(
    dates.map(str),
    st.datetimes(dt.datetime(1970, 1, 2), dt.datetime(2100, 1, 1)).map(
        lambda d: d.strftime("%Y-%m-%d %H:%M:%S")
    ),
    st.datetimes(dt.datetime(1970, 1, 2), dt.datetime(2100, 1, 1)).map(
        lambda d: d.strftime("%Y-%m-%d %H:%M:%S.") + f"{d.microsecond // 1000:03d}"
    ),
)
odd_datetimes = st.sampled_from(
    [
        "2024-02-30 10:00:00",
        "2024-01-01T10:00:00",
        "2024-01-01t10:00:00",
        "yesterday",
        "2024-01-01 10:00",
        "2024-01-01 10",
        "2024-01-01 10:00:00.1234",
        "2024-01-01 10:00:00.",
        "2024-01-01 24:00:00",
        "2024-01-01 10:00:60",
        "2024-01-01 10:00:00Z",
        "2024-01-01 10:00:00+08",
        "2024-01-01 10:00+08:00",
        "20240101",
        "2024-1-01 10:00:00",
        "\u0662\u0660\u0662\u0664-01-01",
        "2024-01-01\n",
    ]
)
decimals = st.one_of(
    st.integers(-(10**28), 10**28).map(str),
    st.decimals(-(10**6), 10**6, places=4, allow_nan=False).map(str),
)


def with_nulls(line: bytes, *present: str) -> bytes:
    """A hand-written record line with the requested keys it does not hold added as null."""
    nulls = "".join(f"{json.dumps(c)}: null, " for c in COLUMNS if c not in present)
    return b"{" + nulls.encode() + line.removeprefix(b"{")


def raw(text: str) -> str:
    return text


def string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def cell(kind: str, odd_values: bool, integral: bool) -> st.SearchStrategy[str]:
    """The JSON text of one value of a column of ``kind``, usually valid, sometimes odd
    (``integral``: the stream's ``number`` column holds integer tokens only)."""
    marker = st.just(string(MARKER))
    null = st.just("null")
    common = [null, marker]
    valid = {
        "number": integral_numbers if integral else numbers,
        "decimal": decimals,
        "string": st.one_of(texts.map(string), cjk.map(string)),
        "bool": st.sampled_from(["true", "false"]),
        "datetime": datetimes.map(string),
        "list": st.lists(st.one_of(st.none(), texts), max_size=3).map(
            lambda items: json.dumps(items, ensure_ascii=False)
        ),
    }[kind]
    odd = {
        "number": st.sampled_from(['"12"', "true", "[1]", "NaN", "-Infinity"]),
        "decimal": st.sampled_from(["1.1234567891", "9" * 31, '"7"', '"+.5"', '"x"', "true"]),
        "string": st.one_of(numbers, st.sampled_from(["true", "false", '["x"]'])),
        "bool": st.sampled_from(['"true"', "1"]),
        "datetime": odd_datetimes.map(string),
        "list": st.sampled_from(['"a,b"', '["a", 1]']),
    }[kind]
    return st.one_of(valid, valid, valid, *common, *([odd] if odd_values else []))


@st.composite
def records(draw: st.DrawFn, integral: bool) -> bytes:
    keys = draw(st.permutations(COLUMNS))
    present = keys[1:] if not draw(st.integers(0, 199)) else keys  # a key absent now and then
    odd_values = draw(st.integers(0, 19)) == 0  # one record in twenty may hold odd values
    pairs = [f"{string(k)}: {draw(cell(KINDS[k], odd_values, integral))}" for k in present]
    if not draw(st.integers(0, 9)):
        pairs.append('"other": {"nested": [1, "x"]}')  # a key not asked for: counted
    return ("{" + ", ".join(pairs) + "}").encode()


FILLERS = {
    True: b'{"score": 7, "name": "x", "vip": null, "seen": "2024-01-01", "labels": ["a", null], '
    b'"phone": null, "user_id": 1, "tag.t_vip": null}',
    False: b'{"score": 1.5, "name": "x", "vip": null, "seen": "2024-01-01", '
    b'"labels": ["a", null], "phone": null, "user_id": 1, "tag.t_vip": null}',
}


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[bytes], list[int], int, int]:
    clean = draw(st.booleans())
    integral = draw(st.booleans())  # the number column holds integer tokens only
    lines = draw(st.lists(records(integral), min_size=1, max_size=60))
    if clean:  # long runs of clean rows, so Arrow's fast path takes part
        filler = FILLERS[integral]
        lines = [x for line in lines for x in (filler,) * draw(st.integers(0, 20)) + (line,)]
    body_size = sum(len(line) + 1 for line in lines)
    cuts = draw(st.lists(st.integers(0, body_size), max_size=12))
    return lines, sorted(set(cuts)), draw(st.integers(1, 4000)), draw(st.integers(1, 50))


def decode(
    lines: list[bytes], cuts: list[int], block_bytes: int, group_rows: int = 1 << 20
) -> tuple[pa.Table, BlockDecoder]:
    """The export's path: blocks parsed and finished, completed per row group of at most
    ``group_rows`` rows while the Parquet file is written, then read back."""
    body = b"".join(line + b"\n" for line in lines)
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    decoder = BlockDecoder(SCHEMA)
    with tempfile.TemporaryDirectory() as directory:
        path = pathlib.Path(directory, "users.parquet")
        with parquet_stream(
            path,
            SCHEMA.arrow_schema,
            compression="none",
            row_group_rows=group_rows,
            prepare=decoder.complete,
            widen=decoder.widen,
        ) as stream:
            for block, lines in iter_counted_blocks(chunks, block_bytes):  # as the export
                stream.add(decoder.finish(block, decoder.parse(block, lines)))
        return pq.read_table(path), decoder


FAULTS = (
    (r"column '([^']+)' \(row (\d+) of the export\)", "cell"),
    (r"row (\d+) of the export lacks the keys? '([^']+)'", "key"),
    (r"line (\d+) of the export is not", "line"),
)


def named_fault(error: Exception) -> tuple[Any, ...]:
    """The fault a refusal names, in the reference's terms."""
    text = str(error)
    if isinstance(error, ExportDataError):
        found = re.search(FAULTS[0][0], text)
        assert found is not None, text
        return ("cell", found.group(1), int(found.group(2)))
    if isinstance(error, ExportRecordError):
        found = re.search(FAULTS[1][0], text)
        assert found is not None, text
        return ("key", found.group(2), int(found.group(1)))
    found = re.search(FAULTS[2][0], text)
    assert found is not None, text
    return ("line", int(found.group(1)))


@settings(max_examples=150, deadline=None)
@given(streams())
@example(  # a number beyond a double's range in a string column: the line may be named
    stream=(
        [
            b'{"score": null, "name": 1e400, "vip": true, "seen": null, "labels": null, '
            b'"phone": null, "user_id": 3, "tag.t_vip": ""}'
        ],
        [],
        6,
        1,
    )
)
def test_any_cut_of_any_stream_decodes_as_the_reference_does(
    stream: tuple[list[bytes], list[int], int, int],
) -> None:
    lines, cuts, block_bytes, group_rows = stream
    rows, counts, bad, kind = reference(lines)
    if bad:
        with pytest.raises((ExportDataError, ExportRecordError, MalformedStreamError)) as caught:
            decode(lines, cuts, block_bytes, group_rows)
        assert named_fault(caught.value) in bad, (str(caught.value), bad)
        return
    table, decoder = decode(lines, cuts, block_bytes, group_rows)
    expected = SCHEMA.arrow_schema.set(
        0,
        SCHEMA.arrow_schema.field("score").with_type(
            pa.float64() if kind == "double" else pa.int64()
        ),
    )
    assert table.schema.equals(expected, check_metadata=False)
    assert table.to_pylist() == rows
    assert decoder.masked_values == counts["masked"]
    assert decoder.unexpected_keys == counts["unexpected"]
    assert decoder.rows == len(lines)


@pytest.mark.parametrize("block_bytes", [1, 64, 1 << 20])
def test_a_null_in_a_list_stays_null_whatever_its_neighbours(block_bytes: int) -> None:
    """The defect where ``["a", null]`` became ``['a', 'null']`` beside a masked marker."""
    plain = with_nulls(b'{"labels": ["a", null]}', "labels")
    marked = with_nulls(
        b'{"labels": ["a", null], "vip": "' + MARKER.encode() + b'"}', "labels", "vip"
    )
    for lines in ([plain] * 40, [plain] * 20 + [marked] + [plain] * 20):
        table, _ = decode(lines, [], block_bytes)
        assert set(map(tuple, table.column("labels").to_pylist())) == {("a", None)}


@pytest.mark.parametrize(
    ("bad", "column"),
    [(b'{"seen": "2024-02-30 10:00:00"}', "seen"), (b'{"user_id": ' + b"9" * 31 + b"}", "user_id")],
)
@pytest.mark.parametrize("group_rows", [1, 7, 10, 1 << 20])
def test_a_refusal_in_a_later_row_group_names_the_row_of_the_export(
    bad: bytes, column: str, group_rows: int
) -> None:
    """Datetimes and decimals are completed per row group: the row named is still the
    export's (the 26th line here), whichever group holds it."""
    good = with_nulls(
        b'{"score": 1.5, "seen": "2024-01-01 10:00:00", "user_id": 7}', "score", "seen", "user_id"
    )
    lines = [good] * 25 + [with_nulls(bad, column)] + [good] * 9
    with pytest.raises(ExportDataError, match=rf"column '{column}' \(row 26 of the export\)"):
        decode(lines, [100, 900], 64, group_rows)
