"""The export reads one way: a script (``iter_lines``, ``iter_records``) and a DAG (the Parquet
export) refuse the same lines with the same words, and a body that is not cohort user records
fails by name with nothing written. Each case is sent by a local server (issue: every answer
checked, item 5).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
from airflow_provider_analytics.core.cohort_records import ExportRecordError
from airflow_provider_analytics.core.ndjson import MalformedStreamError
from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.export.stream import (
    ExportIncompleteError,
    export_cohort_to_parquet,
)
from tests.integration.export_servers import ExportServer

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

PLAN = [
    {"id": "user_id", "dataType": "number"},
    {"id": "score", "dataType": "number"},
    {"id": "name", "dataType": "string"},
    {"id": "vip", "dataType": "boolean"},
]
KEYS = [item["id"] for item in PLAN]
ONCE = ExportSettings(attempts=1, retry_delay=0.0)
RETRYING = ExportSettings(attempts=3, retry_delay=0.0)


def line(**values: Any) -> bytes:
    return json.dumps({**dict.fromkeys(KEYS), **values}, ensure_ascii=False).encode()


GOOD = [
    line(user_id=4255875062385414000 + i, score=i + 0.5, name=f"u{i}", vip=True) for i in (1, 2)
]
"""Two good lines: ``score`` holds decimals (double), ``user_id`` integers beyond 2**53."""

HOSTILE = {
    # a double column: Arrow's parser reads these tokens as numbers, the rule refuses them
    "NaN in a double column": line(score=0.5).replace(b"0.5", b"NaN"),
    "NaN beside a key not asked for": line(score=0.5)[:-1].replace(b"0.5", b"NaN") + b', "x": 1}',
    "Infinity in a double column": line(score=0.5).replace(b"0.5", b"Infinity"),
    "-Infinity in an integer column": line(user_id=7).replace(b"7", b"-Infinity"),
    "a repeated key": line(name="a")[:-1] + b', "name": "b"}',
    "a repeated key with the same value": line(vip=True)[:-1] + b', "vip": true}',
    "invalid UTF-8 in a value": line(name="cafe").replace(b"cafe", b"caf\xe9"),
    "invalid UTF-8 in a key not asked for": line()[:-1] + b', "\xff": 1}',
    "half a surrogate pair": line(name="cafe").replace(b"cafe", b"caf\\ud800"),
}
"""Hostile third lines and what makes them so (all valid UTF-8 JSON objects otherwise)."""
EXPECTED = {
    "NaN in a double column": "is not strict JSON: NaN is not a JSON value",
    "NaN beside a key not asked for": "is not strict JSON: NaN is not a JSON value",
    "Infinity in a double column": "is not strict JSON: Infinity is not a JSON value",
    "-Infinity in an integer column": "is not strict JSON: -Infinity is not a JSON value",
    "a repeated key": "is not strict JSON: the key 'name' is given twice in one object",
    "a repeated key with the same value": "the key 'vip' is given twice in one object",
    "invalid UTF-8 in a value": "is not valid UTF-8",
    "invalid UTF-8 in a key not asked for": "is not valid UTF-8",
    "half a surrogate pair": "names half a surrogate pair",
}


def client_for(server: ExportServer) -> AnalyticsClient:
    return AnalyticsClient(ClientConfig(server.base_url, token="t0k", app_key="app"))


@pytest.fixture
def serve() -> Iterator[Callable[..., ExportServer]]:
    servers: list[ExportServer] = []

    def start(body: bytes, count: int, **kwargs: Any) -> ExportServer:
        server = ExportServer(plan=PLAN, count=count, body=body, **kwargs).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)


def _by_lines(server: ExportServer, tmp_path: Path) -> Any:
    with client_for(server) as client, client.export_cohort_users("c1") as export:
        return list(export.iter_lines())


def _by_records(server: ExportServer, tmp_path: Path) -> Any:
    with client_for(server) as client, client.export_cohort_users("c1") as export:
        return list(export.iter_records(keys=KEYS))


def _by_parquet(server: ExportServer, tmp_path: Path) -> Any:
    with client_for(server) as client:
        return export_cohort_to_parquet(
            client, "c1", tmp_path / "users.parquet", properties=KEYS, settings=ONCE
        )


PATHS = {"iter_lines": _by_lines, "iter_records": _by_records, "parquet": _by_parquet}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("case", list(HOSTILE))
def test_every_reader_refuses_the_same_hostile_line_naming_it(
    serve: Callable[..., ExportServer], tmp_path: Path, case: str, path: str
) -> None:
    body = b"\n".join([*GOOD, HOSTILE[case], *GOOD]) + b"\n"
    server = serve(body, count=5)
    with pytest.raises((MalformedStreamError, ExportIncompleteError)) as refused:
        PATHS[path](server, tmp_path)
    error = refused.value
    if path == "parquet":  # the job's attempts end in ExportIncompleteError, the cause inside
        assert isinstance(error, ExportIncompleteError)
        assert isinstance(error.__cause__, MalformedStreamError)
    else:
        assert str(error).startswith("export_cohort_users: ")
    assert "line 3 of the export" in str(error) and EXPECTED[case] in str(error), str(error)
    assert list(tmp_path.iterdir()) == []


def test_the_three_readers_give_the_same_words(
    serve: Callable[..., ExportServer], tmp_path: Path
) -> None:
    """Not just the same line: the same sentence, whoever reads it."""
    body = b"\n".join([*GOOD, HOSTILE["a repeated key"]]) + b"\n"
    messages = []
    for read in PATHS.values():
        with pytest.raises((MalformedStreamError, ExportIncompleteError)) as refused:
            read(serve(body, count=3), tmp_path)
        error = refused.value
        cause = error.__cause__ if isinstance(error, ExportIncompleteError) else error
        messages.append(str(cause).removeprefix("export_cohort_users: "))
    assert len(set(messages)) == 1, messages
    assert messages[0].startswith("line 3 of the export is not strict JSON")


ERROR_OBJECT = (
    b'{"code": 500, "msg": "\xe6\x9c\x8d\xe5\x8a\xa1\xe5\xbc\x82\xe5\xb8\xb8", "data": null}\n'
)
"""The platform's error body (msg: "service error"), sent as the export's body with 200."""


def test_an_error_object_sent_with_200_fails_the_export_by_name_with_nothing_written(
    serve: Callable[..., ExportServer], tmp_path: Path
) -> None:
    """It used to be written as one row of nulls (the count said 1 user) and the task
    succeeded. It is not a stream fault either: no second attempt."""
    server = serve(ERROR_OBJECT, count=1)
    with client_for(server) as client, pytest.raises(ExportRecordError) as refused:
        export_cohort_to_parquet(client, "c1", tmp_path / "users.parquet", settings=RETRYING)
    message = str(refused.value)
    assert message.startswith("export_cohort_users: row 1 of the export is the platform's error")
    assert "code 500" in message and "服务异常" in message
    assert refused.value.code == 500 and refused.value.msg == "服务异常"
    assert refused.value.operation == "export_cohort_users"
    assert server.exports == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("keys", [None, KEYS], ids=["keys unknown", "keys given"])
def test_a_script_reading_records_meets_the_error_object_by_name(
    serve: Callable[..., ExportServer], keys: list[str] | None
) -> None:
    server = serve(ERROR_OBJECT, count=1)
    with (
        client_for(server) as client,
        client.export_cohort_users("c1") as export,
        pytest.raises(ExportRecordError, match="row 1 of the export is the platform's error"),
    ):
        list(export.iter_records(keys=keys))


def test_a_record_without_a_requested_key_fails_naming_the_row_and_the_key(
    serve: Callable[..., ExportServer], tmp_path: Path
) -> None:
    lines = [line(user_id=i, score=0.5, name="x", vip=False) for i in range(40)]
    record = json.loads(lines[30])
    del record["vip"]
    lines[30] = json.dumps(record).encode()
    server = serve(b"\n".join(lines) + b"\n", count=40)
    with client_for(server) as client, pytest.raises(ExportRecordError) as refused:
        export_cohort_to_parquet(client, "c1", tmp_path / "users.parquet", settings=RETRYING)
    assert "row 31 of the export lacks the key 'vip' that the export asked for" in str(
        refused.value
    )
    assert server.exports == 1
    assert list(tmp_path.iterdir()) == []
    with (
        client_for(server) as client,
        client.export_cohort_users("c1") as export,
        pytest.raises(ExportRecordError, match="row 31 of the export lacks the key 'vip'"),
    ):
        list(export.iter_records(keys=KEYS))


def test_null_is_a_value_a_requested_key_may_hold(
    serve: Callable[..., ExportServer], tmp_path: Path
) -> None:
    body = line() + b"\n" + line(user_id=1) + b"\n"
    with client_for(serve(body, count=2)) as client:
        result = export_cohort_to_parquet(client, "c1", tmp_path / "users.parquet", settings=ONCE)
    assert result.rows == 2
    assert pq.read_table(tmp_path / "users.parquet").column("user_id").to_pylist() == [None, 1]


def test_a_key_not_asked_for_is_counted_and_logged_once(
    serve: Callable[..., ExportServer], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lines = [line(user_id=i, name="x")[:-1] + b', "tag.new": "a"}' for i in range(30)]
    lines[4] = lines[4][:-1] + b', "$extra": null}'
    server = serve(b"\n".join(lines) + b"\n", count=30)
    with caplog.at_level(logging.WARNING), client_for(server) as client:
        result = export_cohort_to_parquet(client, "c1", tmp_path / "users.parquet", settings=ONCE)
    assert result.unexpected_keys == {"tag.new": 30, "$extra": 1}
    assert result.as_dict()["unexpected_keys"] == {"tag.new": 30, "$extra": 1}
    assert pq.read_table(tmp_path / "users.parquet").column_names == KEYS  # not written
    warned = [r.getMessage() for r in caplog.records if "did not ask for" in r.getMessage()]
    assert len(warned) == 2
    assert "row 1 of the export holds the key 'tag.new'" in warned[0]
    assert "row 5 of the export holds the key '$extra'" in warned[1]
    with client_for(server) as client, client.export_cohort_users("c1") as export:
        records = list(export.iter_records(keys=KEYS))
        assert len(records) == 30 and export.unexpected_keys == {"tag.new": 30, "$extra": 1}


def test_a_key_that_echoes_the_token_is_masked_in_the_log_and_the_result(
    serve: Callable[..., ExportServer], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    token = "tok-W4-secret-9f"
    lines = [line(user_id=i)[:-1] + f', "{token}": 1}}'.encode() for i in range(20)]
    server = serve(b"\n".join(lines) + b"\n", count=20)
    config = ClientConfig(server.base_url, token=token, app_key="app")
    with caplog.at_level(logging.WARNING), AnalyticsClient(config) as client:
        result = export_cohort_to_parquet(client, "c1", tmp_path / "users.parquet", settings=ONCE)
        with client.export_cohort_users("c1") as export:
            assert len(list(export.iter_records(keys=KEYS))) == 20
            assert export.unexpected_keys == {"***": 20}
    assert result.as_dict()["unexpected_keys"] == {"***": 20}
    assert result.unexpected_keys_unlisted == 0
    assert token not in caplog.text and "'***'" in caplog.text
