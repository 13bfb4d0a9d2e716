"""Temporaries left by a writer killed outright are removed by the next write of the object."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from typing import TYPE_CHECKING

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from moto.server import ThreadedMotoServer
from upath import UPath

from airflow_provider_analytics.core.errors import AnalyticsConfigurationError
from airflow_provider_analytics.output.parquet import write_table_atomically
from airflow_provider_analytics.output.storage import (
    STALE_TEMPORARY_AGE_VARIABLE,
    remove_stale_temporaries,
    stale_temporary_age,
)

if TYPE_CHECKING:
    from pathlib import Path

HOUR = 3600.0


@pytest.fixture(autouse=True)
def default_age(monkeypatch) -> None:
    monkeypatch.delenv(STALE_TEMPORARY_AGE_VARIABLE, raising=False)


KILLED_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from upath import UPath
    from airflow_provider_analytics.output.storage import atomic_destination

    with atomic_destination(UPath(sys.argv[1])) as temporary, temporary.open("wb") as sink:
        sink.write(b"PAR1 half a file")
        sink.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    """
)


def kill_a_writer(target: Path) -> Path:
    """Run a real writer of ``target`` in a subprocess and SIGKILL it mid-write."""
    done = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, f"file://{target}"], capture_output=True, timeout=60
    )
    assert done.returncode == -9, done.stderr.decode()[-2000:]
    (leftover,) = [p for p in target.parent.iterdir() if p.name.endswith(".inprogress")]
    assert leftover.name.startswith(f".{target.name}.")
    return leftover


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_the_next_write_removes_what_a_killed_writer_left(tmp_path: Path) -> None:
    target = tmp_path / "cohort=c/dt=2024-01-15/users.parquet"
    leftover = kill_a_writer(target)
    age(leftover, 2 * HOUR)
    write_table_atomically(pa.table({"x": [1, 2]}), UPath(f"file://{target}"))
    assert sorted(p.name for p in target.parent.iterdir()) == ["users.parquet"]
    assert pq.read_table(target).to_pydict() == {"x": [1, 2]}


def test_young_temporaries_and_other_objects_temporaries_are_kept(tmp_path: Path) -> None:
    directory = tmp_path / "dt=2024-01-15"
    directory.mkdir()
    young = directory / ".users.parquet.aaaa.inprogress"
    old_other = directory / ".events.parquet.bbbb.inprogress"
    old_own = directory / ".users.parquet.cccc.inprogress"
    not_temporary = directory / ".users.parquet.dddd"
    for path in (young, old_other, old_own, not_temporary):
        path.write_bytes(b"x")
    for path in (old_other, old_own, not_temporary):
        age(path, 2 * HOUR)
    age(young, 0.5 * HOUR)
    removed = remove_stale_temporaries(
        UPath(f"file://{directory}/users.parquet"), older_than=stale_temporary_age()
    )
    assert removed == [old_own.name]
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        [young.name, old_other.name, not_temporary.name]
    )


def test_a_missing_directory_is_nothing_to_clean(tmp_path: Path) -> None:
    target = UPath(f"file://{tmp_path}/nowhere/users.parquet")
    assert remove_stale_temporaries(target, older_than=stale_temporary_age()) == []


@pytest.mark.parametrize(("raw", "seconds"), [("0", 0.0), ("90", 90.0), (" 2.5 ", 2.5)])
def test_the_age_comes_from_the_environment(monkeypatch, raw: str, seconds: float) -> None:
    monkeypatch.setenv(STALE_TEMPORARY_AGE_VARIABLE, raw)
    assert stale_temporary_age().total_seconds() == seconds


@pytest.mark.parametrize("raw", ["-1", "an hour", "nan", "inf", "1e309", "1e20"])
def test_a_bad_age_names_the_variable(monkeypatch, raw: str) -> None:
    monkeypatch.setenv(STALE_TEMPORARY_AGE_VARIABLE, raw)
    with pytest.raises(AnalyticsConfigurationError, match=STALE_TEMPORARY_AGE_VARIABLE):
        stale_temporary_age()


@pytest.mark.integration
def test_stale_temporaries_are_removed_on_s3() -> None:
    """On an S3-protocol server the age comes from the object's LastModified."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        client.create_bucket(Bucket="lake")
        client.put_object(Bucket="lake", Key="t/dt=1/.users.parquet.ab.inprogress", Body=b"x")
        client.put_object(Bucket="lake", Key="t/dt=1/.events.parquet.cd.inprogress", Body=b"x")
        target = UPath(
            "s3://lake/t/dt=1/users.parquet",
            key="testing",
            secret="testing",
            client_kwargs={"endpoint_url": endpoint, "region_name": "us-east-1"},
        )
        now = time.time()
        kept = remove_stale_temporaries(target, older_than=stale_temporary_age(), now=now)
        assert kept == []
        later = remove_stale_temporaries(
            target, older_than=stale_temporary_age(), now=now + 2 * HOUR
        )
        assert later == [".users.parquet.ab.inprogress"]
        listed = client.list_objects_v2(Bucket="lake", Prefix="t/")["Contents"]
        assert [item["Key"] for item in listed] == ["t/dt=1/.events.parquet.cd.inprogress"]
    finally:
        server.stop()
