"""What the emulator costs when it plays a platform at scale: a ten-million-user cohort read as
the stream (up to a proxy cut) and as pages of the paged listing, with the emulator process's
resident memory after each (VmRSS, and the peak VmHWM, from /proc; Linux only).

The figures are printed, never asserted: they tell how fast a test or a benchmark of the sharded
export can read the emulator, and that its memory does not grow with the rows served.

Usage: python benchmarks/emulator_scale.py [--rows 2000000] [--pages 40] [--properties all|few]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Final

import requests
from analytics_emulator.process import EmulatorProcess

CREDENTIALS: Final = {"token": "bench-token", "app_key": "bench-key", "xtoken": "bench-x"}
HEADERS: Final = {"token": "bench-token", "appKey": "bench-key"}
COHORT: Final = "cohort_massive"
USERS: Final = 10_000_000
PAGE_SIZE: Final = 10_000
FEW: Final = ["distinct_id", "email", "age", "balance", "register_time"]


def memory_mib(pid: int) -> tuple[float, float]:
    """VmRSS and VmHWM of ``pid`` in MiB."""
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    fields = dict(line.split(":", 1) for line in lines if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def stream(base_url: str, properties: list[str] | None) -> tuple[int, int, float]:
    """Rows and bytes received until the proxy's cut, and the seconds it took."""
    body: dict[str, object] = {"cohortCode": COHORT}
    if properties is not None:
        body["properties"] = properties
    started = time.perf_counter()
    response = requests.post(
        base_url + "/uba/api/cohort/users/export", json=body, headers=HEADERS, stream=True
    )
    response.raise_for_status()
    rows = received = 0
    try:
        for chunk in response.iter_content(1 << 20):
            rows += chunk.count(b"\n")
            received += len(chunk)
    except requests.exceptions.ChunkedEncodingError:
        pass  # the cut: the connection drops after the last whole line
    return rows, received, time.perf_counter() - started


def pages(base_url: str, count: int, properties: list[str] | None) -> tuple[int, float]:
    """``count`` pages spread evenly over the cohort; rows received and seconds."""
    last_page = USERS // PAGE_SIZE
    numbers = [1 + (last_page - 1) * k // max(count - 1, 1) for k in range(count)]
    rows, started = 0, time.perf_counter()
    with requests.Session() as session:
        for number in numbers:
            body: dict[str, object] = {"cohortCode": COHORT, "page": number, "pageSize": PAGE_SIZE}
            if properties is not None:
                body["properties"] = properties
            answer = session.post(base_url + "/uba/api/cohort/users", json=body, headers=HEADERS)
            answer.raise_for_status()
            rows += answer.json()["size"]
    return rows, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000, help="the proxy cut, in rows")
    parser.add_argument("--pages", type=int, default=40, help="pages of 10,000 to read")
    parser.add_argument("--properties", choices=("all", "few"), default="all")
    args = parser.parse_args()
    properties = None if args.properties == "all" else FEW
    options = [f"--proxy-cut={COHORT}:rows={args.rows},ending=drop"]
    with EmulatorProcess(credentials=CREDENTIALS, options=options) as emulator:
        assert emulator.process is not None
        pid = emulator.process.pid
        print(f"{COHORT}: {USERS:,} users, properties: {args.properties}")
        print(f"  idle emulator: VmRSS {memory_mib(pid)[0]:.0f} MiB")
        rows, received, seconds = stream(emulator.base_url, properties)
        rss, peak = memory_mib(pid)
        print(
            f"  stream to the cut: {rows:,} rows, {received / 2**20:.0f} MiB in {seconds:.1f} s "
            f"({rows / seconds:,.0f} rows/s, {received / 2**20 / seconds:.1f} MiB/s); "
            f"emulator VmRSS {rss:.0f} MiB, peak {peak:.0f} MiB"
        )
        rows, seconds = pages(emulator.base_url, args.pages, properties)
        rss, peak = memory_mib(pid)
        print(
            f"  {args.pages} pages of {PAGE_SIZE:,} across the cohort: {rows:,} rows in "
            f"{seconds:.1f} s ({rows / seconds:,.0f} rows/s); "
            f"emulator VmRSS {rss:.0f} MiB, peak {peak:.0f} MiB"
        )


if __name__ == "__main__":
    main()
