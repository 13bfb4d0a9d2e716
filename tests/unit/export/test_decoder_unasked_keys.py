"""Keys the export did not ask for (export/decoder.py, core/byte_scans.py): counted on Arrow's
fast path, at the cost of a line without them, and every refusal of the rule kept.

Arrow reads such keys as columns of their own and the byte scans prove every requested key
present; the counts must be the ones the line-by-line rule (``RecordKeys.check``, what a script
reading ``iter_records`` gets) and an independent reference written here find, for any stream.
"""

from __future__ import annotations

import json
import logging
import math
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from airflow_provider_analytics.core import byte_scans
from airflow_provider_analytics.core.cohort_records import (
    ExportRecordError,
    RecordKeys,
    decode_line,
)
from airflow_provider_analytics.core.ndjson import MalformedStreamError, iter_counted_blocks
from airflow_provider_analytics.export import decoder as arrow
from airflow_provider_analytics.export.decoder import BlockDecoder, ExportDataError
from airflow_provider_analytics.export.schema import export_schema

PLAN = [
    {"id": "name", "dataType": "string"},
    {"id": "n", "dataType": "number"},
    {"id": "tags", "dataType": "array<string>"},
]
COLUMNS = ["name", "n", "tags"]
SCHEMA = export_schema(COLUMNS, PLAN, timezone="UTC")


# ---- the reference: json.loads and the rule as the README states it, nothing of the decoder


class _Fault(Exception):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    if len({key for key, _ in pairs}) != len(pairs):
        raise _Fault
    return dict(pairs)


def _constant(name: str) -> Any:
    raise _Fault


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):  # beyond a double, as 1e400
        raise _Fault
    return number


def _utf8(value: Any) -> None:
    """Refuse text no UTF-8 writer can hold (a ``\\ud800`` escape decodes to one)."""
    if isinstance(value, str):
        value.encode("utf-8")
    elif isinstance(value, dict):
        for key, item in value.items():
            _utf8(key)
            _utf8(item)
    elif isinstance(value, list):
        for item in value:
            _utf8(item)


def reference(lines: list[bytes]) -> tuple[list[dict[str, Any]], dict[str, int], set[Any]]:
    """Rows, the records holding each key not asked for, and the faults (1-based rows)."""
    rows, unasked, faults = [], {}, set()
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(
                line.decode("utf-8"),
                object_pairs_hook=_pairs,
                parse_constant=_constant,
                parse_float=_finite,
            )
            _utf8(record)
        except (_Fault, ValueError):
            faults.add(("line", number))
            faults.update(("key", key, number) for key in _missing_loosely(line))
            rows.append({})
            continue
        missing = [key for key in COLUMNS if key not in record]
        faults.update(("key", key, number) for key in missing)
        for key in record:
            if key not in COLUMNS:
                unasked[key] = unasked.get(key, 0) + 1
        rows.append({key: record.get(key) for key in COLUMNS})
    return rows, unasked, faults


def _missing_loosely(line: bytes) -> list[str]:
    """The requested keys a line refused for a value lacks as well: either fault may be named
    first, since both refuse the row."""
    try:
        record = json.loads(line.decode("utf-8", "surrogateescape"))
    except ValueError:
        return []
    return [key for key in COLUMNS if isinstance(record, dict) and key not in record]


# ---- the two readers


def fast_path(lines: list[bytes], block_bytes: int) -> tuple[list[dict[str, Any]], BlockDecoder]:
    """The export's decoder, block by block, as the Parquet export runs it."""
    decoder = BlockDecoder(SCHEMA)
    body = b"".join(line + b"\n" for line in lines)
    rows: list[dict[str, Any]] = []
    for block, count in iter_counted_blocks([body], block_bytes):
        first = decoder.rows
        rows += decoder.complete(
            decoder.finish(block, decoder.parse(block, count)), first
        ).to_pylist()
    return rows, decoder


def line_rule(lines: list[bytes]) -> dict[str, int]:
    """What a script reading ``iter_records(keys=...)`` counts."""
    keys = RecordKeys(COLUMNS)
    for number, line in enumerate(lines, 1):
        keys.check(decode_line(line, number), number)
    return keys.unexpected


def named(error: Exception) -> tuple[Any, ...]:
    text = str(error)
    if isinstance(error, ExportRecordError):
        found = re.search(r"row (\d+) of the export lacks the keys? '([^']+)'", text)
        assert found is not None, text
        return ("key", found.group(2), int(found.group(1)))
    found = re.search(r"line (\d+) of the export is not", text)
    assert found is not None, text
    return ("line", int(found.group(1)))


# ---- what a server may send

EXTRA_NAMES = ["tag", "tag.new", "ame", "namex", "n2", "标签", ":x", "x,", 'q"x', "a b", ""]
"""Keys not asked for: suffixes and prefixes of requested names, non-ASCII, names that begin
or end with what the byte scans leave out, one written with an escape, the empty name."""
EXTRA_VALUES = [
    '"v"', '":v"', "null", "1", "-2.5", "true", "[1, 2]", '["a", ":b", null]', '{"name": 1}',
    '{"n": 2, "tags": []}', '"(已脱敏)"', "123456789012345678901234567890", '"2024-01-01"',
    '"x\\"y"', "1e400", "NaN", "Infinity", '"\\xff"', '"\\ud800"', '"a:b"', "[]",
]  # fmt: skip
"""Their values: the five from 1e400 to the lone surrogate are refused by the rule, wherever
they stand."""
NAMES = ['"u"', '":colon"', "null", '"a,b"', '"x\\"y"', '"标签"', '"a:b"']
NUMBERS = ["1", "null", "-5", "70"]
TAGS = ['["a"]', "null", '[":z", null]', "[]", '["p:q"]']


@st.composite
def records(draw: st.DrawFn, unasked: list[str], spacing: tuple[str, str]) -> bytes:
    colon, comma = spacing
    pairs = [("name", draw(st.sampled_from(NAMES))), ("n", draw(st.sampled_from(NUMBERS)))]
    pairs.append(("tags", draw(st.sampled_from(TAGS))))
    for name in unasked:  # the server's usual keys not asked for, usually in every line
        if draw(st.integers(0, 9)):
            pairs.append((name, draw(st.sampled_from(EXTRA_VALUES[:3]))))
    if not draw(st.integers(0, 14)):  # now and then another one, any value
        pairs.append((draw(st.sampled_from(EXTRA_NAMES)), draw(st.sampled_from(EXTRA_VALUES))))
    if not draw(st.integers(0, 59)):  # a requested key lost
        del pairs[draw(st.integers(0, 2))]
    if not draw(st.integers(0, 59)):  # a key given twice
        pairs.append(draw(st.sampled_from(pairs)))
    order = draw(st.permutations(range(len(pairs))))
    if not draw(st.integers(0, 49)):  # white space before a colon, now and then
        colon = " " + colon
    text = comma.join(
        f"{json.dumps(pairs[i][0], ensure_ascii=False)}{colon}{pairs[i][1]}" for i in order
    )
    return ("{" + text + "}").encode("utf-8", "surrogateescape").replace(b"\\xff", b"\xff")


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[bytes], int]:
    unasked = draw(st.lists(st.sampled_from(EXTRA_NAMES), max_size=2, unique=True))
    spacing = draw(st.sampled_from([(":", ","), (": ", ", ")]))
    lines = draw(st.lists(records(unasked, spacing), min_size=1, max_size=80))
    return lines, draw(st.integers(1, 3000))


@seed(20240105)
@settings(max_examples=300, deadline=None)
@given(streams())
def test_keys_not_asked_for_are_counted_as_the_line_rule_and_the_reference_count_them(
    stream: tuple[list[bytes], int],
) -> None:
    lines, block_bytes = stream
    rows, unasked, faults = reference(lines)
    if faults:
        for read in (lambda: fast_path(lines, block_bytes), lambda: line_rule(lines)):
            with pytest.raises(
                (ExportRecordError, MalformedStreamError, ExportDataError)
            ) as caught:
                read()
            assert named(caught.value) in faults, (str(caught.value), faults)
        return
    table, decoder = fast_path(lines, block_bytes)
    assert table == rows
    assert decoder.unexpected_keys == unasked == line_rule(lines)
    assert decoder.rows == len(lines)


# ---- the fast path is taken, and costs a line without such keys no more


def compact(**values: Any) -> bytes:
    record = {"name": "u", "n": 1, "tags": ["a"]} | values
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()


@pytest.fixture
def lines_decoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the lines the decoder decodes in Python to check their keys."""
    decoded: list[int] = []

    def counting(line: bytes, number: int, **kwargs: Any) -> dict[str, Any]:
        decoded.append(number)
        return decode_line(line, number, **kwargs)

    monkeypatch.setattr(arrow, "decode_line", counting)
    return decoded


@pytest.mark.parametrize(
    "extra",
    [
        {"tag": "t"},  # in every record: keys counted only
        {"tag": None},  # explicit null in every record
        {"tag": "t", "tag.b": [1, 2]},
        {"标签": 1.5},
    ],
    ids=["text", "null", "two", "non-ASCII"],
)
def test_a_key_in_every_line_keeps_every_line_on_the_fast_path(
    extra: dict[str, Any], lines_decoded: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    lines = [compact(name=f"u{i}", **extra) for i in range(3000)]
    with caplog.at_level(logging.WARNING):
        table, decoder = fast_path(lines, 16 << 10)
    assert len(table) == 3000 and decoder.slow_lines == 0 and lines_decoded == []
    assert decoder.unexpected_keys == dict.fromkeys(extra, 3000)
    warned = [r.getMessage() for r in caplog.records if "did not ask for" in r.getMessage()]
    assert len(warned) == len(extra) and all("row 1 of the export" in w for w in warned)


def test_a_key_in_some_lines_is_counted_exactly_on_the_fast_path(
    lines_decoded: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    lines = [compact(**({"tag": None} if i % 3 else {})) for i in range(3000)]
    lines[2000] = compact(late=":x")
    with caplog.at_level(logging.WARNING):
        _, decoder = fast_path(lines, 16 << 10)
    assert lines_decoded == [] and decoder.slow_lines == 0
    assert decoder.unexpected_keys == {"tag": 1999, "late": 1}
    warned = [r.getMessage() for r in caplog.records if "did not ask for" in r.getMessage()]
    assert "row 2 of the export holds the key 'tag'" in warned[0]
    assert "row 2001 of the export holds the key 'late'" in warned[1]


@pytest.mark.parametrize(
    ("line", "fault"),
    [
        (b'{"name":"u","n":1,"tags":[],"tag":"a","tag":"b"}', "the key 'tag' is given twice"),
        (b'{"name":"u","n":1,"tags":[],"tag":NaN}', "NaN is not a JSON value"),
        (b'{"name":"u","n":1,"tags":[],"tag":[1,-Infinity]}', "-Infinity is not a JSON value"),
        (b'{"name":"u","n":1,"tags":[],"tag":"\xff"}', "is not valid UTF-8"),
        (b'{"name":"u","n":1,"tags":[],"\xff":1}', "is not valid UTF-8"),
        (b'{"name":"u","n":1,"tags":[],"tag":{"a":NaN}}', "NaN is not a JSON value"),
        (b'{"name":"u","n":1,"tags":[],"tag":"\\udc00"}', "names half a surrogate pair"),
        (b'{"name":"u","n":1,"tags":[],"tag":[1,}', "is not valid JSON"),
    ],
    ids=["repeated", "NaN", "infinity in a list", "UTF-8 value", "UTF-8 key", "nested", "surrogate",
         "invalid"],
)  # fmt: skip
def test_a_key_not_asked_for_with_a_value_the_rule_refuses_is_refused_naming_its_line(
    line: bytes, fault: str
) -> None:
    lines = [compact(tag="t")] * 500 + [line] + [compact(tag="t")] * 500
    for read in (lambda: fast_path(lines, 4 << 10), lambda: line_rule(lines)):
        with pytest.raises(MalformedStreamError) as refused:
            read()
        assert "line 501 of the export" in str(refused.value) and fault in str(refused.value)


@pytest.mark.parametrize("at", [0, 2])
def test_a_line_starting_with_a_byte_order_mark_is_refused_wherever_it_stands(at: int) -> None:
    """Arrow skips a byte order mark at the start of a block (so of the stream) and refuses one
    elsewhere, where the line rule refuses it everywhere: the first line's was written."""
    lines = [compact(), compact(), compact()]
    lines[at] = b"\xef\xbb\xbf" + lines[at]
    for read in (lambda: fast_path(lines, 1 << 20), lambda: line_rule(lines)):
        with pytest.raises(MalformedStreamError, match=f"line {at + 1} of the export is not valid"):
            read()


@pytest.mark.parametrize("depth", [64, 5000])
def test_lists_nested_past_the_rules_depth_are_refused_as_the_line_rule_refuses_them(
    depth: int,
) -> None:
    """Arrow reads a key not asked for holding lists in lists (5,000 deep raised RecursionError
    out of the export, 64 deep was written though the line rule refuses it); 63 deep is taken."""
    lines = [compact(tag=[]).replace(b"[]", b"[" * depth + b"]" * depth)] * 3
    with pytest.raises(MalformedStreamError, match="line 1 of the export is nested deeper"):
        fast_path(lines, 1 << 20)
    with pytest.raises(MalformedStreamError, match="line 1 of the export is nested deeper"):
        line_rule(lines)
    taken = [compact(tag=[]).replace(b"[]", b"[" * 63 + b"]" * 63)] * 3
    assert len(fast_path(taken, 1 << 20)[0]) == 3 and line_rule(taken) == {"tag": 3}


@pytest.mark.parametrize(
    ("others", "line"),
    [
        ({"tag": "t"}, b'{"name":":x","n":1,"tag":"t"}'),  # a text starting with a colon
        ({"tag": "t"}, b'{"name":"u","n":1,"tag":"t","x":{"tags":[]}}'),  # nested in another
        ({"tag": "t"}, b'{"name":"u","n":1,"tags\\u0000":[],"tag":"t"}'),  # escaped
        ({"tag": "t"}, b'{"name":"u","n":1,"tag" :"t"}'),  # white space before a colon
        ({"tag": "t"}, b'{"name":"u","n":1,":tags":[],"tag":"t"}'),
        ({"x": ["a"]}, b'{"name":"u","n":1,"x":[":","tags"]}'),
        ({"x": ["a"]}, b'{"name":"u","n":1,"x":["a","tags"],"y":":"}'),
    ],
    ids=["colon text", "nested", "escaped", "spaced", "colon key", "colon item", "colon value"],
)
def test_a_lost_key_is_refused_whatever_stands_beside_it(
    others: dict[str, Any], line: bytes
) -> None:
    lines = [compact(**others)] * 500 + [line] + [compact(**others)] * 500
    with pytest.raises(ExportRecordError, match="row 501 of the export lacks the key 'tags'"):
        fast_path(lines, 1 << 20)


def test_a_text_starting_with_a_colon_no_longer_hides_a_lost_key() -> None:
    """The byte count took the opening quote of ``":x"`` for a key's end; Arrow read the lost
    key as null, and the record was written."""
    with pytest.raises(ExportRecordError, match="row 1 of the export lacks the key 'n'"):
        fast_path([b'{"name":":x","tags":[]}'], 1 << 20)


def test_the_error_object_beside_records_with_keys_not_asked_for_is_named() -> None:
    lines = [compact(tag="t")] * 10 + [b'{"code":500,"msg":"busy","data":null}']
    with pytest.raises(ExportRecordError, match="row 11 of the export is the platform's error"):
        fast_path(lines, 1 << 20)


# ---- the scans


def test_key_positions_leave_out_quotes_that_may_open_a_string() -> None:
    block = b'{"a":":x","b":[":y"],"c": ":z","d\\":e":1,"f,":2,"":3}\n'
    found = byte_scans.key_positions(block)
    assert [block[: end + 1].rsplit(b'"', 2)[1] for end in found.tolist()] == [
        b"a",
        b"b",
        b"c",
        b":e",
        b"",
    ]
    assert byte_scans.key_ends(block) == 9  # the count takes every unescaped '":'


def test_keys_named_finds_whole_names_only() -> None:
    block = b'{"tag":1,"xtag":2,"ta":3,"tag.x":4,"a":"tag"}\n{"tag":5}\n'
    data = np.frombuffer(block, dtype=np.uint8)
    ends = byte_scans.key_positions(block)
    expected = [m.end() - 1 for m in re.finditer(rb'(?<=[{,])"tag"(?=:)', block)]
    assert byte_scans.keys_named(data, ends, b"tag").tolist() == expected
    assert len(expected) == 2
    assert byte_scans.keys_named(data, ends, b"").tolist() == []


def test_spaced_colons() -> None:
    assert byte_scans.spaced_colons(b'{"a" :1}\n')
    assert byte_scans.spaced_colons(b'{"a":"b :c"}\n')
    assert not byte_scans.spaced_colons(b'{"a": "b: c"}\n')


# ---- what is logged and returned of them: bounded, secrets masked

TOKEN = "tok-secret-9f3a"


def test_a_key_that_is_a_secret_is_masked_in_the_log_and_the_counts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lines = [compact(**{TOKEN: 1, f"x-{TOKEN}": None}) for _ in range(100)]
    decoder = BlockDecoder(SCHEMA, secrets=[TOKEN])
    body = b"".join(line + b"\n" for line in lines)
    with caplog.at_level(logging.WARNING):
        for block, count in iter_counted_blocks([body], 1 << 20):
            decoder.finish(block, decoder.parse(block, count))
    assert decoder.unexpected_keys == {"***": 100, "x-***": 100}
    assert TOKEN not in caplog.text and "'x-***'" in caplog.text


def test_keys_beyond_the_first_hundred_are_counted_not_named(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lines = [compact(**{f"k{i}": i}) for i in range(250)] * 2
    with caplog.at_level(logging.WARNING):
        _, decoder = fast_path(lines, 8 << 10)
    assert decoder.unexpected_keys == {f"k{i}": 2 for i in range(100)}
    assert decoder.keys.unlisted == 300
    warned = [r.getMessage() for r in caplog.records if "holds" in r.getMessage()]
    assert len(warned) == 101 and "row 101 of the export holds a key not asked" in warned[-1]
    keys = RecordKeys(COLUMNS)
    for number, line in enumerate(lines, 1):
        keys.check(decode_line(line, number), number)
    assert (keys.unexpected, keys.unlisted) == (decoder.unexpected_keys, 300)


def test_requested_keys_with_non_ascii_names_are_counted_from_the_bytes(
    lines_decoded: list[int],
) -> None:
    """They were left to the line rule (their escaped JSON form held a backslash), though a
    serializer writes them as UTF-8."""
    plan = [{"id": "城市", "dataType": "string"}, {"id": "n", "dataType": "number"}]
    decoder = BlockDecoder(export_schema(["城市", "n"], plan, timezone="UTC"))
    body = b"".join(
        json.dumps({"城市": "上海", "n": i, "标签": "t"}, ensure_ascii=False).encode() + b"\n"
        for i in range(1000)
    )
    for block, count in iter_counted_blocks([body], 8 << 10):
        decoder.finish(block, decoder.parse(block, count))
    assert lines_decoded == [] and decoder.unexpected_keys == {"标签": 1000}


def test_keys_learned_from_a_block_read_later_blocks_without_inference(monkeypatch) -> None:
    """After a block holding keys not asked for, later blocks are read with those keys' types
    (no inference, no nesting check); a block without them, with other values for them, or
    with a new key is still counted as the line rule counts it."""
    checks: list[int] = []
    nesting = arrow.nesting
    monkeypatch.setattr(arrow, "nesting", lambda data: checks.append(1) or nesting(data))
    base = '"name": "u", "n": 1, "tags": ["a"]'
    blocks = [
        [f'{{{base}, "tag": "v", "score": 2}}'] * 40,  # learned: tag as text, score as double
        [f'{{{base}, "tag": "w", "score": 2.5}}'] * 40,  # the same keys: nothing to infer
        [f"{{{base}}}"] * 40,  # neither key
        [f'{{{base}, "tag": null, "score": null}}'] * 40,  # both, null
        [f'{{{base}, "tag" : null}}'] * 40,  # null, and written so the byte scans miss it
        [f'{{{base}, "tag": "x", "other": [1]}}'] * 40,  # a new key: inferred again
        [f'{{{base}, "tag": 7, "score": "s"}}'] * 40,  # other types than learned
    ]
    lines = [line.encode() for block in blocks for line in block]
    decoder = BlockDecoder(SCHEMA)
    for block in blocks:
        decoder.decode("".join(line + "\n" for line in block).encode())
    assert decoder.rows == len(lines)
    assert decoder.unexpected_keys == line_rule(lines) == {"tag": 240, "score": 160, "other": 40}
    assert len(checks) == 3  # the first block, one with a new key, one with other types


def test_a_learned_key_whose_values_turn_another_type_keeps_the_fast_path(
    lines_decoded: list[int],
) -> None:
    """A key not asked for learned as a number that later holds text: every later block was
    refused by the learned types and decoded line by line (~20x slower), the type never
    learned again. It is read as if nothing were learned, and teaches the new type."""
    base = '"name": "u", "n": 1, "tags": ["a"]'
    blocks = [
        [f'{{{base}, "score": 2}}'] * 40,
        [f'{{{base}, "score": "high"}}'] * 40,  # text now
        [f'{{{base}, "score": "low"}}'] * 40,
        [f'{{{base}, "score": true}}'] * 40,  # and a flag
    ]
    lines = [line.encode() for block in blocks for line in block]
    decoder = BlockDecoder(SCHEMA)
    for block in blocks:
        decoder.decode("".join(line + "\n" for line in block).encode())
    assert lines_decoded == []
    assert decoder.unexpected_keys == line_rule(lines) == {"score": 160}
    assert decoder.rows == len(lines)
