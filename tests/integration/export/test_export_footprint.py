"""What an export loads into the worker's process: no pandas.

pyarrow imports pandas (about 40 MiB of a worker's memory) the first time a Python value is
converted to Arrow: ``pa.array``, ``pa.scalar``, or a bare constant given to a compute
function. An export needs none of that on its way, so it must leave pandas unloaded; a fresh
interpreter runs a whole export (every column kind, markers in typed columns, datetimes,
numbers beyond 2**53, a decimal override, a retry) and reports the modules it loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import pyarrow.parquet as pq

from tests.integration.export_servers import ExportServer

if TYPE_CHECKING:
    from pathlib import Path

MARKER = "(已脱敏)"
PLAN = [
    {"id": "user_id", "dataType": "number"},
    {"id": "score", "dataType": "number"},
    {"id": "name", "dataType": "string"},
    {"id": "phone", "dataType": "string"},
    {"id": "vip", "dataType": "boolean"},
    {"id": "seen", "dataType": "datetime"},
    {"id": "labels", "dataType": "array<string>"},
]
ROWS = 3_000


def _record(row: int) -> dict[str, object]:
    record: dict[str, object] = {
        "user_id": -4635244755532264000 + row * 1000,
        "score": row / 7,
        "name": f"用户{row}",
        "phone": MARKER,
        "vip": row % 2 == 0,
        "seen": f"2024-01-{row % 28 + 1:02d} 10:00:00",
        "labels": ["a", None] if row % 3 else None,
    }
    if row % 500 == 499:  # a marker in a typed column, in turn in each kind
        column = ["score", "vip", "seen", "labels"][(row // 500) % 4]
        record[column] = MARKER
    return record


_CHILD = textwrap.dedent(
    """
    import json, pathlib, sys
    from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
    from airflow_provider_analytics.export.stream import export_cohort_to_parquet
    from airflow_provider_analytics.export.settings import ExportSettings

    base_url, destination = sys.argv[1], pathlib.Path(sys.argv[2])
    with AnalyticsClient(ClientConfig(base_url, token="t0k", app_key="app")) as client:
        result = export_cohort_to_parquet(
            client,
            "c1",
            destination,
            timezone="Asia/Shanghai",
            schema_overrides={"user_id": "decimal"},
            settings=ExportSettings(block_bytes=64 << 10, retry_delay=0.0),
        )
    heavy = ("pandas", "polars", "duckdb", "pyiceberg")
    print(json.dumps({
        "rows": result.rows,
        "masked": result.masked_values,
        "attempts": result.attempts,
        "loaded": sorted(name for name in heavy if name in sys.modules),
    }))
    """
)


def test_an_export_leaves_pandas_unloaded(tmp_path: Path) -> None:
    body = b"".join(
        json.dumps(_record(row), ensure_ascii=False).encode() + b"\n" for row in range(ROWS)
    )
    cut = body[: len(body) // 2]  # the first attempt breaks half-way: the retry path runs too
    bodies = iter([cut, body])

    def write(sink: object) -> None:
        sink.write(next(bodies))  # type: ignore[attr-defined]

    destination = tmp_path / "users.parquet"
    with ExportServer(plan=PLAN, count=ROWS, write=write) as server:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, server.base_url, str(destination)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["loaded"] == []
    assert report["rows"] == ROWS
    assert report["attempts"] == 2
    # markers: the string column keeps its 3,000 as text; the typed ones are counted
    assert report["masked"] == ROWS // 500
    table = pq.read_table(destination)
    assert table.num_rows == ROWS
    assert table.column("phone").to_pylist() == [MARKER] * ROWS
    marked_scores = sum(1 for row in range(ROWS) if _record(row)["score"] == MARKER)
    assert table.column("score").null_count == marked_scores > 0
