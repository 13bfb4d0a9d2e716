"""NDJSON line splitting and the cohort export reader."""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_analytics.client import (
    AnalyticsClient,
    AnalyticsStreamError,
    ClientConfig,
    iter_lines,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    import requests_mock as rm

BASE = "https://analytics.example.com"
EXPORT = BASE + "/uba/api/cohort/users/export"

RECORDS = [
    {"distinct_id": 4255875062385414000, "nickname": "张三😀", "tag.tag_rfm": "高价值"},
    {"distinct_id": -4635244755532264000, "nickname": None, "phone": "(已脱敏)"},
    {"distinct_id": 3, "nickname": "Zoë", "interests": ["音乐", "sport"], "balance": 1234.56},
]
BODY = b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in RECORDS)
LINES = BODY.split(b"\n")[:-1]


def cut(data: bytes, points: list[int]) -> Iterator[bytes]:
    """``data`` split at the given (sorted, in-range) byte offsets."""
    start = 0
    for point in points:
        yield data[start:point]
        start = point
    yield data[start:]


def test_lines_are_split_and_line_ends_removed() -> None:
    chunks = [b'{"a":1}\r\n{"a":', b"2}\n\n", b"\r\n", b'{"a":3}\n']
    assert list(iter_lines(chunks)) == [b'{"a":1}', b'{"a":2}', b'{"a":3}']


def test_a_final_line_without_newline_is_kept_when_it_is_complete_json() -> None:
    assert list(iter_lines([b'{"a":1}\n{"a":', b"2}"])) == [b'{"a":1}', b'{"a":2}']
    assert list(iter_lines([b'{"a":1}\n{"a":2}\r'])) == [b'{"a":1}', b'{"a":2}']


def test_a_stream_cut_inside_a_line_is_an_error() -> None:
    lines = iter_lines([b'{"a":1}\n{"a":2}\n{"a":', b'"unfinished'])
    assert next(lines) == b'{"a":1}'
    assert next(lines) == b'{"a":2}'
    with pytest.raises(AnalyticsStreamError, match="inside a line after 2 complete rows"):
        next(lines)


def test_empty_input_and_whitespace_tail_yield_nothing() -> None:
    assert list(iter_lines([])) == []
    assert list(iter_lines([b"", b"\n", b"\r\n", b"  "])) == []


def test_a_line_spanning_many_chunks() -> None:
    line = json.dumps({"k": "x" * 10_000}).encode()
    chunks = [line[i : i + 7] for i in range(0, len(line), 7)] + [b"\n"]
    assert list(iter_lines(chunks)) == [line]


def test_multibyte_characters_cut_at_every_byte_position() -> None:
    for point in range(1, len(BODY)):
        assert list(iter_lines([BODY[:point], BODY[point:]])) == LINES


@given(st.lists(st.integers(min_value=0, max_value=len(BODY)), max_size=12))
def test_any_chunking_of_the_sample_yields_the_same_lines(points: list[int]) -> None:
    assert list(iter_lines(cut(BODY, sorted(points)))) == LINES


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(
    st.lists(st.dictionaries(st.text(min_size=1), json_values, max_size=4), max_size=8),
    st.data(),
)
def test_any_chunking_of_any_body_yields_the_same_lines(
    records: list[dict[str, Any]], data: st.DataObject
) -> None:
    body = b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records)
    points = data.draw(st.lists(st.integers(min_value=0, max_value=len(body)), max_size=20))
    lines = list(iter_lines(cut(body, sorted(points))))
    assert [json.loads(line) for line in lines] == records


# The export reader over requests-mock.


class BrokenBody(io.RawIOBase):
    """A body that delivers ``data`` and then fails as a dropped connection would."""

    def __init__(self, data: bytes, error: BaseException) -> None:
        self._data = data
        self._error = error
        self._sent = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._sent:
            raise self._error
        buffer[: len(self._data)] = self._data
        self._sent = True
        return len(self._data)

    def read1(self, size: int = -1) -> bytes:  # what a socket file offers
        return self.read(size)


@pytest.fixture
def client() -> AnalyticsClient:
    config = ClientConfig(BASE, token="tok-5a8e", app_key="app-c31f")
    return AnalyticsClient(config, sleep=lambda _: None)


def test_records_are_decoded_with_exact_big_integers(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.post(EXPORT, content=BODY)
    with client.export_cohort_users("cohort_tiny") as export:
        records = list(export.iter_records())
    assert records == RECORDS
    assert records[0]["distinct_id"] == 4255875062385414000
    assert export.bytes_read == len(BODY)
    assert export.lines_read == len(RECORDS)
    assert repr(export) == f"CohortExport(bytes_read={len(BODY)}, lines_read=3)"


def test_raw_bytes_come_through_unchanged(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.post(EXPORT, content=BODY)
    with client.export_cohort_users("cohort_tiny") as export:
        chunks = list(export.iter_bytes(chunk_size=5))
    assert b"".join(chunks) == BODY
    assert max(len(c) for c in chunks) <= 5


def test_the_body_can_be_read_only_once(client: AnalyticsClient, requests_mock: rm.Mocker) -> None:
    requests_mock.post(EXPORT, content=BODY)
    with client.export_cohort_users("cohort_tiny") as export:
        assert len(list(export.iter_lines())) == 3
        with pytest.raises(RuntimeError, match="already read"):
            list(export.iter_records())


def test_a_closed_export_cannot_be_read(client: AnalyticsClient, requests_mock: rm.Mocker) -> None:
    requests_mock.post(EXPORT, content=BODY)
    export = client.export_cohort_users("cohort_tiny")
    export.close()
    with pytest.raises(RuntimeError, match="closed"):
        list(export.iter_bytes())


@pytest.mark.parametrize(
    "error",
    [ConnectionResetError("reset by peer"), TimeoutError("timed out")],
    ids=["reset", "read_timeout"],
)
def test_a_connection_lost_mid_body_is_a_stream_error(
    client: AnalyticsClient, requests_mock: rm.Mocker, error: BaseException
) -> None:
    requests_mock.post(EXPORT, body=BrokenBody(LINES[0] + b"\n" + LINES[1][:9], error))
    got: list[dict[str, Any]] = []
    with (
        pytest.raises(AnalyticsStreamError, match="stream broke after") as caught,
        client.export_cohort_users("cohort_tiny") as export,
    ):
        for record in export.iter_records():
            got.append(record)
    # How much arrives before the break depends on buffering; never a partial record.
    assert got in ([], RECORDS[:1])
    assert caught.value.operation == "export_cohort_users"
    assert "export_read_timeout" in str(caught.value)


def test_a_stream_that_ends_inside_a_line_is_a_stream_error(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.post(EXPORT, content=BODY + b'{"distinct_id": 4, "nick')
    with client.export_cohort_users("cohort_tiny") as export:
        records = export.iter_records()
        assert [next(records) for _ in range(3)] == RECORDS
        with pytest.raises(AnalyticsStreamError, match="after 3 complete rows") as caught:
            next(records)
    assert caught.value.operation == "export_cohort_users"


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (b"this is not json", "line 2 of the export is not valid JSON"),
        (b"[1, 2]", "line 2 of the export is not a JSON object but a list"),
        (b'{"a": "\xff"}', "line 2 of the export is not valid UTF-8"),
    ],
)
def test_a_malformed_line_names_its_line_number(
    client: AnalyticsClient, requests_mock: rm.Mocker, bad: bytes, problem: str
) -> None:
    requests_mock.post(EXPORT, content=LINES[0] + b"\n" + bad + b"\n" + LINES[1] + b"\n")
    with client.export_cohort_users("cohort_tiny") as export:
        records = export.iter_records()
        assert next(records) == RECORDS[0]
        with pytest.raises(AnalyticsStreamError, match=problem):
            next(records)


def test_secrets_given_to_an_export_still_reach_every_message() -> None:
    """Deprecated ``secrets=``: the values are remembered, so every message masks them."""
    from airflow_provider_analytics.client.export import CohortExport
    from airflow_provider_analytics.core.redaction import known

    with pytest.deprecated_call(match="remember"):
        CohortExport(None, secrets=["Export-Secret-4242"])  # type: ignore[arg-type]
    assert known().text("token Export-Secret-4242") == "token ***"
