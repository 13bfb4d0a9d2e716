"""The staging folder of a cohort read in shards, on a real file system, against the emulator:
the package never follows a symbolic link or a pipe where it deletes or reads its own files.

- a staging folder planted as a link to another folder (the default Iceberg staging in the
  temporary space, or a Parquet prefix's ``.staging``) is refused by name, and the clean-up
  deletes nothing in the folder it leads to;
- ``hold.json`` as a link to a named pipe is refused by name at once, instead of blocking
  the export in ``open()`` with no deadline;
- a part overwritten by a link (to another Parquet file) is refused by name, nothing is
  published.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_analytics.client.validation import cohort_query
from airflow_provider_analytics.core.errors import ShardStagingError
from airflow_provider_analytics.core.identity import cohort_identity
from airflow_provider_analytics.export.cohort_day import (
    export_cohort_day,
    publish_shards,
    start_shards,
)
from airflow_provider_analytics.export.shard_hold import HOLD_FILE
from airflow_provider_analytics.export.stream import prepare_export
from airflow_provider_analytics.output.iceberg_destination import IcebergDestination
from airflow_provider_analytics.output.parquet_destination import ParquetDestination

if TYPE_CHECKING:
    from airflow_provider_analytics.client import AnalyticsClient
    from airflow_provider_analytics.output.destination import Destination

pytestmark = pytest.mark.integration

DAY = "2024-01-15"
CODE = "cohort_small"
SHARDED = {"mode": "pages", "page_size": 100, "shard_rows": 500}


def iceberg(tmp_path: Path) -> IcebergDestination:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog(
        "lake", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/wh"
    )
    return IcebergDestination(lambda: catalog, "lake", "analytics.users", cohort_identity(CODE))


def parquet(tmp_path: Path) -> ParquetDestination:
    return ParquetDestination(f"{tmp_path.as_uri()}/out/users/", cohort_identity(CODE))


def export(client: AnalyticsClient, destination: Destination) -> dict[str, Any]:
    return export_cohort_day(
        client, cohort_query(CODE), destination, DAY, timezone="UTC", **SHARDED
    )


def plant(top: Path, rest: str, tmp_path: Path) -> Path:
    """Replace ``top`` (a folder the package makes) by a link to a victim's folder holding
    ``rest`` (the staging folder's path below ``top``) and a file in it; returns the file."""
    victim = tmp_path / "victim"
    kept = victim / rest / "precious.parquet"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(b"another team's data")
    if top.is_dir() and not top.is_symlink():
        shutil.rmtree(top)
    top.parent.mkdir(parents=True, exist_ok=True)
    top.symlink_to(victim, target_is_directory=True)
    return kept


@pytest.fixture
def temporary_space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The worker's temporary space, a folder of the test's own."""
    space = tmp_path / "tmp"
    space.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(space))
    return space


def test_a_planted_default_iceberg_staging_deletes_nothing_elsewhere(
    client: AnalyticsClient, tmp_path: Path, temporary_space: Path
) -> None:
    """The default staging's place in the temporary space is fixed (a retry must find it), so
    another user can create it first as a link: the export refuses it and the folder the link
    leads to keeps its file."""
    target = iceberg(tmp_path)
    staging = Path(target.staging(DAY).path)
    rest = staging.relative_to(temporary_space)
    top = temporary_space / rest.parts[0]
    kept = plant(top, str(rest.relative_to(rest.parts[0])), tmp_path)

    with pytest.raises(ShardStagingError, match=r"not a folder|symbolic link"):
        export(client, iceberg(tmp_path))
    assert kept.read_bytes() == b"another team's data"


def test_a_planted_parquet_staging_deletes_nothing_elsewhere(
    client: AnalyticsClient, tmp_path: Path
) -> None:
    """``<prefix>.staging`` made a link to another folder by someone who may write beside the
    prefix: refused, and the other folder keeps its file."""
    target = parquet(tmp_path)
    staging = Path(target.staging(DAY).path)
    top = tmp_path / "out" / "users.staging"
    kept = plant(top, str(staging.relative_to(top)), tmp_path)

    with pytest.raises(ShardStagingError, match="symbolic link"):
        export(client, parquet(tmp_path))
    assert kept.read_bytes() == b"another team's data"
    assert not (tmp_path / "out/users").exists()  # nothing published


def test_a_hold_record_linked_to_a_pipe_is_refused_at_once(
    client: AnalyticsClient, tmp_path: Path
) -> None:
    """``hold.json`` as a link to a named pipe: reading it would wait for a writer for ever;
    the reader refuses it by name instead."""
    target = parquet(tmp_path)
    prepared = prepare_export(client, cohort_query(CODE), timezone="UTC")
    plan, reader = start_shards(client, prepared, target, DAY, 100, 500)
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    (Path(target.staging(DAY).path) / HOLD_FILE).symlink_to(pipe)
    outcome: list[BaseException | int] = []

    def read() -> None:
        try:
            outcome.append(reader.read(plan.shards[0]))
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(timeout=30)
    try:
        assert not thread.is_alive(), "the reader is blocked opening the pipe"
    finally:
        # a reader blocked in open() is let go by a writer that opens the pipe
        if thread.is_alive():
            os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
            thread.join(timeout=30)
    assert len(outcome) == 1 and isinstance(outcome[0], ShardStagingError), outcome
    assert HOLD_FILE in str(outcome[0])


def test_a_part_overwritten_by_a_link_is_refused_and_nothing_published(
    client: AnalyticsClient, tmp_path: Path
) -> None:
    """Every shard read, then part 0 replaced by a link to another Parquet file (here a copy
    of itself, so that it would pass for the part): publication refuses it by name."""
    target = parquet(tmp_path)
    prepared = prepare_export(client, cohort_query(CODE), timezone="UTC")
    plan, reader = start_shards(client, prepared, target, DAY, 100, 500)
    for shard in plan.shards:
        reader.read(shard)
    staging = Path(target.staging(DAY).path)
    first = staging / "part-00000.parquet"
    elsewhere = tmp_path / "elsewhere.parquet"
    shutil.copyfile(first, elsewhere)
    first.unlink()
    first.symlink_to(elsewhere)

    with pytest.raises(ShardStagingError, match="symbolic link"):
        publish_shards(client, plan, target, DAY)
    assert not (tmp_path / "out/users").exists()
