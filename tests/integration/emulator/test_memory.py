"""A ten-million-user cohort is served in flat memory: once the emulator process has warmed up
(a page from either end of the cohort, the stream's first rows), streaming on to two million
rows leaves its peak resident memory where it was (read from /proc, not timed)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

import pytest
import requests
from analytics_emulator.process import EmulatorProcess

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

CREDENTIALS: Final = {"token": "memory-token", "app_key": "memory-key", "xtoken": "memory-x"}
HEADERS: Final = {"token": "memory-token", "appKey": "memory-key"}
CUT_ROWS: Final = 2_000_000
WARM_ROWS: Final = 500_000
GROWTH_BOUND_MIB: Final = 48
"""Caching the blocks of the last 1.5 million rows would take several hundred MiB."""


def _memory_mib(pid: int) -> dict[str, float]:
    """The process's resident memory now (VmRSS) and at its peak (VmHWM), in MiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {key: int(fields[key].split()[0]) / 1024 for key in ("VmRSS", "VmHWM")}


def _page(base_url: str, number: int) -> None:
    page = requests.post(
        base_url + "/uba/api/cohort/users",
        json={"cohortCode": "cohort_massive", "page": number, "pageSize": 10_000},
        headers=HEADERS,
        timeout=300,
    )
    assert page.status_code == 200 and page.json()["size"] == 10_000


def test_a_ten_million_cohort_streams_in_flat_memory() -> None:
    options = [f"--proxy-cut=cohort_massive:rows={CUT_ROWS},ending=drop"]
    with EmulatorProcess(credentials=CREDENTIALS, options=options) as emulator:
        assert emulator.process is not None
        pid = emulator.process.pid
        for number in (1, 1000):
            _page(emulator.base_url, number)
        response = requests.post(
            emulator.base_url + "/uba/api/cohort/users/export",
            json={"cohortCode": "cohort_massive"},  # every default property
            headers=HEADERS,
            stream=True,
            timeout=300,
        )
        assert response.status_code == 200
        rows, warm = 0, None
        with pytest.raises(requests.exceptions.ChunkedEncodingError):  # the proxy's cut
            for chunk in response.iter_content(1 << 20):
                rows += chunk.count(b"\n")
                if warm is None and rows >= WARM_ROWS:
                    warm = _memory_mib(pid)
        after = _memory_mib(pid)
    assert rows == CUT_ROWS and warm is not None
    print(f"emulator memory (MiB) after {WARM_ROWS:,} rows: {warm}; after {rows:,}: {after}")
    assert after["VmHWM"] - warm["VmHWM"] < GROWTH_BOUND_MIB, (warm, after)
    assert after["VmRSS"] - warm["VmRSS"] < GROWTH_BOUND_MIB, (warm, after)
