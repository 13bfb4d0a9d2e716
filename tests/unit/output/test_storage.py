"""Atomic object writes (output/storage.py) on real local object storage paths."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from airflow.sdk import ObjectStoragePath

from airflow_provider_analytics.output.parquet import write_table_atomically
from airflow_provider_analytics.output.storage import AnalyticsStorageError, atomic_destination

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


_FILE_SIZE_LIMITED_WRITE = """
import resource, signal, sys
from pathlib import Path
import pyarrow as pa
from airflow_provider_analytics.output.parquet import write_table_atomically
from airflow_provider_analytics.output.storage import AnalyticsStorageError

target = Path(sys.argv[1])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    write_table_atomically(pa.table({"x": list(range(200_000))}), target, compression="none")
except AnalyticsStorageError as error:
    assert isinstance(error, OSError)
    print(f"{type(error.__cause__).__name__}|{error.errno}|{error}")
"""


def test_a_storage_failure_names_the_destination_and_the_cohort(tmp_path: Path) -> None:
    """A real operating-system refusal (a file-size limit: EFBIG, as a full disk gives
    ENOSPC) mid-write: a clear error, the old object kept, no temporary left."""
    import errno
    import subprocess
    import sys

    folder = tmp_path / "users/cohort=vip/dt=2024-01-15"
    target = f"file://{folder}/users.parquet"
    write_table_atomically(pa.table({"x": [1]}), ObjectStoragePath(target))
    done = subprocess.run(
        [sys.executable, "-c", _FILE_SIZE_LIMITED_WRITE, str(folder / "users.parquet")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    cause, code, message = done.stdout.strip().split("|", 2)
    assert cause == "OSError" and int(code) == errno.EFBIG
    assert str(folder / "users.parquet") in message
    assert "(cohort=vip, dt=2024-01-15)" in message
    assert "Nothing was replaced" in message
    assert pq.read_table(str(folder / "users.parquet")).to_pydict() == {"x": [1]}
    assert [p.name for p in folder.iterdir()] == ["users.parquet"]


def test_a_destination_below_a_file_is_a_storage_error_naming_the_subject(tmp_path: Path) -> None:
    (tmp_path / "plain-file").write_text("not a folder")
    target = ObjectStoragePath(f"file://{tmp_path}/plain-file/users.parquet")
    with pytest.raises(AnalyticsStorageError) as caught:
        write_table_atomically(pa.table({"x": [1]}), target)
    assert "plain-file/users.parquet" in str(caught.value)
    with (
        pytest.raises(AnalyticsStorageError, match=r"\(cohort 'vip'\)"),
        atomic_destination(target, subject="cohort 'vip'") as temporary,
    ):
        temporary.write_bytes(b"x")


def test_errors_that_are_not_the_storage_pass_through(tmp_path: Path) -> None:
    target = ObjectStoragePath(f"file://{tmp_path}/out/users.parquet")
    with pytest.raises(TimeoutError), atomic_destination(target) as temporary:
        temporary.write_bytes(b"x")
        raise TimeoutError("the stream stalled")
    assert list((tmp_path / "out").iterdir()) == []
