"""The load benchmarks, scaled down to run in the suite: concurrent exports in a process pool
lose no row and stay within the memory target; many small calls from many threads make no
error and reuse their connections."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.reliability.results import record

if TYPE_CHECKING:
    from collections.abc import Sequence

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
ROWS, EXPORTS = 20_000, 4
CALLS, THREADS = 200, 16


def run_benchmark(script: str, arguments: Sequence[str], out: Path) -> dict[str, Any]:
    """Run a benchmark script to completion and return the figures it wrote."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *arguments, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{script} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    figures: dict[str, Any] = json.loads(out.read_text())
    return figures


def test_concurrent_exports_in_a_process_pool(tmp_path: Path) -> None:
    figures = run_benchmark(
        "load_exports.py", ["--rows", str(ROWS), "--exports", str(EXPORTS)], tmp_path / "out.json"
    )
    record("load_small", {"benchmark": "load_exports", **figures})
    results = figures["results"]
    assert len(results) == EXPORTS
    for result in results:
        assert result["rows"] == result["expected_rows"] == ROWS
        assert result["file_rows"] == result["distinct_ids"] == ROWS
    assert figures["rows_lost"] == 0
    assert figures["sum_of_peak_rss_mib"] < figures["rss_target_mib"]


def test_many_small_calls_reuse_connections(tmp_path: Path) -> None:
    figures = run_benchmark(
        "small_calls.py", ["--calls", str(CALLS), "--threads", str(THREADS)], tmp_path / "out.json"
    )
    record("load_small", {"benchmark": "small_calls", **figures})
    assert figures["errors"] == 0, figures["error_samples"]
    assert figures["requests_seen"] == CALLS
    assert 1 <= figures["connections_opened"] <= THREADS
