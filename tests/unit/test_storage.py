"""Atomic object writes (storage.py) on real local object storage paths."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from airflow.sdk import ObjectStoragePath

from airflow_provider_analytics.storage import atomic_destination, write_table_atomically

if TYPE_CHECKING:
    from pathlib import Path


def test_write_creates_parents_and_replaces_on_rerun(tmp_path: Path) -> None:
    target = ObjectStoragePath(f"file://{tmp_path}/report/dt=2024-01-05/part.parquet")
    first = write_table_atomically(pa.table({"x": [1, 2, 3]}), target)
    assert first == target.stat().st_size > 0
    write_table_atomically(pa.table({"x": [9]}), target)
    assert pq.read_table(str(tmp_path / "report/dt=2024-01-05/part.parquet")).to_pydict() == {
        "x": [9]
    }
    assert [p.name for p in (tmp_path / "report/dt=2024-01-05").iterdir()] == ["part.parquet"]


def test_failure_leaves_the_old_object_and_no_temporary(tmp_path: Path) -> None:
    target = ObjectStoragePath(f"file://{tmp_path}/out/users.parquet")
    write_table_atomically(pa.table({"x": [1]}), target)
    with (
        pytest.raises(RuntimeError, match="mid-write"),
        atomic_destination(target) as temporary,
        temporary.open("wb") as sink,
    ):
        sink.write(b"PAR1 half a file")
        assert temporary.name.startswith(".users.parquet.")
        raise RuntimeError("mid-write")
    assert pq.read_table(str(tmp_path / "out/users.parquet")).to_pydict() == {"x": [1]}
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["users.parquet"]


def test_failure_on_first_write_leaves_nothing(tmp_path: Path) -> None:
    target = ObjectStoragePath(f"file://{tmp_path}/out/users.parquet")
    with pytest.raises(KeyboardInterrupt), atomic_destination(target) as temporary:
        temporary.write_bytes(b"partial")
        raise KeyboardInterrupt
    assert not target.exists()
    assert list((tmp_path / "out").iterdir()) == []
