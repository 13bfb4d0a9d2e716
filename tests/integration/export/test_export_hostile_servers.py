"""The cohort export against servers that send what real platforms send (issue: real data).

Each test is a defect that was seen, replayed by a local server that sends those bytes.
"""

from __future__ import annotations

import gzip
import json
import time
import zlib
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
from airflow_provider_analytics.core.errors import (
    AnalyticsError,
    AnalyticsStreamError,
    AnalyticsTransportError,
)
from airflow_provider_analytics.core.ndjson import MalformedStreamError
from airflow_provider_analytics.export.decoder import ExportDataError
from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.export.stream import (
    ExportIncompleteError,
    export_cohort_to_parquet,
)
from tests.integration.export_servers import ExportServer

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
    from typing import BinaryIO

MARKER = "(已脱敏)"
PLAN = [
    {"id": "score", "dataType": "number"},
    {"id": "name", "dataType": "string"},
    {"id": "vip", "dataType": "boolean"},
    {"id": "seen", "dataType": "datetime"},
    {"id": "labels", "dataType": "array<string>"},
]
ONCE = ExportSettings(attempts=1, retry_delay=0.0)


def ndjson(*records: dict[str, Any], keys: list[str] | None = None) -> bytes:
    """Records as the platform writes them: every requested key (by default the plan's) present,
    null where the record here does not give it."""
    requested = [item["id"] for item in PLAN] if keys is None else keys
    full = [{**dict.fromkeys(requested), **r} for r in records]
    return b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in full)


def client_for(server: ExportServer, **config: Any) -> AnalyticsClient:
    return AnalyticsClient(ClientConfig(server.base_url, token="t0k", app_key="app", **config))


def run_export(server: ExportServer, tmp_path: Path, **kwargs: Any) -> Any:
    kwargs.setdefault("settings", ONCE)
    with client_for(server) as client:
        return export_cohort_to_parquet(client, "c1", tmp_path / "users.parquet", **kwargs)


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[ExportServer] = []

    def start(**kwargs: Any) -> ExportServer:
        kwargs.setdefault("plan", PLAN)
        server = ExportServer(**kwargs).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)


def test_the_export_errors_belong_to_the_client_hierarchy() -> None:
    assert issubclass(ExportIncompleteError, AnalyticsError)
    assert issubclass(ExportIncompleteError, RuntimeError)
    assert issubclass(ExportDataError, AnalyticsError) and issubclass(ExportDataError, ValueError)
    assert issubclass(MalformedStreamError, AnalyticsError)
    assert issubclass(MalformedStreamError, ValueError)


def test_ordinary_doubles_are_written_as_the_same_doubles(serve: Any, tmp_path: Path) -> None:
    body = b'{"score": 14.898609719035171}\n{"score": 0.30000000000000004}\n{"score": 7}\n'
    result = run_export(serve(count=3, body=body), tmp_path, properties=["score"])
    table = pq.read_table(tmp_path / "users.parquet")
    assert table.column("score").to_pylist() == [14.898609719035171, 0.1 + 0.2, 7.0]
    assert table.schema.field("score").type == pa.float64()  # decimals: a double column
    assert result.unexpected_keys == {}


def test_an_integer_beyond_int64_is_refused_naming_the_setting_that_keeps_it(
    serve: Any, tmp_path: Path
) -> None:
    """It used to become the double 1e31 and be counted; now nothing is changed silently."""
    body = b'{"score": 1}\n{"score": ' + b"9" * 25 + b"}\n"
    with pytest.raises(ExportDataError) as refused:
        run_export(serve(count=2, body=body), tmp_path, properties=["score"])
    message = str(refused.value)
    assert "column 'score' (row 2 of the export)" in message
    assert "beyond int64" in message and "schema_overrides={'score': 'decimal'}" in message
    assert list(tmp_path.iterdir()) == []


def test_the_decimal_setting_keeps_ids_exact_and_refuses_what_it_cannot_hold(
    serve: Any, tmp_path: Path
) -> None:
    body = b'{"score": 4255875062385414001}\n{"score": 0.5}\n'
    run_export(
        serve(count=2, body=body),
        tmp_path,
        properties=["score"],
        schema_overrides={"score": "decimal"},
    )
    values = pq.read_table(tmp_path / "users.parquet").column("score").to_pylist()
    assert [str(v) for v in values] == ["4255875062385414001.000000000", "0.500000000"]
    body = b'{"score": 1}\n{"score": ' + b"9" * 31 + b"}\n"
    with pytest.raises(ExportDataError, match=r"column 'score' \(row 2 of the export\)"):
        run_export(
            serve(count=2, body=body),
            tmp_path / "b",
            properties=["score"],
            schema_overrides={"score": "decimal"},
        )
    assert not (tmp_path / "b").exists() or not any((tmp_path / "b").iterdir())


@pytest.mark.parametrize(
    ("line", "column", "why"),
    [
        (b'{"seen": "2024-02-30 10:00:00"}', "seen", "not a calendar date"),
        (b'{"seen": "2024-01-01T10:00:00"}', "seen", "not yyyy-MM-dd"),
        (b'{"vip": "yes"}', "vip", "not true or false"),
    ],
)
def test_values_that_fit_nowhere_are_refused_by_column_and_row_and_nothing_is_written(
    serve: Any, tmp_path: Path, line: bytes, column: str, why: str
) -> None:
    body = ndjson(*[{"name": f"u{i}"} for i in range(5)]) + ndjson(json.loads(line))
    with pytest.raises(ExportDataError, match=rf"column '{column}' \(row 6 of the export\).*{why}"):
        run_export(serve(count=6, body=body), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_null_in_a_list_is_null_beside_a_marker_or_not(serve: Any, tmp_path: Path) -> None:
    plain = [{"labels": ["a", None]} for _ in range(300)]
    marked = [*plain[:150], {"labels": ["a", None], "vip": MARKER}, *plain[150:]]
    for index, records in enumerate((plain, marked)):
        folder = tmp_path / str(index)
        result = run_export(serve(count=len(records), body=ndjson(*records)), folder)
        labels = pq.read_table(folder / "users.parquet").column("labels").to_pylist()
        assert {tuple(v) for v in labels} == {("a", None)}
        assert result.masked_values == index


def test_a_tag_named_by_its_bare_code_keeps_its_data(serve: Any, tmp_path: Path) -> None:
    body = ndjson(
        {"name": "x", "tag.t_vip": "gold"}, {"name": "y", "tag.t_vip": None}, keys=["name"]
    )
    for folder, name in (("bare", "t_vip"), ("prefixed", "tag.t_vip")):
        result = run_export(serve(count=2, body=body), tmp_path / folder, properties=["name", name])
        table = pq.read_table(tmp_path / folder / "users.parquet")
        assert result.columns == table.column_names == ["name", "tag_t_vip"]
        assert result.column_ids["tag_t_vip"] == "tag.t_vip"
        assert table.column("tag_t_vip").to_pylist() == ["gold", None]


def test_a_line_longer_than_the_bound_fails_naming_its_row(serve: Any, tmp_path: Path) -> None:
    body = ndjson({"name": "a"}) + b'{"name": "' + b"x" * 300_000 + b'"}\n'
    settings = ExportSettings(attempts=1, max_line_bytes=100_000)
    with pytest.raises(ExportIncompleteError, match=r"line 2 of the export is longer than"):
        run_export(serve(count=2, body=body), tmp_path, settings=settings)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "nested",
    [b"[" * 30_000 + b"]" * 30_000, b'{"a":' * 30_000 + b"1" + b"}" * 30_000],
    ids=["arrays", "objects"],
)
def test_a_line_nested_past_what_arrow_survives_is_refused_by_name(
    serve: Any, tmp_path: Path, nested: bytes
) -> None:
    # under a key not asked for, Arrow's type inference recursed once a level and the process
    # died of a stack overflow (a segfault) at about 20,000 levels
    deep = b'{"name": "x", "tag": ' + nested + b"}\n"
    body = ndjson(*[{"name": f"u{i}"} for i in range(5)], keys=["name"]) + deep
    with pytest.raises(ExportIncompleteError, match=r"line 6 of the export is nested deeper"):
        run_export(serve(count=6, body=body), tmp_path, properties=["name"])
    assert list(tmp_path.iterdir()) == []


DEEP_CASES = """
import sys, threading
from airflow_provider_analytics.core.ndjson import iter_counted_blocks
from airflow_provider_analytics.export.decoder import BlockDecoder
from airflow_provider_analytics.export.schema import export_schema

plan = [{"id": "name", "dataType": "string"}]
head = b"".join(b'{"name": "u%d"}\\n' % i for i in range(5))
cases = {
    "short line": b'{"name": "x", "tag": ' + b"[" * 5000 + b"]" * 5000 + b"}\\n",
    "over lines": b'{"name": "x", "tag":\\n' + (b"[" * 4000 + b"\\n") * 6
    + (b"]" * 4000 + b"\\n") * 6 + b"}\\n",
    "objects": b'{"name": "x", "tag": ' + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"}\\n",
}


def run():
    for name, deep in cases.items():
        decoder = BlockDecoder(export_schema(["name"], plan, timezone="UTC"))
        try:
            for block, lines in iter_counted_blocks([head + deep], 5 << 18):
                decoder.decode(block)
            print(name, "accepted")
        except Exception as error:
            print(name, type(error).__name__, str(error)[:60])


threading.stack_size(2 << 20)  # glibc's default for threads under ulimit -s unlimited
thread = threading.Thread(target=run)
thread.start()
thread.join()
"""


def test_deep_values_are_refused_on_a_small_thread_stack_whatever_their_lines() -> None:
    # Arrow's inference recursed once a level: 4,000 levels overflowed a 2 MiB stack, and a
    # value spread over short lines reached it past a check of single lines (a segfault)
    import subprocess
    import sys

    ran = subprocess.run(
        [sys.executable, "-c", DEEP_CASES], capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    lines = ran.stdout.splitlines()
    assert len(lines) == 3, ran.stdout
    for line in lines:
        assert "MalformedStreamError line 6 of the export is" in line, line


def test_a_long_shallow_line_arrives_exactly(serve: Any, tmp_path: Path) -> None:
    # brackets inside a text are no nesting: the long line's check finds its pairs shallow; a
    # key not asked for holding lists of lists of texts raised a bare ValueError
    texts = ["[{" * 20_000, "x" * 40_000 + "]"]
    body = ndjson(*[{"name": text, "tag": [[text]]} for text in texts], keys=["name"])
    result = run_export(serve(count=2, body=body), tmp_path, properties=["name"])
    assert pq.read_table(tmp_path / "users.parquet").column("name").to_pylist() == texts
    assert result.unexpected_keys == {"tag": 2}


def test_a_gzip_bomb_is_read_no_further_than_the_line_bound(serve: Any) -> None:
    inflated = 256 << 20  # one 256 MiB line, sent as ~250 KiB of gzip
    bomb = gzip.compress(b'{"name": "' + b"a" * inflated, compresslevel=9)
    server = serve(count=1, body=bomb, headers={"Content-Encoding": "gzip"})
    with client_for(server) as client, client.export_cohort_users("c1") as export:
        export.max_line_bytes = 1 << 20
        with pytest.raises(MalformedStreamError, match="line 1 of the export is longer"):
            for _ in export.iter_lines():
                pass
        assert export.bytes_read < 4 << 20  # inflated only as far as the bound, not 256 MiB


def _gzip_cut_at_a_flush_point() -> tuple[bytes, bytes]:
    """5000 records as one gzip stream, and its first 1000 records flushed but not ended
    (no last block, no trailer): the cut part inflates cleanly."""
    squeeze = zlib.compressobj(6, zlib.DEFLATED, 31)
    first = b"".join(squeeze.compress(b'{"name": "u%d"}\n' % i) for i in range(1000))
    cut = first + squeeze.flush(zlib.Z_SYNC_FLUSH)
    rest = b"".join(squeeze.compress(b'{"name": "u%d"}\n' % i) for i in range(1000, 5000))
    return cut + rest + squeeze.flush(), cut


@pytest.mark.parametrize(
    ("body", "rows"),
    [
        (_gzip_cut_at_a_flush_point()[0], 5000),
        (gzip.compress(b'{"name": "a"}\n') + gzip.compress(b'{"name": "b"}\n'), 2),
        (_gzip_cut_at_a_flush_point()[1], None),
        (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03junk", None),
    ],
    ids=["whole", "two members", "cut at a flush point", "a header and junk"],
)
def test_a_gzip_export_is_read_only_when_its_stream_ends(
    serve: Any, body: bytes, rows: int | None
) -> None:
    """A gzip body cut where it had been flushed was read as a complete export (1000 of
    5000 rows, no error)."""
    server = serve(count=5000, body=body, headers={"Content-Encoding": "gzip"})
    with client_for(server) as client, client.export_cohort_users("c1") as export:
        if rows is not None:
            assert len(list(export.iter_records())) == rows
            return
        with pytest.raises(AnalyticsStreamError, match="the gzip stream ended before its end"):
            list(export.iter_records())


def test_a_cut_body_reports_the_bytes_that_did_arrive(serve: Any) -> None:
    sent = (ndjson(*[{"name": f"user {i}"} for i in range(2000)]))[:29_945]

    def cut(wfile: BinaryIO) -> None:
        wfile.write(sent)

    server = serve(count=2000, write=cut, headers={"Content-Length": "100000"})
    with (
        client_for(server) as client,
        client.export_cohort_users("c1") as export,
        pytest.raises(AnalyticsStreamError, match="broke after 29945 bytes"),
    ):
        list(export.iter_records())


def test_a_lost_line_and_a_doubled_one_with_the_right_count_fail_naming_the_line(
    serve: Any, tmp_path: Path
) -> None:
    lines = ndjson(*[{"name": f"user {i}", "score": i} for i in range(50)]).splitlines()
    damaged = [*lines[:9], *lines[10:30], lines[30] + lines[31], *lines[32:], lines[31]]
    body = b"\n".join(damaged) + b"\n"
    with pytest.raises(ExportIncompleteError, match=r"line 30 of the export is not valid JSON"):
        run_export(serve(count=50, body=body), tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("beside", ["blank", "spread"])
def test_a_line_of_two_records_is_refused_though_another_line_makes_up_the_count(
    serve: Any, tmp_path: Path, beside: str
) -> None:
    """Arrow reads two records on one line as two rows: a blank line, or a record spread over
    two lines, in the same block made the rows as many as the lines, and the block passed as
    it was (the export wrote the 50 rows) where the line rule refuses the line."""
    lines = ndjson(*[{"name": f"user {i}", "score": i} for i in range(50)]).splitlines()
    if beside == "blank":
        damaged = [*lines[:30], lines[30] + lines[31], b"", *lines[32:]]
    else:
        spread = lines[10].replace(b", ", b",\n", 1)
        damaged = [*lines[:10], spread, *lines[11:30], lines[30] + lines[31], *lines[32:]]
    body = b"\n".join(damaged) + b"\n"
    with pytest.raises(ExportIncompleteError, match=r"line \d+ of the export is not valid JSON"):
        run_export(serve(count=50, body=body), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_json_array_is_named_as_such(serve: Any, tmp_path: Path) -> None:
    server = serve(count=2, body=b'[{"name": "a"}, {"name": "b"}]')
    with (
        client_for(server) as client,
        client.export_cohort_users("c1") as export,
        pytest.raises(MalformedStreamError, match="JSON array, not one JSON object") as caught,
    ):
        list(export.iter_records())
    assert "ended inside a line" not in str(caught.value)
    with pytest.raises(ExportIncompleteError, match="JSON array"):
        run_export(server, tmp_path)


@pytest.mark.parametrize("content_type", ["text/html; charset=utf-8", "application/x-ndjson"])
def test_an_html_login_page_is_named_as_such(serve: Any, tmp_path: Path, content_type: str) -> None:
    page = b"<!DOCTYPE html>\n<html><body><form>Sign in</form></body></html>\n"
    server = serve(count=2, body=page, headers={"Content-Type": content_type})
    with (
        client_for(server) as client,
        client.export_cohort_users("c1") as export,
        pytest.raises(MalformedStreamError, match="HTML page") as caught,
    ):
        list(export.iter_records())
    assert "export_read_timeout" not in str(caught.value)
    assert "base URL and the credentials" in str(caught.value)
    with pytest.raises(ExportIncompleteError, match="HTML page") as failed:
        run_export(server, tmp_path)
    assert "export_read_timeout" not in str(failed.value)


def test_a_trickling_server_cannot_hold_the_export_past_its_deadline(serve: Any) -> None:
    def trickle(wfile: BinaryIO) -> None:
        wfile.write(b'{"name": "a"}\n{"name": "')
        for _ in range(200):  # a byte every 50 ms for up to 10 s
            wfile.write(b"x")
            wfile.flush()
            time.sleep(0.05)

    server = serve(count=2, write=trickle)
    with (
        client_for(server, export_deadline=1.0) as client,
        client.export_cohort_users("c1") as export,
    ):
        with pytest.raises(AnalyticsStreamError, match="did not finish within its deadline"):
            list(export.iter_records())
        assert export.bytes_read < 150  # gave up after about a second, not 10


class _TrickleServer:
    """Answers every request with headers and then one body byte every 50 ms."""

    def __init__(self) -> None:
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "1000")
                self.end_headers()
                try:
                    for _ in range(200):  # 10 s at most
                        self.wfile.write(b" ")
                        self.wfile.flush()
                        time.sleep(0.05)
                except OSError:
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False  # do not wait for the trickle to end
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_trickle_cannot_hold_an_ordinary_call_or_test_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from airflow_provider_analytics.client import api

    server = _TrickleServer()
    try:
        config = ClientConfig(server.base_url, token="t0k", app_key="app", request_deadline=1.0)
        with (
            AnalyticsClient(config) as client,
            pytest.raises(AnalyticsError, match=r"no complete answer within 1 s"),
        ):
            client.list_user_properties()
        monkeypatch.setattr(api, "TEST_CONNECTION_DEADLINE", 1.0)
        slow = ClientConfig(server.base_url, token="t0k", app_key="app")  # 600 s by default
        with AnalyticsClient(slow) as client:
            ok, reason = client.test_connection()
        assert not ok and "no complete answer within 1 s" in reason
    finally:
        server.close()


def _bad_datetime_at_row_30() -> bytes:
    rows = [{"seen": "2024-01-01 10:00:00"}] * 29 + [{"seen": "2020-13-01 00:00:00"}]
    return ndjson(*rows)


def test_a_refused_value_wins_over_a_short_count(serve: Any, tmp_path: Path) -> None:
    """Values are checked once per row group; the last group's refusal comes before the count
    check, so the export fails by name at once instead of retrying a count mismatch."""
    server = serve(count=31, body=_bad_datetime_at_row_30())
    with pytest.raises(ExportDataError, match=r"column 'seen' \(row 30 of the export\)"):
        run_export(server, tmp_path, settings=ExportSettings(attempts=3, retry_delay=0.0))
    assert server.exports == 1
    assert not list(tmp_path.iterdir())


def test_a_refused_value_wins_over_a_later_cut(serve: Any, tmp_path: Path) -> None:
    """A value refused in rows read before the stream was cut fails the export by name; a
    retry would meet it again."""
    rows = [{"seen": "2024-01-01 10:00:00"}] * 30
    rows[9] = {"seen": "2020-13-01 00:00:00"}
    server = serve(count=31, body=ndjson(*rows) + b'{"seen": "2024-01-01')
    settings = ExportSettings(attempts=3, retry_delay=0.0, block_bytes=256, chunk_bytes=64)
    with pytest.raises(ExportDataError, match=r"column 'seen' \(row 10 of the export\)"):
        run_export(server, tmp_path, settings=settings)
    assert server.exports == 1
    assert not list(tmp_path.iterdir())


def _cut_error_body(wfile: BinaryIO) -> None:
    wfile.write(b'{"code":50')  # of the 1000 bytes announced


ERROR_BODIES = {
    "a 500 whose body is cut": (500, _cut_error_body, {"Content-Length": "1000"}),
    "a 502 whose gzip is corrupt": (
        502,
        lambda wfile: wfile.write(b"\x1f\x8b\x08\x00garbagegarbage"),
        {"Content-Encoding": "gzip", "Content-Length": "18"},
    ),
}


@pytest.mark.parametrize("name", list(ERROR_BODIES))
def test_an_unreadable_error_answer_is_retried_and_fails_by_name(
    serve: Any, tmp_path: Path, name: str
) -> None:
    """The error answer's body was read after the transport's error handling (the export is
    streamed): requests' own exception escaped, after one attempt, from the client and the job."""
    status, write, headers = ERROR_BODIES[name]
    server = serve(count=2, status=status, write=write, headers=headers)
    with (
        client_for(server, max_attempts=3, backoff_base=0.01) as client,
        pytest.raises(AnalyticsTransportError, match="no complete answer after 3 attempt"),
    ):
        client.export_cohort_users("c1", progress=False)
    assert server.exports == 3
    with pytest.raises(AnalyticsError):
        run_export(server, tmp_path)


def test_a_trickling_error_answer_cannot_hold_the_export_past_the_call_deadline(
    serve: Any,
) -> None:
    def trickle(wfile: BinaryIO) -> None:
        for _ in range(200):  # a byte every 50 ms for up to 10 s
            wfile.write(b" ")
            wfile.flush()
            time.sleep(0.05)

    server = serve(count=2, status=503, write=trickle, headers={"Content-Length": "1000"})
    started = time.monotonic()
    with (
        client_for(server, max_attempts=1, request_deadline=1.0) as client,
        pytest.raises(AnalyticsTransportError, match=r"no complete answer within 1 s"),
    ):
        client.export_cohort_users("c1", progress=False)
    assert time.monotonic() - started < 5
